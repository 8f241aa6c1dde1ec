"""A role's policy as AWS evaluates it: its statements read from a template's policy document, and the decision
within one policy set (an explicit Deny wins, then an Allow)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpupilot.localcloud.iam.conditions import Condition, PolicyError, Request, matches


@dataclass(frozen=True)
class Statement:
    """One statement of a role's policy, its resources resolved to local ARNs."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]
    effect: str = "Allow"
    conditions: tuple[Condition, ...] = ()

    def applies(self, request: Request) -> bool:
        """Action (case-insensitive), resource and every condition match."""
        return (
            any(matches(a, request.action, ignore_case=True) for a in self.actions)
            and any(matches(r, request.resource) for r in self.resources)
            and all(condition.holds(request) for condition in self.conditions)
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "effect": self.effect,
            "actions": list(self.actions),
            "resources": list(self.resources),
            "conditions": [[c.operator, c.key, list(c.values)] for c in self.conditions],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Statement:
        return cls(
            actions=tuple(data["actions"]),
            resources=tuple(data["resources"]),
            effect=data["effect"],
            conditions=tuple(Condition(op, key, tuple(values)) for op, key, values in data["conditions"]),
        )


def authorize(statements: Sequence[Statement], request: Request) -> str | None:
    """AWS's evaluation within one policy set: an explicit Deny wins, then an Allow; None means allowed,
    otherwise why not."""
    if any(s.effect == "Deny" and s.applies(request) for s in statements):
        return "with an explicit deny in its role's policy"
    if any(s.effect == "Allow" and s.applies(request) for s in statements):
        return None
    return "(its role in the synthesized template grants no such permission)"


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements_of(document: Mapping[str, Any], resolve: Callable[[Any], Any]) -> list[Statement]:
    """The statements of a policy document, resources resolved (an unresolvable one matches nothing).
    What the local cloud cannot evaluate as AWS would (NotAction, an unknown condition) is a PolicyError."""
    found = []
    for statement in document.get("Statement", []):
        unsupported = {"NotAction", "NotResource", "NotPrincipal", "Principal"} & set(statement)
        if unsupported or statement.get("Effect") not in ("Allow", "Deny"):
            raise PolicyError(f"statement {statement} uses {sorted(unsupported) or 'an unknown Effect'}")
        conditions = tuple(
            Condition.parse(operator, key, resolve(values))
            for operator, keys in (statement.get("Condition") or {}).items()
            for key, values in keys.items()
        )
        found.append(
            Statement(
                actions=tuple(_listed(statement["Action"])),
                resources=tuple(str(resolve(r)) for r in _listed(statement["Resource"])),
                effect=statement["Effect"],
                conditions=conditions,
            )
        )
    return found
