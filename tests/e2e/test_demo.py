"""`gpupilot demo` (what `make demo` runs) ends with a SUCCEEDED CUDA job and its cost."""

from __future__ import annotations

import subprocess

import pytest

from tests.e2e.conftest import GPUPILOT

pytestmark = pytest.mark.e2e


def test_the_demo_runs_a_cuda_job_to_success_and_shows_its_cost(tmp_path: pytest.TempPathFactory) -> None:
    result = subprocess.run([GPUPILOT, "demo"], capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "listening on http://127.0.0.1:" in result.stdout
    assert "status     SUCCEEDED" in result.stdout
    assert "cost       $" in result.stdout
    assert "GPU type   g4dn.xlarge (T4, on-demand)" in result.stdout
