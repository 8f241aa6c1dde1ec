"""What the IAM drift check proves of each recorded call, against the policies that decided it.

Every call a function makes in the tests is logged with the request the local IAM authorized (its action, resource,
condition keys, the resource's tags) and the policies it was decided by (gpupilot/localcloud/iam/). From them:

- each `Condition` of a statement that allowed a call is proven: the same call, with the condition's key set to a value
  the condition refuses, is denied by the function's policy (a condition another grant makes moot holds nothing);
- each condition key an adapter says its call is held to (`IAM_CONDITIONS` beside its `IAM_ACTIONS`) holds it: the
  same call presenting another value of that key is denied (a grant that lost its condition fails here);
- each grant is no wider than its calls: the call on a resource of the same type outside GPU Pilot's names, or in
  another region or account, is denied, unless AWS assigns that type's names (a grant can only say `*` there);
- (strict) every condition of every policy deployed was proven by some call, and every resource pattern of every
  grant was used: each allowed call credits the narrowest pattern that allowed it, so a pattern wider than another
  that serves the same calls is never credited.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpupilot.localcloud.iam import Request, Statement, authorize, matches

Policies = Mapping[str, Mapping[str, list[Statement]]]  # deployment -> function -> its statements
# Resource types whose names AWS assigns when it creates them (Batch job ids, EC2 instance, launch template and
# capacity reservation ids): a grant can name them only by `*`, and holds them by a condition or a reason instead.
AWS_ASSIGNED_NAMES = {
    ("batch", "job"),
    ("ec2", "instance"),
    ("ec2", "launch-template"),
    ("ec2", "capacity-reservation"),
}
OUTSIDE_NAME = "outside-gpu-pilot"
OUTSIDE_REGION = "xx-outside-1"
OUTSIDE_ACCOUNT = "000000000000"
# An AWS region's name wherever it appears in an ARN (its region part, a role named after a capacity region).
REGION = re.compile(r"\b[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d\b")


@dataclass(frozen=True)
class Call:
    """A call the local IAM allowed: whose, where it was made, the request, and which policies allowed it."""

    function: str
    site: str
    request: Request
    deployment: str


def logged_policies(directory: Path) -> dict[str, dict[str, list[Statement]]]:
    """The policies each deployment's enforcer logged, by their digest."""
    return {
        path.stem.removeprefix("policies-"): {
            function: [Statement.from_json(s) for s in statements]
            for function, statements in json.loads(path.read_text()).items()
        }
        for path in sorted(directory.glob("policies-*.json"))
    }


def allowed_calls(recorded: Iterable[Mapping[str, Any]], policies: Policies) -> list[Call]:
    """The recorded calls that were allowed, with the policies that decided them known."""
    return [
        Call(d["function"], d["site"], Request.from_json(d), d["deployment"])
        for d in recorded
        if d["allowed"] and d.get("deployment") in policies
    ]


def condition_id(function: str, statement: Statement, condition: Any) -> str:
    return f"{function}: {', '.join(statement.actions)} if {condition.describe()}"


def _applying(statements: list[Statement], request: Request) -> list[Statement]:
    return [s for s in statements if s.effect == "Allow" and s.applies(request)]


def prove_conditions(calls: Iterable[Call], policies: Policies) -> tuple[set[str], list[str]]:
    """The conditions proven (each a condition_id), and the calls whose allowing condition holds nothing."""
    proven: set[str] = set()
    problems: set[str] = set()
    for call in calls:
        statements = policies[call.deployment][call.function]
        for statement in _applying(statements, call.request):
            for condition in statement.conditions:
                named = condition_id(call.function, statement, condition)
                refused = condition.refusing(call.request.value(condition.key))
                if refused is None:
                    problems.add(f"{named}: no value of {condition.key} is refused")
                    continue
                if authorize(statements, call.request.with_value(condition.key, refused)) is not None:
                    proven.add(named)
                    continue
                problems.add(
                    f"{named} holds nothing: {call.request.action} on {call.request.resource} is still allowed with "
                    f"{condition.key}={refused} (another grant allows it)"
                )
    return proven, sorted(problems)


def _canonical(key: str) -> str:
    """ec2:ResourceTag/<tag> and aws:ResourceTag/<tag> read the same tag; key names are case-insensitive."""
    lowered = key.lower()
    return "aws:resourcetag/" + lowered.split("/", 1)[1] if lowered.startswith("ec2:resourcetag/") else lowered


def declared_conditions(site: str, action: str) -> tuple[str, ...]:
    """The condition keys the adapter that made a call says it is held to (its IAM_CONDITIONS)."""
    path = site.split(":", 1)[0]
    if not path.startswith("shared/adapters/"):
        return ()
    module = importlib.import_module("functions." + path.removesuffix(".py").replace("/", "."))
    return tuple(getattr(module, "IAM_CONDITIONS", {}).get(action, ()))


