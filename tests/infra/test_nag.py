"""cdk-nag (AwsSolutions and Serverless packs) on the real stack: nothing unacknowledged, every acknowledgement
reasoned.

cdk-nag 3 is a CDK validation plugin: its findings land in the cloud assembly's validation report
(and fail synthesis), not in construct annotations, so the report is what these tests read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match
from cdk_nag import AwsSolutionsChecks

from stacks.nag import NAG_NAMESPACE, SERVERLESS_NAMESPACE
from tests.infra.conftest import Synthesized

ACKNOWLEDGED_RULES = "aws:cdk:acknowledged-rules"


def _nag_report(synthesized: Synthesized, pack: str = NAG_NAMESPACE) -> dict[str, Any]:
    [report] = [r for r in synthesized.report.get("pluginReports", []) if r["pluginName"] == pack]
    return report


def _acknowledgements(synthesized: Synthesized) -> dict[tuple[str, str], str]:
    """(construct path, rule id) -> reason, for every AwsSolutions acknowledgement in the app."""
    found: dict[tuple[str, str], str] = {}
    for construct in synthesized.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type != ACKNOWLEDGED_RULES:
                continue
            for rule_id, reason in dict(entry.data).items():
                if rule_id.startswith(f"{NAG_NAMESPACE}::"):
                    found[(construct.node.path, rule_id)] = reason
    return found


def test_synthesis_passes_the_awssolutions_checks(synthesized: Synthesized) -> None:
    # Given the app synthesized with AwsSolutionsChecks, Then synthesis did not fail
    assert synthesized.synth_error is None, synthesized.synth_error
    # And the report holds no finding that nobody acknowledged, error or warning
    report = _nag_report(synthesized)
    assert report["conclusion"] == "success"
    unacknowledged = [(v["ruleName"], v["severity"]) for v in report["violations"]]
    assert unacknowledged == []


def test_synthesis_passes_the_serverless_checks_with_each_exception_reasoned(synthesized: Synthesized) -> None:
    # Given the app synthesized with cdk-nag's Serverless pack too, Then it found nothing unacknowledged
    assert synthesized.synth_error is None, synthesized.synth_error
    report = _nag_report(synthesized, SERVERLESS_NAMESPACE)
    assert report["conclusion"] == "success" and report["violations"] == []
    # And each of its exceptions sits on its resource with a reason (pinned runtime, DLQs of sync functions...)
    reasons = {
        (construct.node.path, rule): reason
        for construct in synthesized.stack.node.find_all()
        for entry in construct.node.metadata
        if entry.type == ACKNOWLEDGED_RULES
        for rule, reason in dict(entry.data).items()
        if rule.startswith(f"{SERVERLESS_NAMESPACE}::")
    }
    rules = {rule for _, rule in reasons}
    assert {"Serverless::Serverless-LambdaDLQ", "Serverless::Serverless-LambdaLatestVersion"} <= rules
    assert all(len(reason) >= 40 for reason in reasons.values())


def test_no_construct_carries_an_error_annotation(synthesized: Synthesized) -> None:
    if synthesized.synth_error is not None:
        pytest.skip("synthesis failed; test_synthesis_passes_the_awssolutions_checks says why")
    annotations = Annotations.from_stack(synthesized.stack)
    assert annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*")) == []
    assert annotations.find_error("*", Match.any_value()) == []


def test_every_acknowledgement_in_the_template_has_a_reason(synthesized: Synthesized) -> None:
    # Given the cdk_nag audit trail written into each resource's Metadata
    written = [
        (lid, rule)
        for lid, resource in synthesized.resources.items()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]
    assert any(rule["id"].startswith(f"{NAG_NAMESPACE}::") for _, rule in written)
    # Then every acknowledgement there says why, in a sentence rather than a placeholder
    for lid, rule in written:
        assert len(rule.get("reason", "").strip()) >= 40, f"{lid}: {rule}"


def test_every_acknowledgement_matches_a_real_finding_on_its_own_resource(synthesized: Synthesized) -> None:
    # Given every AwsSolutions acknowledgement made in the stack
    made = _acknowledgements(synthesized)
    assert made
    used = {(s["acknowledgedAt"], s["acknowledgedId"]) for s in _nag_report(synthesized)["suppressedViolations"]}
    # Then none is stale (an id nag never raised there), and none is blanket at the stack level
    assert set(made) - used == set()
    stack_path = synthesized.stack.node.path
    assert [rule for path, rule in made if path == stack_path] == []


def test_an_unacknowledged_awssolutions_error_fails_synthesis(tmp_path: Path) -> None:
    # Given an app whose only resource breaks an AwsSolutions rule (a queue that allows plain HTTP)
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Probe")
    sqs.Queue(stack, "PlainQueue", encryption=sqs.QueueEncryption.SQS_MANAGED)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    # When it is synthesized, Then synthesis fails and names the rule to fix or acknowledge
    with pytest.raises(Exception, match="AwsSolutions-SQS4"):
        app.synth()
