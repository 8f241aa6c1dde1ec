"""The health sweep: started by the API, run in its own function, reconciling what events missed."""

from __future__ import annotations

import pytest

from functions.shared.domain.errors import SweepNotFound
from functions.shared.domain.records import Wait
from functions.shared.domain.vocabulary import BatchStatus, JobStatus, MetricName, SweepStatus, WaitPhase
from functions.shared.usecases.sweep import health, run_sweep, start_sweep
from tests.unit.usecases.conftest import JOB_ID, submitted


def test_post_sweep_records_a_running_sweep_and_starts_it_elsewhere(ports):
    # Given / When
    started = start_sweep(ports)

    # Then the sweep runs in the sweep function (asynchronously), and its id reads as RUNNING meanwhile
    assert ports.sweeps.started == [started.sweep_id]
    report = health(started.sweep_id, ports)
    assert (report.status, report.swept_at) == (SweepStatus.RUNNING, None)


def test_a_finished_sweep_is_read_by_its_id_and_as_the_latest(ports):
    # Given a sweep started by the API
    started = start_sweep(ports)

    # When the sweep function runs it
    result = run_sweep(started.sweep_id, ports)

    # Then
    assert health(started.sweep_id, ports) == result
    assert health(None, ports) == result
    assert result.status == SweepStatus.COMPLETE


def test_an_unknown_sweep_id_is_not_found(ports):
    # Given / When / Then
    with pytest.raises(SweepNotFound):
        health("sweep-unknown", ports)


def test_before_any_sweep_health_says_none_has_run(ports):
    # Given / When / Then
    assert health(None, ports).swept_at is None


def test_a_missed_batch_event_is_replayed_and_its_wait_resumed(ports):
    # Given a job parked waiting to start whose RUNNING event never came
    submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.jobs.advance(JOB_ID, JobStatus.RUNNABLE, attempt=1)
    ports.jobs.store_wait(JOB_ID, WaitPhase.START, Wait(attempt=1, token="tok-start"))
    ports.batch.set_status(batch_job_id, "RUNNING", startedAt=1_800_000_000_000)

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then it recorded the status, resumed the workflow, and counted it
    assert result.summary["reconciled_events"] == 1
    assert ports.jobs.get_job(JOB_ID).attempts[1].batch_status == BatchStatus.RUNNING
    assert [token for token, _ in ports.workflow.sent] == ["tok-start"]
    assert ports.metrics.total(MetricName.RECONCILED_EVENTS) == 1


def test_an_invalid_pool_is_a_finding(ports):
    # Given an INVALID GPU Pilot pool
    ports.pools.create_compute_environment({"computeEnvironmentName": "gpupilot-od-x8664-g5-xlarge"})
    ports.pools.make_invalid("gpupilot-od-x8664-g5-xlarge", "CLIENT_ERROR - role gone")

    # When / Then
    result = run_sweep(None, ports)
    assert result.summary["COMPUTE_ENVIRONMENT_INVALID"] == 1
    assert ports.metrics.total(MetricName.INVALID_COMPUTE_ENVIRONMENTS) == 1
