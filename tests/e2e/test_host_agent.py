"""The host agent on the local cloud's hosts: a checkpointing spot job reclaimed mid-run resumes on its next attempt
from its checkpoint and runs only what was left; a job whose GPUs idle is charged gpu_idle waste and, with an
idle_policy that cancels, is cancelled with GPU_IDLE as its reason, while a busy job's GPUs are never idle."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
SPOT_TYPE = "g6.xlarge"
JOB = {"name": "train", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["python", "train.py"]}
# Simulated seconds 30x faster: the notice's 120 s margin is 4 real seconds, time enough on a busy machine for the
# agent to signal the program and upload its checkpoint before the reclaim.
SPEEDUP = 30
RUNTIME, RECLAIM_AFTER, WRITES_EVERY, NOTICE = 1200, 600, 300, 120  # simulated seconds


def reported(cloud: RunningCloud, job: dict[str, Any]) -> dict[str, Any]:
    """The job once every attempt of it holds its agent's utilisation report: a host's last report travels through
    EventBridge after Batch said the attempt ended, so it may land after the job's end."""
    return cloud.until(
        f"the agent's reports of {job['job_id']}'s attempts",
        lambda: (
            (read := cloud.api.request("GET", f"/jobs/{job['job_id']}").body)
            and all(attempt.get("gpu_utilization") for attempt in read["attempts"])
            and read
        ),
    )


def gpu_idle_usd(cloud: RunningCloud, at_least: float = 0.0, timeout: float = 60) -> float:
    """GET /costs' waste.by_reason.gpu_idle, once it is above `at_least` (or at the deadline: what it is then)."""
    deadline = time.monotonic() + timeout
    while True:
        waste = cloud.api.request("GET", "/costs").body["waste"]
        usd = float((waste.get("by_reason") or {}).get("gpu_idle") or 0.0)
        if usd > at_least or time.monotonic() > deadline:
            return usd
        time.sleep(0.5)


