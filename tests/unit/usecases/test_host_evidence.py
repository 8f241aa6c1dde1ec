"""The evidence against GPU hosts, kept as Batch's events bring it; a host with failures of two different jobs gets a
sweep at once."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.fleet.batch import BatchJobEvent, BatchJobState
from functions.shared.usecases.hosts.evidence import note_host_faults

HOST = "arn:aws:ecs:us-east-1:123456789012:container-instance/gpupilot-od_Batch_1/4f1c"
QUEUE = "arn:aws:batch:us-east-1:123456789012:job-queue/gpupilot-od-x8664-g4dn-xlarge"


def event(
    batch_job_id: str, *attempts: dict[str, Any], name: str = "gpupilot-0123456789abcdef0123-a1"
) -> BatchJobEvent:
    """A Batch Job State Change whose detail lists the job's attempts, as DescribeJobs gives them."""
    job = {"jobId": batch_job_id, "jobName": name, "jobQueue": QUEUE, "status": "RUNNABLE", "attempts": list(attempts)}
    return BatchJobEvent(at="2026-11-22T09:00:10.000Z", job=BatchJobState.from_batch(job))


def failed_start(host: str = HOST, stopped: int = 1_795_338_000_000) -> dict[str, Any]:
    """An attempt the NVIDIA runtime could not start on `host` (stopped at `stopped`, epoch ms)."""
    reason = "CannotStartContainerError: ... stderr: nvidia-container-cli: initialization error: nvml error"
    return {"container": {"containerInstanceArn": host, "reason": reason}, "statusReason": "Task failed to start",
            "startedAt": stopped - 2000, "stoppedAt": stopped}  # fmt: skip


def test_an_attempt_the_host_failed_is_kept_once_however_often_its_event_comes(ports):
    # Given / When the same event twice (EventBridge is at-least-once, and the sweep replays)
    first = note_host_faults(event("b-1", failed_start()), ports)
    again = note_host_faults(event("b-1", failed_start()), ports)

    # Then one piece of evidence against the host, naming GPU Pilot's job
    assert [f.job_id for f in first] == ["0123456789abcdef0123"] and again == []
    assert len(ports.hosts.kept) == 1


def test_a_jobs_own_failure_is_not_kept(ports):
    # Given an attempt that exited 1 (the user's program)
    own = {"container": {"containerInstanceArn": HOST, "exitCode": 1}, "stoppedAt": 1_795_338_000_000}

    # When / Then
    assert note_host_faults(event("b-1", own), ports) == [] and ports.hosts.kept == {}


def test_a_host_failing_a_second_job_gets_one_sweep_at_once(ports):
    # Given one job the host failed
    note_host_faults(event("b-1", failed_start()), ports)
    assert ports.sweeps.started == []

    # When it fails another job, and then a third
    note_host_faults(event("b-2", failed_start(stopped=1_795_338_005_000), name="nightly"), ports)
    note_host_faults(event("b-3", failed_start(stopped=1_795_338_009_000), name="nightly"), ports)

    # Then one sweep is started (recorded RUNNING, so GET /health?sweep_id= finds it), not one per failure
    [sweep_id] = ports.sweeps.started
    assert ports.health.get_report(sweep_id).status == "RUNNING"


def test_with_quarantine_switched_off_the_evidence_is_kept_and_no_sweep_started(ports):
    # Given a deployment that does not quarantine
    object.__setattr__(ports, "settings", ports.settings.model_copy(update={"quarantine_bad_hosts": False}))

    # When a host fails two jobs
    note_host_faults(event("b-1", failed_start()), ports)
    note_host_faults(event("b-2", failed_start(stopped=1_795_338_005_000)), ports)

    # Then
    assert len(ports.hosts.kept) == 2 and ports.sweeps.started == []
