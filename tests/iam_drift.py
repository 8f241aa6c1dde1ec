"""The IAM drift check: every AWS call a function makes in the tests is authorized by its role in the
synthesized template, no grant allows more than its calls need, and (with --iam-drift=strict, as `make test`
runs it) every grant and every condition is used.

The local cloud and the integration harness run each function's calls through an IAM enforcer
(gpupilot/localcloud/iam/): a call its role does not allow fails at once with AccessDenied, naming the
function, the action and the call site, so the test that made it fails. Every decision is also logged to
GPUPILOT_AWS_CALL_LOG (set here for every worker and every `gpupilot serve` the tests start), with the request
and the policies that decided it; at the end of the session this plugin reads them all and fails the run when
any call was denied or was made by an adapter that does not list its action in IAM_ACTIONS, when a condition
that allowed a call refuses nothing, when a call an adapter holds to a condition key (IAM_CONDITIONS) is still
allowed presenting another value of it, when a grant reaches beyond its calls (tests/iam_proofs.py); and, in
strict mode, when a grant or a resource pattern of it no test used is not documented as required by AWS
(`Grant.required_by`), when a condition of a deployed policy was proven by no call, or a grant on `*` is of an
action the Service Authorization Reference gives resource types (stacks/iam_reference.py) without a reason
that says why.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from gpupilot.localcloud.iam import CALL_LOG_ENV
from tests import iam_proofs

# Grants the Lambda service exercises with a function's role, never a call of the function's own code.
PLATFORM = {
    "logs:CreateLogStream": "the Lambda runtime writes the function's logs with its role",
    "logs:PutLogEvents": "the Lambda runtime writes the function's logs with its role",
    "xray:PutTraceSegments": "active tracing: Lambda sends the function's trace segments with its role",
    "xray:PutTelemetryRecords": "active tracing: Lambda sends tracing telemetry with its role",
    "sqs:SendMessage": "the on-failure destination: Lambda sends the failure record with the function's role "
    "(AWS Lambda Developer Guide, 'Adding a destination')",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--iam-drift",
        choices=("calls", "strict"),
        default="calls",
        help="calls: fail on any AWS call a role does not grant; strict: also on grants no test used",
    )


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # workers inherit the controller's log directory through the environment
    directory = Path(tempfile.mkdtemp(prefix="gpupilot-iam-calls-"))
    os.environ[CALL_LOG_ENV] = str(directory)
    config.stash[_DIRECTORY] = directory


_DIRECTORY = pytest.StashKey[Path]()


def decisions(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for log in sorted(directory.glob("*.jsonl")) for line in log.read_text().splitlines()]


def undeclared(recorded: list[dict[str, Any]]) -> list[str]:
    """Calls whose adapter module does not list the action among its IAM_ACTIONS (or made outside an adapter)."""
    import importlib

    problems = set()
    for decision in recorded:
        path = decision["site"].split(":", 1)[0]
        if not path.startswith("shared/adapters/"):
            problems.add(f"{decision['function']}: {decision['action']} called outside an adapter ({decision['site']})")
            continue
        module = importlib.import_module("functions." + path.removesuffix(".py").replace("/", "."))
        if decision["action"] not in getattr(module, "IAM_ACTIONS", ()):
            problems.add(f"{path} needs {decision['action']} but does not list it in its IAM_ACTIONS")
    return sorted(problems)


def declared_grants() -> dict[str, list[Any]]:
    """Each function's grants as stacks/permissions.py declares them (placeholder ARNs)."""
    from stacks.permissions import Arns, Owned, function_grants

    return dict(function_grants(Arns(prefix="gpupilot"), Owned("x", ("x",), "x", "x", "x", "x")))


def documented_grants() -> dict[tuple[str, str], str]:
    """(function, action) -> why AWS requires it of the caller without a call of its own."""
    documented: dict[tuple[str, str], str] = {}
    for function, grants in declared_grants().items():
        for grant in grants:
            for action in grant.actions:
                if grant.required_by:
                    documented[(function, action)] = grant.required_by
    return documented


def granted_actions(template: dict[str, Any]) -> dict[str, set[str]]:
    """Each function's granted IAM actions, from the synthesized template's policies."""
    from gpupilot.localcloud.template import handler_keys, resources_of

    functions = resources_of(template, "AWS::Lambda::Function")
    role_of = {functions[logical]["Role"]["Fn::GetAtt"][0]: key for logical, key in handler_keys(template).items()}
    granted: dict[str, set[str]] = defaultdict(set)
    for policy in resources_of(template, "AWS::IAM::Policy").values():
        for role in policy.get("Roles", []):
            key = role_of.get(role.get("Ref", ""))
            for statement in policy["PolicyDocument"]["Statement"] if key else []:
                actions = statement["Action"]
                granted[key].update(actions if isinstance(actions, list) else [actions])
    return granted


