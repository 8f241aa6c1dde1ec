"""cdk-nag acknowledgements, each on the construct it concerns and each with its own reason."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

# cdk-nag 3 reports through CDK's validation framework: an id qualified with the pack's namespace is
# matched by CDK against the report and recorded, with its reason, in the validation report.
NAG_NAMESPACE = "AwsSolutions"


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding (e.g. `AwsSolutions-L1`) on scope and its children."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule} on {scope.node.path} needs a reason")
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{NAG_NAMESPACE}::{rule}", reason=reason))


def flatten_cfn_reference(node: Any) -> str:
    """A resolved CloudFormation value as cdk-nag names it in a finding (`<AWS::AccountId>`, `<Id.Arn>`)."""
    if isinstance(node, str):
        return node.replace("${", "<").replace("}", ">")
    if isinstance(node, dict) and "Fn::Join" in node:
        delimiter, items = node["Fn::Join"]
        return str(delimiter).join(flatten_cfn_reference(item) for item in items)
    if isinstance(node, dict) and "Fn::Sub" in node:
        return flatten_cfn_reference(node["Fn::Sub"])
    if isinstance(node, dict) and "Fn::GetAtt" in node:
        resource, attribute = node["Fn::GetAtt"]
        return f"<{flatten_cfn_reference(resource)}.{flatten_cfn_reference(attribute)}>"
    if isinstance(node, dict) and "Ref" in node:
        return f"<{flatten_cfn_reference(node['Ref'])}>"
    return json.dumps(node)


def wildcard_findings(scope: IConstruct, actions: Iterable[str], resources: Iterable[str]) -> list[str]:
    """The AwsSolutions-IAM5 finding ids cdk-nag raises for one policy statement of `scope`'s stack."""
    stack = Stack.of(scope)
    findings = [f"AwsSolutions-IAM5[Action::{action}]" for action in actions if "*" in action]
    flat = (flatten_cfn_reference(stack.resolve(resource)) for resource in resources)
    findings += [f"AwsSolutions-IAM5[Resource::{resource}]" for resource in flat if "*" in resource]
    return findings


class WildcardLedger:
    """Collects why each IAM5 finding of one role is needed, then acknowledges each finding once.

    A role can hit the same finding (e.g. `Resource::*`) for several reasons; acknowledging it twice
    would keep only the last reason, so the reasons are joined.
    """

    def __init__(self, scope: IConstruct) -> None:
        self._scope = scope
        self._reasons: dict[str, list[str]] = {}

    def add(self, actions: Iterable[str], resources: Iterable[str], reason: str) -> None:
        for finding in wildcard_findings(self._scope, actions, resources):
            reasons = self._reasons.setdefault(finding, [])
            if reason not in reasons:
                reasons.append(reason)

    def acknowledge_on(self, scope: IConstruct) -> None:
        for finding, reasons in self._reasons.items():
            acknowledge(scope, finding, " ".join(reasons))