def unheld_keys(
    calls: Iterable[Call],
    policies: Policies,
    declared: Callable[[str, str], tuple[str, ...]] = declared_conditions,
) -> list[str]:
    """Calls an adapter holds to a condition key whose role still allows them presenting another value of it."""
    problems: set[str] = set()
    for call in calls:
        statements = policies[call.deployment][call.function]
        for key in declared(call.site, call.request.action):
            conditions = [
                c
                for s in _applying(statements, call.request)
                for c in s.conditions
                if _canonical(c.key) == _canonical(key)
            ]
            given = call.request.value(key)
            refused = conditions[0].refusing(given) if conditions else None
            refused = refused or f"outside-{given or 'gpupilot'}"
            if authorize(statements, call.request.with_value(key, refused)) is None:
                adapter = call.site.split(":", 1)[0]
                problems.add(
                    f"{adapter} holds {call.request.action} to {key}, but {call.function}'s role still allows it on "
                    f"{call.request.resource} with {key}={refused}: no condition of its grant refuses it"
                )
    return sorted(problems)


def neighbours(resource: str) -> list[tuple[str, str]]:
    """Resources a grant of `resource` should not reach, each with what sets it apart: another name of its type
    (unless AWS assigns the type's names), another region, another account."""
    parts = resource.split(":", 5)
    if len(parts) < 6:
        return []
    service, region, account, name = parts[2], parts[3], parts[4], parts[5]
    kind, separator = re.match(r"([^/:]*)([/:]?)", name).groups()  # type: ignore[union-attr]
    found = []
    if separator and (service, kind) not in AWS_ASSIGNED_NAMES:
        found.append((":".join([*parts[:5], f"{kind}{separator}{OUTSIDE_NAME}"]), f"another {kind}'s name"))
    if region:
        found.append((":".join([*parts[:3], OUTSIDE_REGION, *parts[4:]]), "another region"))
    if account:
        found.append((":".join([*parts[:4], OUTSIDE_ACCOUNT, name]), "another account"))
    return found


def wider_than_calls(calls: Iterable[Call], policies: Policies) -> list[str]:
    """Grants that allow a call's neighbour: a resource pattern wider than what the function's calls reach."""
    problems: set[str] = set()
    for call in calls:
        statements = policies[call.deployment][call.function]
        for neighbour, apart in neighbours(call.request.resource):
            moved = Request(call.request.action, neighbour, call.request.context, call.request.tags)
            if authorize(statements, moved) is not None:
                continue
            patterns = sorted({r for s in _applying(statements, moved) for r in s.resources if matches(r, neighbour)})
            problems.add(
                f"{call.function}: {call.request.action} on {', '.join(patterns)} reaches {apart} "
                f"({neighbour}), wider than its calls ({REGION.sub('<region>', call.request.resource)})"
            )
    return sorted(problems)


def unproven_conditions(policies: Policies, proven: set[str]) -> list[str]:
    """Conditions of a deployed policy that no recorded call proved."""
    every = {
        condition_id(function, statement, condition)
        for deployed in policies.values()
        for function, statements in deployed.items()
        for statement in statements
        if statement.effect == "Allow"
        for condition in statement.conditions
    }
    return [
        f"{named}: no call of the tests was allowed by it, so nothing shows it refuses what it should"
        for named in sorted(every - proven)
    ]


def _literal(pattern: str) -> int:
    return len(pattern.replace("*", "").replace("?", ""))


def unused_patterns(
    calls: Iterable[Call], policies: Policies, exempt: Callable[[str, str], bool] = lambda _f, _a: False
) -> list[str]:
    """Grants (function, action, resource pattern: a capacity region's copy is the same pattern) no call used: each
    allowed call credits the narrowest of the patterns that allowed it. `exempt(function, action)`: not asked."""
    granted: set[tuple[str, str, str]] = set()
    for deployed in policies.values():
        for function, statements in deployed.items():
            for statement in statements:
                if statement.effect == "Allow":
                    granted |= {
                        (function, a, REGION.sub("<region>", r)) for a in statement.actions for r in statement.resources
                    }
    used: set[tuple[str, str, str]] = set()
    actions_used: set[tuple[str, str]] = set()
    for call in calls:
        request = call.request
        actions_used.add((call.function, request.action))
        allowing = [
            (action, resource)
            for statement in _applying(policies[call.deployment][call.function], request)
            for action in statement.actions
            if matches(action, request.action, ignore_case=True)
            for resource in statement.resources
            if matches(resource, request.resource)
        ]
        narrowest = max((_literal(resource) for _, resource in allowing), default=0)
        used |= {(call.function, a, REGION.sub("<region>", r)) for a, r in allowing if _literal(r) == narrowest}
    return [
        f"{function}: {action} is granted on {pattern} but no call used that pattern"
        for function, action, pattern in sorted(granted - used)
        if (function, action) in actions_used and not exempt(function, action)
    ]
