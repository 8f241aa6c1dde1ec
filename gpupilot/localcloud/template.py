"""The synthesized stack template, read by the local cloud: resources by type, intrinsics resolved.

Everything the local cloud deploys comes from `cdk.out/GpuPilot.template.json`, so the local and the
deployed shapes cannot drift; a reference the local cloud cannot resolve is an error, not a guess.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from functions.shared import constants as c

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "cdk.out" / f"{c.STACK_NAME}.template.json"


class DeployError(RuntimeError):
    pass


def template_path() -> Path:
    return Path(os.environ.get("GPUPILOT_TEMPLATE", TEMPLATE))


def load_template(synth_if_missing: bool = True) -> dict[str, Any]:
    """The synthesized stack template; synthesizes it (app.py through stacks.synth, needs node) when missing."""
    path = template_path()
    if not path.exists() and synth_if_missing:
        result = subprocess.run(
            [sys.executable, "-m", "stacks.synth"], cwd=REPO_ROOT, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise DeployError(f"could not synthesize the stack: {result.stderr.strip()[-500:]}")
    if not path.exists():
        raise DeployError(f"no synthesized template at {path}: run `make synth`")
    return dict(json.loads(path.read_text()))


# Where the local cloud synthesizes the stacks of a world with capacity regions (one directory per set of regions).
REGION_SYNTH_DIR = REPO_ROOT / ".gpupilot" / "synth"
# What a synthesized set of stacks is made from: newer than the synthesis, it is made again.
STACK_SOURCES = ("app.py", "cdk.json", "stacks", "statemachines", "functions")


def region_stack_name(region: str) -> str:
    return f"{c.REGION_STACK_PREFIX}{region}"


def load_region_templates(
    home: str, regions: list[str], context: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The home stack's template and each capacity region's (`regions`, besides home), as `python app.py`
    synthesizes them with those regions and `context` (the world's deployment context: its teams) in its context, on
    top of the caller's GPUPILOT_CDK_CONTEXT, as app.py takes it (a deployment's switches, say). Without other regions
    or context: the synthesized default stack."""
    if not regions and not context:
        return load_template(), {}
    context = (
        json.loads(os.environ.get("GPUPILOT_CDK_CONTEXT") or "{}")
        | (context or {})
        | {
            "region": home,
            "zones": [f"{home}a", f"{home}b"],
            "regions": [home, *regions],
            # The local cloud maps a template's zones onto the world's, in order, as for the home stack.
            "region_zones": {region: [f"{region}a", f"{region}b"] for region in regions},
        }
    )
    key = hashlib.sha256(json.dumps(context, sort_keys=True).encode()).hexdigest()[:12]
    directory = REGION_SYNTH_DIR / key
    home_file = directory / f"{c.STACK_NAME}.template.json"
    if not home_file.exists() or home_file.stat().st_mtime < _newest_source():
        _synthesize(context, directory)
    templates = {r: json.loads((directory / f"{region_stack_name(r)}.template.json").read_text()) for r in regions}
    return dict(json.loads(home_file.read_text())), templates


def _newest_source() -> float:
    newest = 0.0
    for name in STACK_SOURCES:
        path = REPO_ROOT / name
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.suffix in (".py", ".json")]
        newest = max([newest, *(p.stat().st_mtime for p in files)])
    return newest


def _synthesize(context: dict[str, Any], directory: Path) -> None:
    """`python app.py` with `context`, into a new directory that replaces `directory` whole (another process may be
    reading the old one, or synthesizing the same)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="synth-", dir=directory.parent))
    environment = os.environ | {
        "CDK_OUTDIR": str(staging / "cdk.out"),
        "GPUPILOT_CDK_CONTEXT": json.dumps(context),
        "GPUPILOT_LAMBDA_BUILD_DIR": str(staging / "lambda"),
    }
    result = subprocess.run(
        [sys.executable, "app.py"], cwd=REPO_ROOT, env=environment, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise DeployError(f"could not synthesize the stacks of regions {context['regions']}: {result.stderr[-500:]}")
    retired = directory.with_name(f"{directory.name}.old-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        directory.rename(retired)
    with contextlib.suppress(OSError):  # another process put its (same) synthesis there first
        (staging / "cdk.out").rename(directory)
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(retired, ignore_errors=True)


def resources_of(template: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """logical id -> Properties of every resource of `kind`."""
    return {k: v.get("Properties", {}) for k, v in template["Resources"].items() if v["Type"] == kind}


def handler_keys(template: Mapping[str, Any]) -> dict[str, str]:
    """logical id -> LAMBDAS key, for the functions whose handler is one of ours."""
    by_handler = {spec.handler: spec.key for spec in c.LAMBDAS}
    return {
        logical: by_handler[props["Handler"]]
        for logical, props in resources_of(template, "AWS::Lambda::Function").items()
        if props.get("Handler") in by_handler
    }


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


class Resolver:
    """Resolves Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Base64 and pseudo parameters locally."""

    def __init__(self, region: str, account: str) -> None:
        self.refs: dict[str, Any] = {
            "AWS::Region": region,
            "AWS::AccountId": account,
            "AWS::Partition": partition_of(region),
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": c.STACK_NAME,
        }
        self.attributes: dict[tuple[str, str], Any] = {}

    def add(self, logical: str, ref: Any, **attributes: Any) -> None:
        self.refs[logical] = ref
        for name, value in attributes.items():
            self.attributes[(logical, name)] = value

    def __call__(self, value: Any, where: str = "") -> Any:
        if isinstance(value, list):
            return [self(item, where) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Fn::", "Ref")):
            return {k: self(v, where) for k, v in value.items()}
        ((fn, arg),) = value.items()
        try:
            if fn == "Ref":
                return self.refs[arg]
            if fn == "Fn::GetAtt":
                return self.attributes[(arg[0], arg[1])]
            if fn == "Fn::Join":
                return str(arg[0]).join(str(self(part, where)) for part in arg[1])
            if fn == "Fn::Select":
                return self(arg[1], where)[int(arg[0])]
            if fn == "Fn::Base64":
                return base64.b64encode(str(self(arg, where)).encode()).decode()
        except KeyError as missing:
            raise DeployError(f"{where}: the local cloud has no {missing} to resolve {fn}") from missing
        raise DeployError(f"{where}: the local cloud cannot resolve {fn}")

    def resolvable(self, value: Any) -> bool:
        try:
            self(value)
        except DeployError:
            return False
        return True
