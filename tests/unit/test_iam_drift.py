"""The IAM drift check's own decisions: what it reads, which calls and grants it flags, and that the end of a
session fails on each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from functions.shared.constants import LAMBDAS_BY_KEY
from gpupilot.localcloud.iam import Request, Statement, statements_of
from stacks.permissions import Grant
from tests import iam_drift
from tests.iam_drift import decisions, undeclared, unused_grants, wildcard_grants
from tests.iam_proofs import (
    Call,
    prove_conditions,
    unheld_keys,
    unproven_conditions,
    unused_patterns,
    wider_than_calls,
)


def decision(action: str, site: str, function: str = "health_sweep", **more: Any) -> dict[str, Any]:
    return {"function": function, "action": action, "resource": "*", "allowed": True, "site": site} | more


def template_granting(key: str, *statements: dict[str, Any]) -> dict[str, Any]:
    """A synthesized template with function `key` and one policy of `statements` on its role."""
    return templates({key: list(statements)})


def templates(granted: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """A synthesized template with a function per key, each with one policy of its statements on its own role."""
    resources: dict[str, Any] = {}
    for key, statements in granted.items():
        role = f"{key}Role"
        resources[f"{key}Fn"] = {
            "Type": "AWS::Lambda::Function",
            "Properties": {"Handler": LAMBDAS_BY_KEY[key].handler, "Role": {"Fn::GetAtt": [role, "Arn"]}},
        }
        resources[f"{key}Policy"] = {
            "Type": "AWS::IAM::Policy",
            "Properties": {"Roles": [{"Ref": role}], "PolicyDocument": {"Statement": statements}},
        }
    return {"Resources": resources}


def on_everything(*actions: str) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": list(actions), "Resource": "*"}


# -- decisions ------------------------------------------------------------------------------------------------
def test_decisions_are_read_from_every_log_of_the_directory(tmp_path: Path) -> None:
    # Given two processes' logs (a worker's and a local cloud's)
    (tmp_path / "calls-1-a.jsonl").write_text(json.dumps(decision("ec2:DescribeTags", "x")) + "\n")
    (tmp_path / "calls-2-b.jsonl").write_text("\n".join(json.dumps(decision(a, "x")) for a in ("a:B", "c:D")) + "\n")
    # Then every line of both is a decision
    assert [d["action"] for d in decisions(tmp_path)] == ["ec2:DescribeTags", "a:B", "c:D"]


# -- undeclared ---------------------------------------------------------------------------------------------
def test_a_call_its_adapter_declares_is_not_flagged() -> None:
    assert undeclared([decision("ec2:TerminateInstances", "shared/adapters/fleet.py:141 in terminate_instances")]) == []


def test_a_call_its_adapter_does_not_declare_is_flagged() -> None:
    problems = undeclared([decision("ec2:RunInstances", "shared/adapters/fleet.py:141 in terminate_instances")])
    assert problems == ["shared/adapters/fleet.py needs ec2:RunInstances but does not list it in its IAM_ACTIONS"]


def test_a_call_made_outside_an_adapter_is_flagged() -> None:
    [problem] = undeclared([decision("batch:ListJobs", "health_sweep/handler.py:12 in handler")])
    assert "batch:ListJobs called outside an adapter" in problem


# -- unused grants ------------------------------------------------------------------------------------------
def test_a_grant_no_call_used_is_flagged_unless_aws_requires_it_or_the_platform_uses_it() -> None:
    # Given health_sweep granted two Batch reads, and submit_job iam:PassRole (which stacks/permissions.py
    # documents as required by AWS) and X-Ray (which the Lambda platform uses)
    template = templates(
        {
            "health_sweep": [on_everything("batch:ListJobs", "batch:DescribeJobs")],
            "submit_job": [on_everything("iam:PassRole", "xray:PutTraceSegments")],
        }
    )
    # When only DescribeJobs was called
    problems = unused_grants(template, used={("health_sweep", "batch:DescribeJobs")})
    # Then only ListJobs is flagged
    assert problems == ["health_sweep: batch:ListJobs is granted but no test's call used it"]


# -- grants on "*" ------------------------------------------------------------------------------------------
def test_an_action_without_resource_types_may_be_granted_on_everything() -> None:
    template = template_granting("diagnose", on_everything("batch:DescribeJobs", "xray:PutTraceSegments"))
    assert wildcard_grants(template, grants={}) == []


def test_an_action_with_resource_types_granted_on_everything_without_a_reason_is_flagged() -> None:
    template = template_granting("diagnose", on_everything("batch:TerminateJob"))
    [problem] = wildcard_grants(template, grants={"diagnose": [Grant(("batch:TerminateJob",), ("*",))]})
    assert problem.startswith("diagnose: batch:TerminateJob is granted on '*' but supports resource-level")
    assert "(job)" in problem


def test_a_reason_that_claims_no_resource_types_does_not_excuse_an_action_that_has_them() -> None:
    template = template_granting("diagnose", on_everything("batch:TerminateJob"))
    claim = "Read-only AWS Batch calls (TerminateJob) have no resource types in the Service Authorization Reference"
    grants = {"diagnose": [Grant(("batch:TerminateJob",), ("*",), reason=claim)]}
    assert len(wildcard_grants(template, grants=grants)) == 1


def test_a_reason_that_names_the_action_and_says_why_excuses_its_grant_on_everything() -> None:
    template = template_granting("diagnose", on_everything("batch:TerminateJob"))
    why = "TerminateJob names jobs by ids Batch assigns to foreign queues the sweep cannot know in advance"
    assert wildcard_grants(template, grants={"diagnose": [Grant(("batch:TerminateJob",), ("*",), reason=why)]}) == []


def test_an_action_the_reference_does_not_list_is_flagged() -> None:
    template = template_granting("diagnose", on_everything("ec2:RunInstances"))
    [problem] = wildcard_grants(template, grants={})
    assert "ec2:RunInstances is not in stacks/iam_reference.py" in problem and "list_amazonec2.html" in problem


def test_a_scoped_grant_is_not_a_grant_on_everything() -> None:
    scoped = {"Effect": "Allow", "Action": "batch:TerminateJob", "Resource": "arn:aws:batch:*:*:job/*"}
    assert wildcard_grants(template_granting("diagnose", scoped), grants={}) == []


# -- the end of the session ---------------------------------------------------------------------------------
class Reporter:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_line(self, line: str, **_: Any) -> None:
        self.lines.append(line)


class Session:
    """What pytest_sessionfinish reads of a session: the controller's config, and the exit status it sets."""

    def __init__(self, directory: Path, mode: str = "calls") -> None:
        self.reporter = Reporter()
        self.exitstatus: int = 0
        self.config = self
        self.stash = pytest.Stash()
        self.stash[iam_drift._DIRECTORY] = directory
        self.pluginmanager = self
        self._mode = mode

    def getoption(self, _name: str) -> str:
        return self._mode

    def get_plugin(self, _name: str) -> Reporter:
        return self.reporter


