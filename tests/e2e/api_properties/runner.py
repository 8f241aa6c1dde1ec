"""Run schemathesis against a GPU Pilot API (the test's fast profile, the benchmark's longer one)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"
ST = str(Path(sys.executable).parent / "st")
SEED = "20261123"
FAST = ["--max-examples", "5", "--seed", SEED]
LONG = ["--max-examples", "60", "--seed", SEED]
SUMMARY = re.compile(r"(\d+) generated, (?:(\d+) passed|(\d+) found (\d+) unique failures?)")


@dataclass(frozen=True)
class Outcome:
    returncode: int
    generated: int
    failures: int
    output: str


def run_schemathesis(api_url: str, document: Path, profile: list[str]) -> Outcome:
    """Every check schemathesis has but use_after_free (schemathesis.toml says why), and ours (hooks.py); one
    worker (hypothesis is not thread-safe in all its internals)."""
    # The config as the clone names it (cwd is the clone), so a report quoted in a result file names no machine's path.
    config = str(CONFIG.relative_to(REPO))
    command = [ST, "--config-file", config, "run", str(document), "--url", api_url, "--checks", "all",
               "--exclude-checks", "use_after_free", "--workers", "1", *profile]  # fmt: skip
    env = os.environ | {"PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=900, check=False)
    found = SUMMARY.findall(done.stdout)
    generated, _, _, failures = found[-1] if found else ("0", "", "", "0")
    return Outcome(done.returncode, int(generated), int(failures or 0), done.stdout)
