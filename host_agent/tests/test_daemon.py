"""The agent's service, as the user data runs it (`python3 agent.pyz run`), on a stand-in host: a fake instance
metadata service, `docker` and `nvidia-smi` scripts, S3, EventBridge and CloudWatch on moto. A resumed attempt finds its
checkpoint restored, a spot notice signals its program, and what it wrote after is in S3 with the control plane told."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from host_agent import checkpoints, package
from host_agent.tests.conftest import BUCKET, FakeImds

CONTAINER = "c" * 64


def eventually(condition: Callable[[], Any], seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s: {condition}")


def executable(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def stand_in_host(tmp_path: Path) -> dict[str, Any]:
    """A job's container (attempt 2 of job1, checkpointing, on GPU-a) as docker shows it; its `docker kill` is what
    the program does on its signal: it writes its checkpoint and ends (the wrapper marks that)."""
    directory = tmp_path / "checkpoints" / "job1" / "2"
    directory.mkdir(parents=True)
    env = [
        "GPUPILOT_JOB_ID=job1",
        "GPUPILOT_ATTEMPT=2",
        "GPUPILOT_HOME_REGION=us-east-1",
        "GPUPILOT_CHECKPOINT_DIR=/gpupilot/checkpoint",
        f"GPUPILOT_CHECKPOINT_BUCKET={BUCKET}",
        "AWS_BATCH_JOB_ID=batch-2",
        "AWS_BATCH_JQ_NAME=gpupilot-spot-g5",
        "NVIDIA_VISIBLE_DEVICES=GPU-a",
    ]
    inspected = [
        {
            "Id": CONTAINER,
            "Created": "2027-01-15T08:00:00Z",
            "State": {"Running": True},
            "Config": {"Env": env, "Labels": {}},
            "Mounts": [{"Type": "bind", "Source": str(directory), "Destination": "/gpupilot/checkpoint"}],
        }
    ]
    (tmp_path / "inspect.json").write_text(json.dumps(inspected))
    docker = executable(
        tmp_path / "docker",
        f"""echo "$*" >> {tmp_path}/docker-calls
case "$1" in
  ps) echo {CONTAINER} ;;
  inspect) cat {tmp_path}/inspect.json ;;
  kill) printf 'weights at the notice' > {directory}/model.pt; mkdir -p {directory}/.gpupilot
        echo 0 > {directory}/.gpupilot/exited ;;
esac
""",
    )
    nvidia_smi = executable(tmp_path / "nvidia-smi", 'echo "0, GPU-a, 91, 20480"\necho "1, GPU-b, 0, 1"\n')
    return {"directory": directory, "docker": docker, "nvidia_smi": nvidia_smi, "calls": tmp_path / "docker-calls"}


@pytest.fixture
def agent_service(
    tmp_path: Path, stand_in_host: dict[str, Any], imds: FakeImds, moto_endpoint: str, aws: Any
) -> Iterator[subprocess.Popen[str]]:
    # Given the checkpoint attempt 1 left
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "model.pt").write_bytes(b"weights after attempt 1")
    from host_agent.boto_aws import BotoCloud

    meta = {
        "job_id": "job1",
        "attempt": 1,
        "batch_job_id": "batch-1",
        "instance_id": "i-old",
        "saved_at": "2027-01-15T07:59:00.000Z",
        "reason": "interruption",
    }
    checkpoints.upload(
        BotoCloud(lambda service, region: aws.client(service)),
        "us-east-1",
        BUCKET,
        str(earlier),
        None,
        meta,
        "1",
        time.time,
    )
    agent = tmp_path / "agent.pyz"
    agent.write_bytes(package.zipapp())
    env = os.environ | {
        "GPUPILOT_AGENT_IMDS": imds.url,
        "GPUPILOT_AGENT_DOCKER": stand_in_host["docker"],
        "GPUPILOT_AGENT_NVIDIA_SMI": stand_in_host["nvidia_smi"],
        "AWS_ENDPOINT_URL": moto_endpoint,
        "GPUPILOT_AGENT_ROOT": str(tmp_path / "checkpoints"),
        "GPUPILOT_AGENT_STATE": str(tmp_path / "state.json"),
        "GPUPILOT_AGENT_INTERVAL": "0.05",
        "GPUPILOT_AGENT_PACE": "20",
    }
    service = subprocess.Popen([sys.executable, str(agent), "run"], env=env, stderr=subprocess.PIPE, text=True)
    yield service
    service.send_signal(signal.SIGTERM)
    service.wait(timeout=30)


def test_the_service_restores_signals_uploads_and_reports_on_a_stand_in_host(
    agent_service: subprocess.Popen[str], stand_in_host: dict[str, Any], imds: FakeImds, aws: Any, tmp_path: Path
) -> None:
    directory = stand_in_host["directory"]
    # Then attempt 2's directory gets attempt 1's checkpoint, and is marked ready for its program
    eventually(lambda: (directory / ".gpupilot" / "ready").exists())
    assert (directory / "model.pt").read_bytes() == b"weights after attempt 1"
    # And what it saw is in its state file (how an operator checks it on a host)
    state = eventually(lambda: (tmp_path / "state.json").exists() and json.loads((tmp_path / "state.json").read_text()))
    assert state["instance"] == "i-0123456789abcdef0 g5.xlarge us-east-1"
    # When EC2 gives notice
    imds.spot_action = {"action": "terminate", "time": "2027-01-15T08:02:00Z"}
    # Then the program is signalled through docker, and its new checkpoint uploaded, as attempt 2's
    eventually(lambda: "kill --signal=SIGTERM " + CONTAINER in stand_in_host["calls"].read_text())
    s3 = aws.client("s3")

    def manifest() -> dict[str, Any] | None:
        found = json.loads(s3.get_object(Bucket=BUCKET, Key="checkpoints/job1/manifest.json")["Body"].read())
        return found if found["attempt"] == 2 else None

    uploaded = eventually(manifest)
    [saved] = uploaded["files"]
    assert s3.get_object(Bucket=BUCKET, Key=saved["key"])["Body"].read() == b"weights at the notice"
    # And the control plane heard each step, the last with the checkpoint and the GPU's utilisation
    reports = eventually(lambda: [r for r in aws.reports() if r["job_id"] == "job1"] or None)
    while reports[-1]["reason"] != "checkpoint":
        reports += eventually(lambda: aws.reports() or None)
    assert [r["reason"] for r in reports] == ["started", "notice", "checkpoint"]
    assert reports[0]["resumed_from"]["attempt"] == 1
    assert reports[-1]["checkpoint"]["uploaded_at"] == uploaded["uploaded_at"]
    assert reports[-1]["gpu_utilization"]["mean"] == 91.0
