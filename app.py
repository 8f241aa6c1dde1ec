#!/usr/bin/env python3
"""Synthesize the GpuPilot stack: `python app.py` works offline with node and no CDK CLI.

Context comes from cdk.json (and cdk.context.json when present) read here, so the stack has an
explicit region and zones and never looks anything up; the account is the caller's (CDK_DEFAULT_ACCOUNT
under the CDK CLI), or the AWS::AccountId pseudo parameter when synthesized offline. cdk-nag's AwsSolutions pack runs as
a CDK validation plugin: an unacknowledged error fails synthesis with a non-zero exit.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from functions.shared.constants import ASL_FILE, REGION_STACK_PREFIX, STACK_NAME
from stacks.capacity_region import CapacityRegionStack
from stacks.functions import stage_lambda_code
from stacks.gpu_pilot_stack import GpuPilotStack
from stacks.settings import DeploySettings

ROOT = Path(__file__).resolve().parent
OUTDIR = ROOT / "cdk.out"
LAMBDA_BUILD_DIR = ROOT / ".build" / "lambda"


def load_context(root: Path = ROOT) -> dict[str, Any]:
    """cdk.json's context, overlaid by cdk.context.json, as the CDK CLI would merge them."""
    context: dict[str, Any] = dict(json.loads((root / "cdk.json").read_text(encoding="utf-8"))["context"])
    cached = root / "cdk.context.json"
    if cached.exists():
        context.update(json.loads(cached.read_text(encoding="utf-8")))
    return context


def build_app(
    context: dict[str, Any],
    *,
    outdir: Path = OUTDIR,
    lambda_build_dir: Path = LAMBDA_BUILD_DIR,
    environ: Mapping[str, str] | None = None,
) -> tuple[App, GpuPilotStack]:
    """The app with the GpuPilot stack (and a stack per other capacity region) and the AwsSolutions checks; nothing
    is synthesized yet.

    The account and region of the caller's credentials come from `environ` (the CDK CLI sets
    CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION); without them the template names no account at all."""
    environ = os.environ if environ is None else environ
    # Under the CDK CLI the output directory is the CLI's to choose.
    app = App(context=context, outdir=None if os.environ.get("CDK_OUTDIR") else str(outdir))
    settings = DeploySettings.from_context(context, environ)
    stack = GpuPilotStack(
        app,
        STACK_NAME,
        settings=settings,
        lambda_code_dir=stage_lambda_code(ROOT / "functions", lambda_build_dir),
        asl_file=ROOT / ASL_FILE,
    )
    # Each other capacity region: a stack of its own, deployed there (`cdk deploy --all`).
    for region, zones in settings.capacity_regions.items():
        CapacityRegionStack(app, f"{REGION_STACK_PREFIX}{region}", settings=settings, region=region, zones=zones)
    # Acknowledgements are also written into the template's resource Metadata, for auditing.
    Validations.of(app).add_plugins(
        AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True),
        ServerlessChecks(app, write_suppressions_to_cloud_formation=True),
    )
    return app, stack


# Context on top of cdk.json's, as JSON, and where to stage the Lambda code: the local cloud synthesizes its world's
# regions so, into CDK_OUTDIR, beside any other synthesis.
CONTEXT_ENV = "GPUPILOT_CDK_CONTEXT"
BUILD_DIR_ENV = "GPUPILOT_LAMBDA_BUILD_DIR"


def main() -> int:
    context = load_context() | json.loads(os.environ.get(CONTEXT_ENV) or "{}")
    app, _ = build_app(context, lambda_build_dir=Path(os.environ.get(BUILD_DIR_ENV) or LAMBDA_BUILD_DIR))
    try:
        app.synth()
    except Exception as error:  # jsii surfaces the validation failure as a generic error
        print(f"synth failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