def logged(directory: Path, *recorded: dict[str, Any]) -> Path:
    (directory / "calls-1-a.jsonl").write_text("".join(json.dumps(d) + "\n" for d in recorded))
    return directory


def test_a_session_whose_calls_were_allowed_and_declared_passes(tmp_path: Path) -> None:
    session = Session(logged(tmp_path, decision("ec2:DescribeTags", "shared/adapters/fleet.py:1 in x")))
    iam_drift.pytest_sessionfinish(session, 0)  # type: ignore[arg-type]
    assert session.exitstatus == 0


def test_a_session_with_a_call_its_adapter_does_not_declare_fails(tmp_path: Path) -> None:
    session = Session(logged(tmp_path, decision("ec2:RunInstances", "shared/adapters/fleet.py:1 in x")))
    iam_drift.pytest_sessionfinish(session, 0)  # type: ignore[arg-type]
    assert session.exitstatus == pytest.ExitCode.TESTS_FAILED
    assert any("does not list it in its IAM_ACTIONS" in line for line in session.reporter.lines)


def test_a_denied_call_fails_the_session_unless_a_test_refused_it_on_purpose(tmp_path: Path) -> None:
    site = "shared/adapters/fleet.py:141 in terminate_instances"
    on_purpose = Session(logged(tmp_path, decision("ec2:TerminateInstances", site, allowed=False, expected=True)))
    iam_drift.pytest_sessionfinish(on_purpose, 0)  # type: ignore[arg-type]
    assert on_purpose.exitstatus == 0
    missing = Session(logged(tmp_path, decision("ec2:TerminateInstances", site, allowed=False)))
    iam_drift.pytest_sessionfinish(missing, 0)  # type: ignore[arg-type]
    assert missing.exitstatus == pytest.ExitCode.TESTS_FAILED


