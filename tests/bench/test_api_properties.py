"""The API properties bench can fail: a server bug seeded in the API is found.

The same fast profile finds no failure in the API as it is (tests/e2e/test_api_properties.py asserts it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import REPO_ROOT

pytestmark = pytest.mark.bench


def test_a_seeded_server_bug_is_found_by_the_fast_profile(tmp_path: Path) -> None:
    # Given the API with a seeded bug: a job request that fails validation answers 500 instead of 400
    output = tmp_path / "api_properties.json"
    command = [sys.executable, "-m", "bench.api_properties", "--profile", "fast", "--seed-bug", "--output", str(output)]
    subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=600, capture_output=True)
    result = json.loads(output.read_text())
    # Then the bench reports failures where the API as it is has none
    assert result["metrics"]["failures_per_case_fast"]["value"] > 0, result["details"]
    assert "Server error" in result["details"]["fast_output_tail"]
