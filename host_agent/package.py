"""The agent as GPU Pilot publishes it: a zip application of the modules a host runs (no tests, no boto3 adapter, no
annotations-only ports), byte for byte the same for the same source (stored, at a fixed time, in a fixed order), so
its SHA-256 pins it: the user data names it, the hosts bucket keeps it under `agent/<sha256>.pyz`, and a new agent is
a new launch template version, which is a new pool."""

from __future__ import annotations

import hashlib
import io
import zipfile
from functools import lru_cache
from pathlib import Path

SOURCE = Path(__file__).resolve().parent
SHIPPED = ("__init__", "__main__", "aws", "bootstrap", "checkpoints", "config", "core", "host", "model", "report",
           "tracked", "utilization")  # fmt: skip
ENTRY = "import sys\nfrom host_agent.__main__ import main\nsys.exit(main())\n"
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
AGENT_PREFIX = "agent/"


@lru_cache(maxsize=1)
def zipapp() -> bytes:
    """`python3 agent.pyz run`."""
    files = {"__main__.py": ENTRY} | {f"host_agent/{n}.py": (SOURCE / f"{n}.py").read_text() for n in SHIPPED}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, text in sorted(files.items()):
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.external_attr = 0o644 << 16
            archive.writestr(info, text)
    return buffer.getvalue()


def digest() -> str:
    return hashlib.sha256(zipapp()).hexdigest()


def object_key() -> str:
    """Where the hosts bucket keeps this agent."""
    return f"{AGENT_PREFIX}{digest()}.pyz"


def bootstrap_source() -> str:
    """bootstrap.py as the user data carries it."""
    return (SOURCE / "bootstrap.py").read_text()