# -- what each recorded call proves (tests/iam_proofs.py) ----------------------------------------------------
TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/gpupilot-jobs"
LAUNCH_TEMPLATES = "arn:aws:ec2:us-east-1:123456789012:launch-template/*"
NEW_TEMPLATE = "arn:aws:ec2:us-east-1:123456789012:launch-template/new"
CREATE_ACTION = {"StringEquals": {"ec2:CreateAction": "CreateLaunchTemplate"}}
RESERVATIONS_SITE = "shared/adapters/reservations.py:101 in launch_template"


def statements(*listed: dict[str, Any]) -> list[Statement]:
    return statements_of({"Statement": list(listed)}, lambda value: value)


def grant(action: str, resource: str | list[str], condition: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource} | ({"Condition": condition} if condition else {})


def tagging(site: str = RESERVATIONS_SITE, function: str = "ensure_queue") -> Call:
    """ensure_queue's ec2:CreateTags of a launch template it creates (tagging at creation: ec2:CreateAction)."""
    request = Request("ec2:CreateTags", NEW_TEMPLATE, {"ec2:CreateAction": "CreateLaunchTemplate"})
    return Call(function, site, request, "d")


def test_a_condition_is_proven_by_a_call_it_allowed_whose_refused_value_is_denied() -> None:
    # Given ensure_queue's tagging, allowed only as part of CreateLaunchTemplate
    policies = {"d": {"ensure_queue": statements(grant("ec2:CreateTags", LAUNCH_TEMPLATES, CREATE_ACTION))}}
    # When its call is checked / Then the condition is proven and nothing is wrong
    proven, problems = prove_conditions([tagging()], policies)
    assert problems == []
    assert proven == {"ensure_queue: ec2:CreateTags if StringEquals ec2:CreateAction ['CreateLaunchTemplate']"}


def test_a_condition_another_grant_makes_moot_is_flagged_as_holding_nothing() -> None:
    # Given the same grant, and another of the same action on the same resources without the condition
    policies = {
        "d": {
            "ensure_queue": statements(
                grant("ec2:CreateTags", LAUNCH_TEMPLATES, CREATE_ACTION), grant("ec2:CreateTags", LAUNCH_TEMPLATES)
            )
        }
    }
    # When / Then: the call presenting another creating action is still allowed
    proven, [problem] = prove_conditions([tagging()], policies)
    assert proven == set()
    assert "holds nothing" in problem and "ec2:CreateAction=outside-CreateLaunchTemplate" in problem


def test_a_deployed_condition_no_call_proved_is_flagged_in_strict_mode() -> None:
    policies = {"d": {"ensure_queue": statements(grant("ec2:CreateTags", LAUNCH_TEMPLATES, CREATE_ACTION))}}
    [problem] = unproven_conditions(policies, proven=set())
    assert problem.startswith("ensure_queue: ec2:CreateTags if StringEquals ec2:CreateAction")


def test_a_call_its_adapter_holds_to_a_key_passes_while_a_condition_on_it_refuses_other_values() -> None:
    # Given the adapter's declaration (ec2:CreateTags held to ec2:CreateAction) and the grant that holds it
    conditioned = {"d": {"ensure_queue": statements(grant("ec2:CreateTags", LAUNCH_TEMPLATES, CREATE_ACTION))}}
    # Then the call is held
    assert unheld_keys([tagging()], conditioned) == []


def test_a_call_its_adapter_holds_to_a_key_is_flagged_once_its_grant_lost_the_condition() -> None:
    # Given the same grant without its condition (as if the condition were removed from stacks/permissions.py)
    unconditioned = {"d": {"ensure_queue": statements(grant("ec2:CreateTags", LAUNCH_TEMPLATES))}}
    # When / Then: the adapter's key no longer holds the call
    [problem] = unheld_keys([tagging()], unconditioned)
    assert problem.startswith("shared/adapters/reservations.py holds ec2:CreateTags to ec2:CreateAction")
    assert "no condition of its grant refuses it" in problem


def test_every_condition_key_an_adapter_declares_is_one_the_local_cloud_presents() -> None:
    # Given the adapters' declarations / Then each key is evaluated by the local IAM (a typo would hold nothing)
    from functions.shared.adapters import batch, fleet, reservations
    from gpupilot.localcloud.iam import Condition

    for module in (batch, fleet, reservations):
        for action, keys in module.IAM_CONDITIONS.items():
            assert action in module.IAM_ACTIONS
            for key in keys:
                Condition.parse("StringEquals", key, "x")


