"""The IAM drift check's own decisions: what it reads, which calls and grants it flags, and that the end of a
session fails on each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from functions.shared.constants import LAMBDAS_BY_KEY
from stacks.permissions import Grant
from tests import iam_drift
from tests.iam_drift import decisions, undeclared, unused_grants, wildcard_grants


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
