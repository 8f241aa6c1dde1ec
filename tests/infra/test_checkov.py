"""checkov, an IaC scanner independent of cdk-nag, on the synthesized template: no check fails, and every check it
is told to skip on a resource is one that fails there, with the reason from stacks/nag.py."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stacks.nag import CHECKOV_ACKNOWLEDGMENTS, CHECKOV_METADATA
from tests.infra.conftest import Synthesized

# One scan for the module: `make test` hands each test file to one worker (--dist loadfile), and the fixture is
# session-scoped, so it is not made again when the worker comes back to this module after another one.

# The version whose checks the acknowledgements answer: a newer checkov brings new checks to fix or acknowledge.
CHECKOV_VERSION = "3.3.30"
CHECKOV_VENV = ".venv-checkov"
TEMPLATE = "GpuPilot.template.json"
# The same template without the checkov skips: what checkov finds when told nothing.
UNACKNOWLEDGED = "unacknowledged.template.json"
SCAN_TIMEOUT_SECONDS = 180


@dataclass(frozen=True)
class Finding:
    check_id: str
    resource: str  # Type.LogicalId, as checkov names it
    name: str

    def __str__(self) -> str:
        return f"{self.check_id} {self.resource}: {self.name}"


@dataclass(frozen=True)
class Scan:
    version: str
    failed: dict[str, list[Finding]]  # template file -> its failed checks


def _checkov() -> str | None:
    """checkov's own virtualenv (`make test` makes it: its pins clash with the project's), else the PATH."""
    own = Path(__file__).resolve().parents[2] / CHECKOV_VENV / "bin" / "checkov"
    return str(own) if own.exists() else shutil.which("checkov")


def _without_checkov_skips(template: dict[str, Any]) -> dict[str, Any]:
    bare = copy.deepcopy(template)
    for resource in bare["Resources"].values():
        resource.get("Metadata", {}).pop(CHECKOV_METADATA, None)
    return bare


def _skips(synthesized: Synthesized) -> dict[tuple[str, str], str]:
    """(check id, Type.LogicalId) -> comment, for every checkov skip in the template's Metadata."""
    return {
        (skip["id"], f"{resource['Type']}.{lid}"): skip.get("comment", "")
        for lid, resource in synthesized.resources.items()
        for skip in resource.get("Metadata", {}).get(CHECKOV_METADATA, {}).get("skip", [])
    }


def checkov_or_skip() -> str:
    """checkov's executable; without one the test is skipped, or fails where GPUPILOT_REQUIRE_CHECKOV says it must
    run (`make test` sets it)."""
    executable = _checkov()
    if executable is None:
        message = f"checkov is not installed (`make test` installs checkov=={CHECKOV_VERSION} in {CHECKOV_VENV})"
        if os.environ.get("GPUPILOT_REQUIRE_CHECKOV"):
            pytest.fail(message)
        pytest.skip(message)
    return executable


@pytest.fixture(scope="session")
def scan(synthesized: Synthesized, tmp_path_factory: pytest.TempPathFactory) -> Scan:
    executable = checkov_or_skip()
    # Given the synthesized template, as is and without its checkov skips, scanned in one run
    root = tmp_path_factory.mktemp("checkov")
    template = synthesized.template.to_json()
    (root / TEMPLATE).write_text(json.dumps(template), encoding="utf-8")
    (root / UNACKNOWLEDGED).write_text(json.dumps(_without_checkov_skips(template)), encoding="utf-8")
    command = [executable, "--framework", "cloudformation", "-o", "json", "--quiet", "--skip-download"]
    command += ["-f", TEMPLATE, "-f", UNACKNOWLEDGED]
    # --skip-download: checks run offline, as shipped with this version (no platform mappings or custom policies)
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=SCAN_TIMEOUT_SECONDS, check=False)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        pytest.fail(
            f"checkov printed no JSON report (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
        )
    reports = report if isinstance(report, list) else [report]
    [cloudformation] = [r for r in reports if r.get("check_type") == "cloudformation"]
    failed: dict[str, list[Finding]] = {TEMPLATE: [], UNACKNOWLEDGED: []}
    for result in cloudformation.get("results", {}).get("failed_checks", []):
        finding = Finding(result["check_id"], result["resource"], result["check_name"])
        failed[Path(result["file_path"]).name].append(finding)
    return Scan(version=str(cloudformation["summary"]["checkov_version"]), failed=failed)


def test_checkov_is_the_version_the_acknowledgements_answer(scan: Scan) -> None:
    assert scan.version == CHECKOV_VERSION


def test_no_checkov_check_fails_on_the_template(scan: Scan) -> None:
    # Then nothing fails: each finding is fixed in stacks/ or acknowledged, with its reason, in stacks/nag.py
    failed = sorted(scan.failed[TEMPLATE], key=str)
    assert failed == [], f"{len(failed)} checkov checks failed:\n" + "\n".join(map(str, failed))


def test_every_checkov_skip_answers_a_finding_on_its_own_resource(synthesized: Synthesized, scan: Scan) -> None:
    # Given what checkov finds when told to skip nothing
    findings = {(finding.check_id, finding.resource) for finding in scan.failed[UNACKNOWLEDGED]}
    assert findings, "the template without its skips should have findings: is checkov scanning it at all?"
    # Then every skip in the template is one of them: none is stale, none on a resource the check passes
    stale = sorted(set(_skips(synthesized)) - findings)
    assert stale == [], f"skips that answer no finding: {stale}"


def test_every_checkov_skip_says_why_and_every_reason_is_used(synthesized: Synthesized) -> None:
    skips = _skips(synthesized)
    assert skips
    # Every skip carries its reason, in a sentence rather than a placeholder
    short = {key: comment for key, comment in skips.items() if len(comment.strip()) < 40}
    assert short == {}
    # And every reason of the acknowledgement table is on some resource: none is left over
    written = {(check, comment) for (check, _), comment in skips.items()}
    declared = {(check, reason) for reasons in CHECKOV_ACKNOWLEDGMENTS.values() for check, reason in reasons.items()}
    assert declared - written == set()
