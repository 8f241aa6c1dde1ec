"""The agent as it is published: the same bytes for the same source (its SHA-256 pins it in the user data), the modules
a host runs and no others, written for the host's Python 3.9."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from host_agent import package


def test_the_agent_is_the_same_bytes_each_time_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given two builds of the same source, a year apart (the cache cleared between them)
    package.zipapp.cache_clear()
    first = package.zipapp()
    package.zipapp.cache_clear()
    a_year_later = time.time() + 365 * 86400
    monkeypatch.setattr(time, "time", lambda: a_year_later)
    monkeypatch.setattr(time, "localtime", lambda seconds=None: time.gmtime(a_year_later))
    # Then they are identical, and so is the key the hosts bucket keeps it under
    assert package.zipapp() == first
    assert package.object_key() == f"agent/{package.digest()}.pyz"


def test_the_agent_ships_what_a_host_runs_and_no_test_no_boto3_adapter() -> None:
    names = zipfile.ZipFile(io.BytesIO(package.zipapp())).namelist()
    assert names[0] == "__main__.py"
    assert {Path(n).stem for n in names[1:]} == set(package.SHIPPED)
    assert not [n for n in names if "test" in n or "boto" in n or "ports" in n]


def test_every_module_a_host_runs_parses_as_python_3_9() -> None:
    # The hosts' interpreter is Amazon Linux 2023's python3 (3.9): no syntax of a later Python
    for name in package.SHIPPED:
        ast.parse((package.SOURCE / f"{name}.py").read_text(), feature_version=(3, 9))


def test_the_agent_runs_from_its_zip_application(tmp_path: Path) -> None:
    # Given the published bytes written as a host writes them / When python runs it
    agent = tmp_path / "agent.pyz"
    agent.write_bytes(package.zipapp())
    # Without site-packages (-S), as on a host: a module the zip lacks is not found in this checkout instead
    done = subprocess.run([sys.executable, "-S", str(agent), "--version"], capture_output=True, text=True, timeout=60)
    # Then it answers from its own modules
    assert done.returncode == 0 and "gpupilot host agent" in done.stderr