def unused_grants(template: dict[str, Any], used: set[tuple[str, str]]) -> list[str]:
    """Grants no recorded call used and no AWS documentation requires: each one line."""
    documented = documented_grants()
    unused = []
    for function, actions in sorted(granted_actions(template).items()):
        for action in sorted(actions):
            if (function, action) in used or (function, action) in documented or action in PLATFORM:
                continue
            unused.append(f"{function}: {action} is granted but no test's call used it")
    return unused


def _on_everything(statement: dict[str, Any]) -> bool:
    resources = statement.get("Resource")
    return "*" in (resources if isinstance(resources, list) else [resources])


def wildcard_grants(template: dict[str, Any], grants: dict[str, list[Any]] | None = None) -> list[str]:
    """Grants on Resource `*` of an action that supports resource-level permissions (the Service Authorization
    Reference gives it resource types: stacks/iam_reference.py), unless the grant's reason names the action and
    does not claim it has none; and actions on `*` the reference does not list. Each one line."""
    from gpupilot.localcloud.template import handler_keys, resources_of
    from stacks.iam_reference import NotInReference, resource_types

    declared = declared_grants() if grants is None else grants
    functions = resources_of(template, "AWS::Lambda::Function")
    role_of = {functions[logical]["Role"]["Fn::GetAtt"][0]: key for logical, key in handler_keys(template).items()}
    problems = set()
    for policy in resources_of(template, "AWS::IAM::Policy").values():
        for role in policy.get("Roles", []):
            function = role_of.get(role.get("Ref", ""))
            for statement in policy["PolicyDocument"]["Statement"] if function else []:
                if statement.get("Effect") != "Allow" or not _on_everything(statement):
                    continue
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                for action in actions:
                    try:
                        types = resource_types(action)
                    except NotInReference as missing:
                        problems.add(f"{function}: {action} on '*': {missing.args[0]}")
                        continue
                    if types and not _says_why(action, declared.get(function or "", [])):
                        problems.add(
                            f"{function}: {action} is granted on '*' but supports resource-level permissions "
                            f"({', '.join(types)}): scope it, or give the grant a reason that names it and says why"
                        )
    return sorted(problems)


def _says_why(action: str, grants: list[Any]) -> bool:
    """A grant of `action` on `*` whose reason names the action and does not claim it has no resource types."""
    operation = action.split(":", 1)[1]
    return any(
        action in grant.actions
        and "*" in grant.resources
        and operation in grant.reason
        and "no resource types" not in grant.reason
        for grant in grants
    )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workerinput") or _DIRECTORY not in config.stash:
        return
    recorded = decisions(config.stash[_DIRECTORY])
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    problems = sorted(
        {
            f"{d['function']}: {d['action']} on {d['resource']} denied (called at {d['site']})"
            for d in recorded
            if not d["allowed"] and not d.get("expected")
        }
    )
    problems += undeclared(recorded)
    policies = iam_proofs.logged_policies(config.stash[_DIRECTORY])
    calls = iam_proofs.allowed_calls(recorded, policies)
    proven, holding_nothing = iam_proofs.prove_conditions(calls, policies)
    problems += holding_nothing + iam_proofs.unheld_keys(calls, policies) + iam_proofs.wider_than_calls(calls, policies)
    if config.getoption("--iam-drift") == "strict" and exitstatus == 0:
        from gpupilot.localcloud.template import load_template

        template = load_template(synth_if_missing=False)
        used = {(d["function"], d["action"]) for d in recorded if d["allowed"]}
        documented = documented_grants()
        problems += unused_grants(template, used)
        problems += iam_proofs.unused_patterns(
            calls, policies, lambda function, action: (function, action) in documented or action in PLATFORM
        )
        problems += iam_proofs.unproven_conditions(policies, proven)
        problems += wildcard_grants(template)
    if reporter is not None:
        functions = len({d["function"] for d in recorded})
        reporter.write_line(f"IAM drift check: {len(recorded)} authorizations recorded for {functions} functions")
        for problem in problems:
            reporter.write_line(f"IAM drift: {problem}", red=True)
    if problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
