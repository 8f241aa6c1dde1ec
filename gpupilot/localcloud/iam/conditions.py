"""What a policy's conditions are evaluated against: the request AWS authorizes (action, resource, the condition
keys it presents) and IAM's condition operators and wildcards, as AWS evaluates them."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any


class PolicyError(ValueError):
    """A policy the local cloud cannot evaluate the way AWS would: refused loudly, never guessed allowed."""


# Condition keys the local cloud presents with AWS's values: per-call keys (absent from a call that has
# none, as in AWS), and the tags of the resource a call names. Each per-call key is derived from the request as the
# Service Authorization Reference defines it: iam:AWSServiceName "filters access by the AWS service to which this role
# is attached" (IAM's page: CreateServiceLinkedRole, the service principal the role is created for); ec2:CreateAction
# "filters access by the name of a resource-creating API action" (EC2's page: the ec2:CreateTags that tagging at
# creation authorizes names the call that creates, e.g. CreateLaunchTemplate); iam:PassedToService, the service a
# role is passed to (PASSED_TO_SERVICE).
# The host agent's calls present s3:ListBucket's prefix, PutEvents' source and PutMetricData's namespace
# (stacks/hosts.py); a fair-share queue's SubmitJob presents batch:ShareIdentifier.
REQUEST_KEYS = {"iam:passedtoservice", "iam:awsservicename", "ec2:createaction", "s3:prefix", "events:source",
                "cloudwatch:namespace", "batch:shareidentifier"}  # fmt: skip
RESOURCE_TAG_KEYS = ("ec2:resourcetag/", "aws:resourcetag/")
# The tags a creating call asks for (aws:RequestTag/<key>): per-call keys too.
REQUEST_TAG_KEY = "aws:requesttag/"


# IAM's condition operators the local cloud evaluates (each also with ...IfExists): (kind, negated).
OPERATORS = {
    "StringEquals": ("equals", False),
    "StringNotEquals": ("equals", True),
    "StringEqualsIgnoreCase": ("equals-ignore-case", False),
    "StringNotEqualsIgnoreCase": ("equals-ignore-case", True),
    "StringLike": ("like", False),
    "StringNotLike": ("like", True),
    "ArnEquals": ("arn", False),
    "ArnLike": ("arn", False),
    "ArnNotEquals": ("arn", True),
    "ArnNotLike": ("arn", True),
}


@functools.lru_cache(maxsize=4096)
def _wildcard(pattern: str, ignore_case: bool = False) -> re.Pattern[str]:
    """IAM's wildcards: `*` any run of characters, `?` any one; everything else literal (unlike fnmatch's [])."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"(?s:{body})\\Z", re.IGNORECASE if ignore_case else 0)


def matches(pattern: str, value: str, ignore_case: bool = False) -> bool:
    return _wildcard(pattern, ignore_case).match(value) is not None


def arn_matches(pattern: str, value: str) -> bool:
    """ArnLike/ArnEquals: each of the six colon-delimited parts compared on its own, wildcards within a part."""
    wanted, given = pattern.split(":", 5), value.split(":", 5)
    return len(wanted) == len(given) == 6 and all(matches(w, g) for w, g in zip(wanted, given, strict=True))


@dataclass(frozen=True)
class Request:
    """One authorization AWS makes for a call: the action, the resource, and the condition keys it presents
    (`tags`: the resource's tags; None when the local cloud does not know them)."""

    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] | None = None

    def value(self, key: str) -> str | None:
        """The request context's value of a condition key (names are case-insensitive), None when absent."""
        lowered = key.lower()
        for prefix in RESOURCE_TAG_KEYS:
            if lowered.startswith(prefix):
                if self.tags is None:
                    raise PolicyError(f"{key}: the local cloud does not know the tags of {self.resource}")
                tag = lowered.removeprefix(prefix)
                return next((v for k, v in self.tags.items() if k.lower() == tag), None)
        return next((v for k, v in self.context.items() if k.lower() == lowered), None)

    def with_value(self, key: str, value: str) -> Request:
        """The same request with condition key `key` set to `value` (a resource tag key sets the resource's tag)."""
        lowered = key.lower()
        for prefix in RESOURCE_TAG_KEYS:
            if lowered.startswith(prefix):
                tag = key[len(prefix) :]
                kept = {k: v for k, v in (self.tags or {}).items() if k.lower() != tag.lower()}
                return replace(self, tags=kept | {tag: value})
        kept = {k: v for k, v in self.context.items() if k.lower() != lowered}
        return replace(self, context=kept | {key: value})

    def as_json(self) -> dict[str, Any]:
        return {"action": self.action, "resource": self.resource, "context": dict(self.context),
                "tags": None if self.tags is None else dict(self.tags)}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Request:
        return cls(data["action"], data["resource"], dict(data.get("context") or {}), data.get("tags"))


@dataclass(frozen=True)
class Condition:
    """One key of one operator of a statement's Condition block."""

    operator: str
    key: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, operator: str, key: str, values: Any) -> Condition:
        base = operator.removesuffix("IfExists")
        if base not in OPERATORS:
            raise PolicyError(f"condition operator {operator} is not evaluated by the local cloud")
        lowered = key.lower()
        if lowered not in REQUEST_KEYS and not lowered.startswith((*RESOURCE_TAG_KEYS, REQUEST_TAG_KEY)):
            raise PolicyError(f"condition key {key} is not presented by the local cloud")
        listed = tuple(str(v) for v in (values if isinstance(values, list) else [values]))
        if any("${" in v for v in listed):
            raise PolicyError(f"condition {operator} {key}: policy variables are not evaluated by the local cloud")
        return cls(operator, key, listed)

    def holds(self, request: Request) -> bool:
        """AWS's rule: a key absent from the request makes the condition false, or true for a negated operator
        (and true for ...IfExists); the policy's values for one key are alternatives."""
        kind, negated = OPERATORS[self.operator.removesuffix("IfExists")]
        value = request.value(self.key)
        if value is None:
            return negated or self.operator.endswith("IfExists")
        if kind == "arn":
            found = any(arn_matches(v, value) for v in self.values)
        elif kind == "like":
            found = any(matches(v, value) for v in self.values)
        elif kind == "equals-ignore-case":
            found = value.lower() in {v.lower() for v in self.values}
        else:
            found = value in self.values
        return found != negated

    def refusing(self, value: str | None) -> str | None:
        """A value of its key this condition refuses, derived from `value` (the one a call presented): what a call
        outside the grant would present instead; None when no value is refused (e.g. StringLike "*")."""
        _kind, negated = OPERATORS[self.operator.removesuffix("IfExists")]
        if negated:
            candidates = [v.replace("*", "x").replace("?", "x") for v in self.values]
        else:
            given = value or "gpupilot"
            candidates = [f"outside-{given}", f"{given}-outside", "outside", "arn:aws:iam::000000000000:role/outside"]
        probe = Request("probe", "*")
        return next((c for c in candidates if not self.holds(probe.with_value(self.key, c))), None)

    def describe(self) -> str:
        return f"{self.operator} {self.key} {list(self.values)}"
