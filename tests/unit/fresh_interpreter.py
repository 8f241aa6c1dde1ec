"""Run code in a fresh interpreter (what a Lambda cold start sees: nothing imported yet) and read its answer."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def answer_of(code: str, env: Mapping[str, str] | None = None) -> Any:
    """The JSON `code` prints last, run from the repository with only a Lambda-like environment (and `env`)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={"AWS_DEFAULT_REGION": "us-east-1", "GPUPILOT_TABLE": "t", "PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
