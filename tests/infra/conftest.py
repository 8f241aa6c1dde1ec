"""One synthesis of the real app (with cdk-nag) per test session, shared by every infra test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template

from app import build_app, load_context
from functions.shared.constants import LAMBDAS, STACK_NAME
from stacks.gpu_pilot_stack import GpuPilotStack

VALIDATION_REPORT = "validation-report.json"


@dataclass
class Synthesized:
    """The synthesized stack and what the validation plugins said about it."""

    app: App
    stack: GpuPilotStack
    template: Template
    resources: dict[str, dict[str, Any]]
    outputs: dict[str, Any]
    report: dict[str, Any]
    synth_error: str | None

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {lid: res for lid, res in self.resources.items() if res["Type"] == resource_type}

    def function_ids(self) -> dict[str, str]:
        """LAMBDAS key -> logical id of its function, found by the handler path the spec names."""
        by_handler = {
            res["Properties"]["Handler"]: lid
            for lid, res in self.of_type("AWS::Lambda::Function").items()
            if "Handler" in res["Properties"]
        }
        return {spec.key: by_handler[spec.handler] for spec in LAMBDAS if spec.handler in by_handler}

    def role_statements(self, role_logical_id: str) -> list[dict[str, Any]]:
        """Every statement of the inline policies attached to a role."""
        statements: list[dict[str, Any]] = []
        for policy in self.of_type("AWS::IAM::Policy").values():
            if {"Ref": role_logical_id} in policy["Properties"].get("Roles", []):
                statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
        return statements

    def function_statements(self, key: str) -> list[dict[str, Any]]:
        function = self.resources[self.function_ids()[key]]
        role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
        return self.role_statements(role_id)


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    # Given the app exactly as `python app.py` builds it, writing into a private directory
    # (so parallel workers never wipe each other's Lambda build or cloud assembly)
    root = tmp_path_factory.mktemp("infra")
    outdir = root / "cdk.out"
    app, stack = build_app(load_context(), outdir=outdir, lambda_build_dir=root / "lambda")
    # When it is synthesized once, with the AwsSolutions checks as a validation plugin
    synth_error: str | None = None
    try:
        app.synth()
    except Exception as error:  # a failed validation still leaves the template on disk
        synth_error = str(error)
    if synth_error is None:
        template = Template.from_stack(stack)  # the cached assembly: no second synthesis
    else:
        template = Template.from_json(_read_json(outdir / f"{STACK_NAME}.template.json"))
    raw = template.to_json()
    report_file = outdir / VALIDATION_REPORT
    yield Synthesized(
        app=app,
        stack=stack,
        template=template,
        resources=raw["Resources"],
        outputs=raw.get("Outputs", {}),
        report=_read_json(report_file) if report_file.exists() else {},
        synth_error=synth_error,
    )


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