def test_a_grant_on_the_resource_a_call_names_reaches_nothing_beside_it() -> None:
    policies = {"d": {"api": statements(grant("dynamodb:GetItem", TABLE))}}
    call = Call("api", "shared/adapters/job_store.py:1 in x", Request("dynamodb:GetItem", TABLE), "d")
    assert wider_than_calls([call], policies) == []


@pytest.mark.parametrize(
    ("widened", "reaches"),
    [
        ("arn:aws:dynamodb:us-east-1:123456789012:table/*", "another table's name"),
        ("*", "another table's name"),
        ("arn:aws:dynamodb:*:123456789012:table/gpupilot-jobs", "another region"),
        ("arn:aws:dynamodb:us-east-1:*:table/gpupilot-jobs", "another account"),
    ],
)
def test_a_widened_resource_is_flagged_by_what_it_reaches_beyond_the_calls(widened: str, reaches: str) -> None:
    # Given the table's grant widened
    policies = {"d": {"api": statements(grant("dynamodb:GetItem", widened))}}
    call = Call("api", "shared/adapters/job_store.py:1 in x", Request("dynamodb:GetItem", TABLE), "d")
    # When / Then
    problems = wider_than_calls([call], policies)
    assert any(problem.startswith(f"api: dynamodb:GetItem on {widened} reaches {reaches}") for problem in problems)


def test_a_resource_whose_name_aws_assigns_may_be_granted_by_any_name_but_not_in_any_region() -> None:
    jobs = "arn:aws:batch:us-east-1:123456789012:job/*"
    job = "arn:aws:batch:us-east-1:123456789012:job/0f6e"
    call = Call("api", "shared/adapters/batch.py:1 in x", Request("batch:TerminateJob", job), "d")
    assert wider_than_calls([call], {"d": {"api": statements(grant("batch:TerminateJob", jobs))}}) == []
    anywhere = jobs.replace("us-east-1", "*")
    [problem] = wider_than_calls([call], {"d": {"api": statements(grant("batch:TerminateJob", anywhere))}})
    assert "another region" in problem


def test_each_resource_pattern_of_a_grant_must_be_used_and_a_call_credits_only_the_narrowest() -> None:
    # Given api's queries granted on the table, an index, and the table's every index besides
    index = f"{TABLE}/index/gsi1"
    every_index = f"{TABLE}/index/*"
    policies = {"d": {"api": statements(grant("dynamodb:Query", [TABLE, index, every_index]))}}
    # When it queried the table and the one index
    calls = [Call("api", "x", Request("dynamodb:Query", resource), "d") for resource in (TABLE, index)]
    # Then the wider pattern, which no call needed, is flagged
    wider = every_index.replace("us-east-1", "<region>")
    assert unused_patterns(calls, policies) == [
        f"api: dynamodb:Query is granted on {wider} but no call used that pattern"
    ]


def test_a_grants_copy_in_a_capacity_region_is_the_same_pattern() -> None:
    west = "arn:aws:batch:us-west-2:123456789012:job-queue/gpupilot*"
    home = west.replace("us-west-2", "us-east-1")
    policies = {"d": {"ensure_queue": statements(grant("batch:DeleteJobQueue", [home, west]))}}
    call = Call("ensure_queue", "x", Request("batch:DeleteJobQueue", home.replace("*", "-od-1")), "d")
    assert unused_patterns([call], policies) == []


def test_a_session_fails_when_a_call_its_adapter_holds_to_a_key_is_not_held(tmp_path: Path) -> None:
    # Given a logged deployment whose tagging grant lost its condition, and ensure_queue's tagging call
    document = {"ensure_queue": [s.as_json() for s in statements(grant("ec2:CreateTags", LAUNCH_TEMPLATES))]}
    (tmp_path / "policies-d.json").write_text(json.dumps(document))
    call = decision("ec2:CreateTags", RESERVATIONS_SITE, function="ensure_queue", resource=NEW_TEMPLATE,
                    context={"ec2:CreateAction": "CreateLaunchTemplate"}, tags=None, deployment="d")  # fmt: skip
    session = Session(logged(tmp_path, call))
    # When the session ends / Then it fails, saying which key holds nothing
    iam_drift.pytest_sessionfinish(session, 0)  # type: ignore[arg-type]
    assert session.exitstatus == pytest.ExitCode.TESTS_FAILED
    assert any("holds ec2:CreateTags to ec2:CreateAction" in line for line in session.reporter.lines)