def test_a_checkpointing_spot_job_reclaimed_mid_run_resumes_from_its_checkpoint_and_runs_only_what_was_left(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given spot g6.xlarge reclaimed 600 simulated seconds after launch (the notice two minutes before), and busy
    # 1200-second jobs whose program writes a checkpoint every 300 seconds and when signalled
    cloud = cloud_factory(
        {
            "instance_types": {SPOT_TYPE: {"zones": ["us-east-1a"]}},
            "spot": {SPOT_TYPE: {"interrupt_after_seconds": RECLAIM_AFTER, "hourly_usd": 0.35}},
            "jobs": {"runtime_seconds": RUNTIME, "checkpoint_every_seconds": WRITES_EVERY, "gpu_utilization": 0.9},
        },
        speedup=SPEEDUP,
    )

    # When a spot-first job that checkpoints is submitted through the CLI's API
    request = JOB | {"capacity": "spot-first", "instance_types": [SPOT_TYPE], "checkpoint": True}
    job_id = cloud.api.request("POST", "/jobs", request).body["job_id"]
    # And a busy on-demand job that asks to be warned after a minute of idle GPUs
    warn = {"idle_policy": {"after_minutes": 1, "action": "warn"}}
    busy_id = cloud.api.request("POST", "/jobs", JOB | {"name": "busy"} | warn).body["job_id"]
    cloud.until("the busy job running", lambda: _running(cloud, busy_id))
    swept = json.loads(cloud.cli("--json", "sweep").stdout)
    job = reported(cloud, cloud.wait_for(job_id, {"SUCCEEDED", "FAILED", "CANCELLED"}))

    # Then its spot attempt was told of the reclaim, uploaded its checkpoint, and lost at most a write's interval
    # plus the notice's margin
    spot, on_demand = job["attempts"]
    assert job["status"] == "SUCCEEDED", job
    assert (spot["capacity"], on_demand["capacity"]) == ("spot", "on-demand"), job
    assert spot["interruption_notice_at"] and spot["checkpoint_uploaded_at"], spot
    assert 0 < spot["progress_lost_seconds"] <= WRITES_EVERY + NOTICE, spot
    # And EC2's own events of the reclaim reached job_events through EventBridge: its rebalance recommendation and its
    # interruption warning are on the spot attempt, which its agent placed on that host, and notes of the timeline
    assert spot["host"] and spot["rebalance_recommended_at"], spot
    notes = " ".join(
        e["reason"] for e in job["timeline"] if (e.get("reason") or "").startswith(f"host {spot['host']} ")
    )
    assert "spot interruption warning" in notes and "rebalance recommendation" in notes, job["timeline"]
    # And the next attempt started from that checkpoint and ran only the remainder of the runtime
    assert on_demand["resumed_from"]["attempt"] == 1, on_demand
    assert on_demand["cost"]["runtime_seconds"] <= RUNTIME - (RECLAIM_AFTER - NOTICE - WRITES_EVERY), on_demand
    # And each attempt has its cost; the busy program's GPUs idled at most after it saved and exited on the notice
    # (until the reclaim), and on the attempt that ran to its end only while its checkpoint was restored before the
    # program ran: real seconds of the host's, 30 simulated each, more on a loaded machine (10.8 s seen), so that
    # is bounded by the notice's margin too, not held at 0
    assert spot["cost"]["usd"] > 0 and on_demand["cost"]["usd"] > 0
    assert spot["gpu_utilization"]["idle_seconds"] <= NOTICE, spot
    assert on_demand["gpu_utilization"]["idle_seconds"] <= NOTICE, on_demand
    assert on_demand["gpu_utilization"]["mean"] >= 50, on_demand
    # And the job's cost says what the reclaim took (the progress lost, priced as the spot attempt was, within the same
    # bound) and what resuming saved (the work before the checkpoint, not redone)
    reclaims, share_hourly = job["cost"]["reclaims"], spot["cost"]["hourly_usd"] * spot["cost"]["gpu_share"]
    assert reclaims["count"] == 1 and reclaims["lost_seconds"] == spot["progress_lost_seconds"], reclaims
    assert 0 < reclaims["lost_usd"] <= share_hourly * (WRITES_EVERY + NOTICE) / 3600 + 1e-9, reclaims
    assert reclaims["saved_seconds"] > 0 and reclaims["saved_by_resume_usd"] > 0, reclaims
    # And the busy job was never warned, and the sweep taken while it ran found no idle GPUs
    busy = reported(cloud, cloud.wait_for(busy_id, {"SUCCEEDED", "FAILED", "CANCELLED"}))
    assert busy["status"] == "SUCCEEDED" and busy["attempts"][-1]["warning"] is None, busy
    assert not [f for f in swept["findings"] if f["kind"] == "GPU_IDLE"], swept
    # And the CLI's status says both
    said = cloud.cli("status", job_id).stdout
    assert any(row.startswith("reclaims ") and "resuming from its checkpoint saved" in row for row in said.splitlines())


def test_a_job_whose_gpus_idle_is_charged_gpu_idle_waste_and_with_idle_policy_cancel_is_cancelled_for_it(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given on-demand jobs whose GPUs stay at 2% utilisation for their 1200 simulated seconds
    cloud = cloud_factory({"jobs": {"runtime_seconds": RUNTIME, "gpu_utilization": 0.02}}, speedup=SPEEDUP)

    # When one job asks to be cancelled after 2 idle minutes, one to be warned, and another has no idle_policy
    policy = {"idle_policy": {"after_minutes": 2, "action": "cancel"}}
    cancelled_id = cloud.api.request("POST", "/jobs", JOB | {"name": "idle-cancel"} | policy).body["job_id"]
    warn = {"idle_policy": {"after_minutes": 2, "action": "warn"}}
    warned_id = cloud.api.request("POST", "/jobs", JOB | {"name": "idle-warn"} | warn).body["job_id"]
    idle_id = cloud.api.request("POST", "/jobs", JOB | {"name": "idle"}).body["job_id"]

    # Then the one to be warned runs on with the warning, and a sweep meanwhile names it (alone) with GPU_IDLE: its
    # attempt, idle minutes, utilisation, GPUs and what the idle time cost
    warned = cloud.until("the idle job's warning", lambda: _warned(cloud, warned_id))
    findings = json.loads(cloud.cli("--json", "sweep").stdout)["findings"]
    [idle_finding] = [f for f in findings if f["kind"] == "GPU_IDLE"]
    assert warned["status"] == "RUNNING" and "GPU_IDLE" in warned["attempts"][-1]["warning"], warned
    assert idle_finding["jobs"] == [warned_id], idle_finding
    evidence = idle_finding["evidence"]
    assert (evidence["attempt"], evidence["gpus"], evidence["after_minutes"]) == (1, 1, 2), evidence
    assert evidence["idle_minutes"] >= 2 and evidence["utilization_mean"] < 5 and evidence["idle_usd"] > 0, evidence
    assert cloud.wait_for(warned_id, {"SUCCEEDED", "FAILED", "CANCELLED"})["status"] == "SUCCEEDED"
    cancelled = cloud.wait_for(cancelled_id, {"SUCCEEDED", "FAILED", "CANCELLED"})
    idle = reported(cloud, cloud.wait_for(idle_id, {"SUCCEEDED", "FAILED", "CANCELLED"}))

    # Then the one with the policy was cancelled for its idle GPUs, with that reason in its record
    assert cancelled["status"] == "CANCELLED", cancelled
    assert "GPU_IDLE" in _reasons(cancelled), cancelled
    # And the other ran to its end, its GPUs idle nearly all along, charged as gpu_idle waste
    assert idle["status"] == "SUCCEEDED", idle
    [attempt] = idle["attempts"]
    assert attempt["gpu_utilization"]["mean"] < 5 and attempt["gpu_utilization"]["idle_seconds"] > 0, attempt
    assert gpu_idle_usd(cloud) > 0


def _running(cloud: RunningCloud, job_id: str) -> dict[str, Any] | None:
    job = cloud.api.request("GET", f"/jobs/{job_id}").body
    return job if job["status"] == "RUNNING" else None


def _warned(cloud: RunningCloud, job_id: str) -> dict[str, Any] | None:
    job = cloud.api.request("GET", f"/jobs/{job_id}").body
    return job if job["attempts"] and job["attempts"][-1].get("warning") else None


def _reasons(job: dict[str, Any]) -> str:
    return " ".join(str(v) for v in (job.get("status_reason"), job.get("reason"), job.get("timeline")))
