"""cdk-nag acknowledgements, each on the construct it concerns and each with its own reason."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

# cdk-nag 3 reports through CDK's validation framework: an id qualified with the pack's namespace is
# matched by CDK against the report and recorded, with its reason, in the validation report.
NAG_NAMESPACE = "AwsSolutions"


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding (e.g. `AwsSolutions-L1`) on scope and its children."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule} on {scope.node.path} needs a reason")
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{NAG_NAMESPACE}::{rule}", reason=reason))


def wildcard_findings(actions: Iterable[str], resources: Iterable[str]) -> list[str]:
    """The AwsSolutions-IAM5 finding ids cdk-nag raises for one literal policy statement."""
    findings = [f"AwsSolutions-IAM5[Action::{action}]" for action in actions if "*" in action]
    findings += [f"AwsSolutions-IAM5[Resource::{resource}]" for resource in resources if "*" in resource]
    return findings


class WildcardLedger:
    """Collects why each IAM5 finding of one role is needed, then acknowledges each finding once.

    A role can hit the same finding (e.g. `Resource::*`) for several reasons; acknowledging it twice
    would keep only the last reason, so the reasons are joined.
    """

    def __init__(self) -> None:
        self._reasons: dict[str, list[str]] = {}

    def add(self, actions: Iterable[str], resources: Iterable[str], reason: str) -> None:
        for finding in wildcard_findings(actions, resources):
            reasons = self._reasons.setdefault(finding, [])
            if reason not in reasons:
                reasons.append(reason)

    def acknowledge_on(self, scope: IConstruct) -> None:
        for finding, reasons in self._reasons.items():
            acknowledge(scope, finding, " ".join(reasons))
