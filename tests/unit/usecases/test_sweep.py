"""The health sweep: started by the API, run in its own function, reconciling what events missed."""

from __future__ import annotations

import json
import time

import pytest

from functions.shared.domain.core.errors import SweepNotFound
from functions.shared.domain.core.vocabulary import (
    AttemptStatus,
    BatchStatus,
    CapacityType,
    JobStatus,
    MetricName,
    SweepStatus,
    WaitPhase,
)
from functions.shared.domain.jobs.lifecycle import batch_job_name
from functions.shared.domain.jobs.records import AttemptRecord, NextCandidate, Wait
from functions.shared.domain.pools.states import PoolState
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.usecases.health.sweep import health, run_sweep, start_sweep
from tests.unit.usecases.conftest import JOB_ID, REQUEST, submitted

CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested for instance type"


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
    # Given / When
    report = health(None, ports)
    # Then: no findings, and no status of a sweep that never ran
    assert (report.sweep_id, report.status, report.swept_at, report.findings) == (None, None, None, [])


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


def test_a_workflow_whose_resume_was_lost_is_resumed_by_the_sweep(ports):
    # Given a job whose RUNNING event was recorded but whose SendTaskSuccess never reached its parked start wait
    # (throttled past its retries, or the event's invocation failing after its write)
    submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNING", startedAt=1_800_000_000_000)
    ports.jobs.update_attempt(JOB_ID, 1, {"batch_status": BatchStatus.RUNNING, "status": AttemptStatus.RUNNING})
    ports.jobs.store_wait(JOB_ID, WaitPhase.START, Wait(attempt=1, token="tok-start"))

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then it sends the token the record's status satisfies, forgets it, and counts it
    assert [token for token, _ in ports.workflow.sent] == ["tok-start"]
    assert ports.jobs.get_job(JOB_ID).waits == {}
    assert result.summary["reconciled_events"] == 1


def test_a_missed_queue_blocked_verdict_is_seen_by_the_sweep_and_resumes_the_start_wait(ports):
    # Given a job parked waiting to start, RUNNABLE, whose queue-blocked event (insufficient capacity) never came
    submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE")
    run_sweep(None, ports)
    following = NextCandidate(instance_type="g6.xlarge", capacity=CapacityType.ON_DEMAND)
    ports.jobs.store_wait(JOB_ID, WaitPhase.START, Wait(attempt=1, token="tok-start", next_candidate=following))
    ports.batch.set_status(batch_job_id, "RUNNABLE", statusReason=CAPACITY)

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then it saw Batch's reason in the list and resumed the wait with the verdict
    assert result.summary["reconciled_events"] == 1
    ((token, output),) = ports.workflow.sent
    assert token == "tok-start" and json.loads(output)["verdict"] == "INSUFFICIENT_CAPACITY"
    assert ports.jobs.get_job(JOB_ID).attempts[1].status_reason == CAPACITY


def test_a_verdict_the_sweep_resumed_a_wait_with_is_recorded_so_it_resumes_no_later_wait(ports):
    # Given a job parked waiting to start, whose queue-blocked verdict the sweep sees and resumes the wait with
    submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE")
    run_sweep(None, ports)
    following = NextCandidate(instance_type="g6.xlarge", capacity=CapacityType.ON_DEMAND)
    ports.jobs.store_wait(JOB_ID, WaitPhase.START, Wait(attempt=1, token="tok-start", next_candidate=following))
    ports.batch.set_status(batch_job_id, "RUNNABLE", statusReason=CAPACITY)
    run_sweep(None, ports)

    # When the workflow parks on the same attempt again and the sweep runs
    ports.jobs.store_wait(JOB_ID, WaitPhase.START, Wait(attempt=1, token="tok-again", next_candidate=following))
    run_sweep(None, ports)

    # Then the attempt records the verdict that resumed the first wait, and the same words resume no second one
    assert ports.jobs.get_job(JOB_ID).attempts[1].verdict == CAPACITY
    assert [token for token, _ in ports.workflow.sent] == ["tok-start"]


def test_an_invalid_pool_is_a_finding(ports):
    # Given an INVALID GPU Pilot pool
    ports.pools.create_compute_environment({"computeEnvironmentName": "gpupilot-od-x8664-g5-xlarge"})
    ports.pools.make_invalid("gpupilot-od-x8664-g5-xlarge", "CLIENT_ERROR - role gone")

    # When / Then
    result = run_sweep(None, ports)
    assert result.summary["COMPUTE_ENVIRONMENT_INVALID"] == 1
    assert ports.metrics.total(MetricName.INVALID_COMPUTE_ENVIRONMENTS) == 1


def test_an_invalid_pool_with_jobs_stuck_in_it_is_one_finding_naming_the_pool(ports):
    # Given an INVALID pool, and a job stuck in its queue for that reason
    pool(ports)
    ports.pools.make_invalid(POOL, "CLIENT_ERROR - role gone")
    ports.batch.jobs["stuck-1"] = {"jobId": "stuck-1", "jobName": "someone", "jobQueue": POOL, "status": "RUNNABLE",
                                   "statusReason": "ACTION_REQUIRED - CE(s) associated with the job queue are invalid.",
                                   "createdAt": LONG_AGO_MS}  # fmt: skip

    # When
    result = run_sweep(None, ports)

    # Then the pool is named like in every other finding, with its compute environment in the evidence
    [finding] = [f for f in result.findings if f.kind == "COMPUTE_ENVIRONMENT_INVALID"]
    assert (finding.resource, finding.jobs, finding.evidence["jobs_stuck"]) == (POOL, ["stuck-1"], 1)
    assert finding.evidence["compute_environment_arn"].endswith(f":compute-environment/{POOL}")
    assert ports.metrics.total(MetricName.INVALID_COMPUTE_ENVIRONMENTS) == 1


# -- the fleet and its remediation ------------------------------------------------------------------
POOL = "gpupilot-od-x8664-g4dn-xlarge"
CLUSTER = "arn:aws:ecs:us-east-1:123456789012:cluster/OnDemand_Batch_1"
LONG_AGO = "2026-01-01T00:00:00.000Z"
LONG_AGO_MS = 1_767_225_600_000


def pool(ports, **settings_overrides):
    """A VALID pool of g4dn.xlarge with its queue (and the settings overridden)."""
    ports.pools.environments[POOL] = {
        "computeEnvironmentName": POOL,
        "computeEnvironmentArn": f"arn:aws:batch:us-east-1:123456789012:compute-environment/{POOL}",
        "status": "VALID",
        "ecsClusterArn": CLUSTER,
        "computeResources": {"type": "EC2", "instanceTypes": ["g4dn.xlarge"], "maxvCpus": 256},
    }
    ports.pools.queues[POOL] = {"jobQueueName": POOL, "status": "VALID"}
    if settings_overrides:
        object.__setattr__(ports, "settings", ports.settings.model_copy(update=settings_overrides))
    return ports


def test_instances_that_never_registered_are_a_finding_terminated_and_their_offering_remembered(ports):
    # Given a pool instance running for months that never joined its cluster
    pool(ports)
    ports.fleet.launch(POOL, "i-never", launched_at=LONG_AGO)

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then it is named, terminated, its offering skipped by new selections, and counted for the pool
    [finding] = [f for f in result.findings if f.kind == "ECS_AGENT_NOT_REGISTERED"]
    assert (finding.resource, finding.instances) == (POOL, ["i-never"])
    assert "terminated 1 instance that never registered" in finding.action
    assert ports.fleet.terminated == ["i-never"]
    assert "on-demand:us-east-1:g4dn.xlarge:us-east-1a" in ports.offerings.unavailable_offerings()
    assert ports.metrics.total(MetricName.UNREGISTERED_INSTANCES) == 1
    assert ports.metrics.by_pool[(MetricName.UNREGISTERED_INSTANCES, POOL)] == 1


def test_with_remediation_switched_off_the_sweep_only_reports(ports):
    # Given the same instance, and a deployment that does not let the sweep terminate instances
    pool(ports, terminate_unregistered=False)
    ports.fleet.launch(POOL, "i-never", launched_at=LONG_AGO)

    # When / Then
    [finding] = [f for f in run_sweep(None, ports).findings if f.kind == "ECS_AGENT_NOT_REGISTERED"]
    assert ports.fleet.terminated == [] and "terminated" not in (finding.action or "")


def test_a_disconnected_agent_is_deregistered_and_gpu_less_instances_are_reported(ports):
    # Given one instance whose agent disconnected and one registered without its GPU
    pool(ports)
    ports.fleet.launch(POOL, "i-gone", launched_at=LONG_AGO)
    ports.fleet.register(CLUSTER, "i-gone", connected=False)
    ports.fleet.launch(POOL, "i-nogpu", launched_at=LONG_AGO)
    ports.fleet.register(CLUSTER, "i-nogpu", gpus=0)

    # When
    result = run_sweep(None, ports)

    # Then
    kinds = {f.kind: f for f in result.findings}
    assert kinds["AGENT_DISCONNECTED"].instances == ["i-gone"]
    assert ports.fleet.deregistered == ["arn:aws:ecs:us-east-1:123456789012:container-instance/i-gone"]
    assert "i-gone" in ports.fleet.terminated and "terminated 1 deregistered" in kinds["AGENT_DISCONNECTED"].action
    assert kinds["GPU_NOT_REGISTERED"].instances == ["i-nogpu"]
    assert ports.metrics.total(MetricName.GPU_LESS_INSTANCES) == 1
    assert ports.metrics.total(MetricName.DISCONNECTED_AGENTS) == 1


def test_a_job_someone_else_submitted_into_a_gpupilot_queue_is_swept_and_cancelled_past_the_hard_limit(ports):
    # Given a foreign job RUNNABLE for months for lack of capacity
    pool(ports)
    reason = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - none"
    ports.batch.jobs["foreign-1"] = {
        "jobId": "foreign-1",
        "jobName": "someone",
        "jobQueue": POOL,
        "status": "RUNNABLE",
        "statusReason": reason,
        "createdAt": LONG_AGO_MS,
    }

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then it is a finding of its pool, and it was cancelled with the diagnosis as Batch's reason
    [finding] = [f for f in result.findings if f.jobs]
    assert (finding.kind, finding.resource, finding.jobs) == ("INSUFFICIENT_CAPACITY", POOL, ["foreign-1"])
    assert finding.evidence["foreign_jobs"] == 1
    assert "cancelled 1 job RUNNABLE" in finding.action
    assert ports.batch.terminated == [("foreign-1", "GPU Pilot: RUNNABLE past 1440 minutes: INSUFFICIENT_CAPACITY")]
    assert ports.metrics.total(MetricName.STUCK_JOBS) == 1


def test_a_record_whose_batch_job_vanished_is_failed_and_its_workflow_stopped(ports):
    # Given a running job whose Batch job Batch no longer knows
    submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.jobs.set_execution_arn(JOB_ID, "arn:aws:states:us-east-1:123456789012:execution:GpuJob:x")
    del ports.batch.jobs[batch_job_id]

    # When
    result = run_sweep(None, ports)

    # Then
    record = ports.jobs.get_job(JOB_ID)
    assert record.status == JobStatus.FAILED and batch_job_id in record.error
    assert ports.workflow.stopped == ["arn:aws:states:us-east-1:123456789012:execution:GpuJob:x"]
    assert result.summary["vanished_jobs"] == 1


def test_the_sweep_lists_each_queue_by_status_and_never_describes_a_listed_job(ports):
    # Given a RUNNABLE GPU Pilot job, listed by Batch
    submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE")
    queue = ports.batch.jobs[batch_job_id]["jobQueue"]
    ports.pools.queues[queue] = {"jobQueueName": queue, "status": "VALID"}
    described: list[list[str]] = []
    original = ports.batch.describe_jobs
    ports.batch.describe_jobs = lambda ids: described.append(ids) or original(ids)  # type: ignore[method-assign]

    # When / Then
    run_sweep(None, ports)
    assert sorted(ports.batch.listed) == [(queue, "RUNNABLE"), (queue, "RUNNING"), (queue, "STARTING")]
    assert described == []


def test_a_sweep_that_fails_is_recorded_failed_with_its_error_and_raised(ports):
    # Given a sweep started by the API, and Batch failing under it
    started = start_sweep(ports)

    def refuse(prefix):
        raise RuntimeError("Batch is down")

    ports.pools.compute_environments = refuse  # type: ignore[method-assign]

    # When / Then: the error reaches Lambda (retries, on-failure queue), and whoever waits sees it
    with pytest.raises(RuntimeError):
        run_sweep(started.sweep_id, ports)
    failed = health(started.sweep_id, ports)
    assert (failed.status, failed.error) == (SweepStatus.FAILED, "RuntimeError: Batch is down")
    assert health(None, ports).swept_at is None


# -- pools: failing, disabled, idle ------------------------------------------------------------------
def test_a_pool_whose_instances_keep_failing_to_register_has_its_queue_disabled_once(ports):
    # Given a pool whose instances never join ECS, sweep after sweep (each replaced after termination)
    pool(ports)
    ports.fleet.launch(POOL, "i-never-1", launched_at=LONG_AGO)
    first = run_sweep(None, ports)
    ports.fleet.launch(POOL, "i-never-2", launched_at=LONG_AGO)

    # When the next sweep finds it again
    second = run_sweep(None, ports)

    # Then the first sweep only terminated; the second disabled the pool's queue and says so
    assert "disabled" not in next(f for f in first.findings if f.kind == "ECS_AGENT_NOT_REGISTERED").action
    failing = next(f for f in second.findings if f.kind == "ECS_AGENT_NOT_REGISTERED")
    assert f"disabled job queue {POOL}: 2 sweeps in a row" in failing.action
    assert ports.pools.queues[POOL]["state"] == "DISABLED"
    [disabled] = [f for f in second.findings if f.kind == "POOL_DISABLED"]
    assert disabled.resource == POOL and disabled.evidence["disabled_by_sweep_at"] == second.swept_at
    assert ports.metrics.total(MetricName.DISABLED_POOLS) == 1

    # And a later sweep keeps reporting the disabled pool without disabling it again
    ports.fleet.launch(POOL, "i-never-3", launched_at=LONG_AGO)
    third = run_sweep(None, ports)
    assert "disabled" not in next(f for f in third.findings if f.kind == "ECS_AGENT_NOT_REGISTERED").action
    assert [f.kind for f in third.findings if f.kind == "POOL_DISABLED"] == ["POOL_DISABLED"]


def test_with_disabling_switched_off_a_failing_pool_stays_enabled(ports):
    pool(ports, disable_pool_after_failures=0)
    for instance in ("i-never-1", "i-never-2", "i-never-3"):
        ports.fleet.launch(POOL, instance, launched_at=LONG_AGO)
        run_sweep(None, ports)
    assert ports.pools.queues[POOL].get("state") != "DISABLED"


def test_an_idle_pool_is_reported_and_its_state_written_only_when_it_changes(ports):
    # Given a pool with no job and no instance
    pool(ports)
    saved: list[str] = []
    original = ports.pool_states.save_pool_state
    ports.pool_states.save_pool_state = lambda s: saved.append(s.pool) or original(s)  # type: ignore[method-assign]

    # When two sweeps run
    first = run_sweep(None, ports)
    second = run_sweep(None, ports)

    # Then both report it idle since the first, as information; only the first wrote its state
    [idle] = [f for f in second.findings if f.kind == "IDLE_POOL"]
    assert (idle.resource, idle.severity, idle.evidence["idle_since"]) == (POOL, "info", first.swept_at)
    assert saved == [POOL]
    assert ports.metrics.total(MetricName.IDLE_POOLS) == 2


def test_instances_alive_in_a_pool_idle_past_the_grace_period_are_a_warning_and_counted(ports):
    # Given a pool idle for an hour with a registered, healthy instance Batch has not scaled in
    pool(ports, idle_grace_seconds=1800)
    ports.fleet.launch(POOL, "i-idle", launched_at=LONG_AGO)
    ports.fleet.register(CLUSTER, "i-idle")
    ports.pool_states.states[POOL] = PoolState(pool=POOL, idle_since="2026-11-01T00:00:00.000Z", version=1)

    # When
    result = run_sweep(None, ports)

    # Then
    [idle] = [f for f in result.findings if f.kind == "IDLE_POOL"]
    assert (idle.severity, idle.instances) == ("warning", ["i-idle"])
    assert ports.metrics.by_pool[(MetricName.IDLE_INSTANCES, POOL)] == 1


def test_a_pool_with_a_live_job_is_not_idle(ports):
    # Given a pool whose queue holds a RUNNING job
    pool(ports)
    ports.pool_states.states[POOL] = PoolState(pool=POOL, idle_since="2026-11-01T00:00:00.000Z", version=1)
    ports.batch.jobs["busy-1"] = {"jobId": "busy-1", "jobName": "b", "jobQueue": POOL, "status": "RUNNING"}

    # When / Then: no idle finding, and the pool's memory forgets it was idle
    result = run_sweep(None, ports)
    assert not [f for f in result.findings if f.kind == "IDLE_POOL"]
    assert ports.pool_states.states[POOL].idle_since is None


def test_instances_that_never_registered_are_waste_in_the_costs_restated_not_doubled_by_later_sweeps(ports):
    from functions.shared.usecases.cost.report import cost_report

    # Given an instance that never joined its cluster, kept (remediation off) across two sweeps
    pool(ports, terminate_unregistered=False)
    ports.fleet.launch(POOL, "i-never", launched_at="2026-11-20T00:00:00.000Z")
    run_sweep(None, ports)
    first = ports.metrics.total(MetricName.WASTE_USD)
    run_sweep(None, ports)

    # Then the waste is the instance's life at its price, counted once, and /costs shows it by reason and pool
    [entry] = ports.waste.entries.values()
    assert entry.reason == "never_registered" and entry.usd > 0 and first > 0
    # (the metric's two emissions add as floats; the ledger and /costs are exact)
    assert ports.metrics.total(MetricName.WASTE_USD) == pytest.approx(entry.usd, abs=1e-9)
    report = cost_report("2026-11-20", "2026-11-20", ports)
    assert report.waste.usd == entry.usd
    assert report.waste.by_reason == {"never_registered": entry.usd} and report.waste.by_pool == {POOL: entry.usd}


def test_an_instance_whose_agent_disconnected_is_reported_and_charged_under_that_reason_only(ports):
    # Given an instance that registered, then lost its agent
    pool(ports)
    ports.fleet.launch(POOL, "i-gone", launched_at="2026-11-20T00:00:00.000Z")
    ports.fleet.register(CLUSTER, "i-gone", connected=False)

    # When a sweep runs, then two more
    [finding] = [f for f in run_sweep(None, ports).findings if f.kind == "AGENT_DISCONNECTED"]
    terminated = list(ports.fleet.terminated)
    later = [run_sweep(None, ports) for _ in range(2)]

    # Then the first deregisters and terminates it, and no later sweep takes it for one that never registered
    assert finding.instances == ["i-gone"] and terminated == ["i-gone"]
    assert not [f for s in later for f in s.findings if "i-gone" in f.instances]
    assert {reason for (_, _, reason) in ports.waste.entries} == {"agent_disconnected"}


def test_an_instance_seen_disconnected_then_unregistered_is_waste_once(ports, monkeypatch):
    # Given an instance the sweep keeps (remediation off), seen with its agent disconnected
    pool(ports, terminate_unregistered=False, deregister_disconnected=False)
    ports.fleet.launch(POOL, "i-gone", launched_at="2026-11-23T00:00:00.000Z")
    ports.fleet.register(CLUSTER, "i-gone", connected=False)
    monkeypatch.setattr("functions.shared.usecases.health.sweep.now_iso", lambda: "2026-11-23T01:00:00.000Z")
    run_sweep(None, ports)
    # When its container instance is deregistered (by an operator) and a sweep ten minutes later sees it unregistered
    ports.fleet.by_cluster[CLUSTER] = []
    monkeypatch.setattr("functions.shared.usecases.health.sweep.now_iso", lambda: "2026-11-23T01:10:00.000Z")
    second = run_sweep(None, ports)

    # Then its life is charged once: the first hour as disconnected, the ten minutes since as never registered
    assert "ECS_AGENT_NOT_REGISTERED" in [f.kind for f in second.findings if "i-gone" in f.instances]
    seconds = {reason: entry.seconds for (_, _, reason), entry in ports.waste.entries.items()}
    assert seconds == {"agent_disconnected": 3600, "never_registered": 600}


def test_the_sweep_covers_each_capacity_region_and_its_findings_and_memory_name_the_region():
    from tests.fakes import fake_ports
    from tests.fakes.ports import with_regions

    # Given a deployment with us-west-2, whose pool has an instance that never joined its cluster
    ports = with_regions(fake_ports(), {"us-west-2": {}})
    west = ports.in_region("us-west-2")
    pool(west)
    west.fleet.launch(POOL, "i-never", launched_at=LONG_AGO, zone="us-west-2a")

    # When the sweep runs (from home)
    result = run_sweep(None, ports)

    # Then it swept both regions; the finding is us-west-2's, the instance terminated there, not at home
    assert result.summary["regions"] == 2
    [finding] = [f for f in result.findings if f.kind == "ECS_AGENT_NOT_REGISTERED"]
    assert (finding.resource, finding.region) == (POOL, "us-west-2")
    assert (west.fleet.terminated, ports.fleet.terminated) == (["i-never"], [])
    # And the offering is remembered as us-west-2's, in the one memory selection reads
    assert "on-demand:us-west-2:g4dn.xlarge:us-west-2a" in ports.offerings.unavailable_offerings()


def test_a_capacity_region_that_cannot_be_read_is_a_finding_and_the_others_are_swept():
    from tests.fakes import fake_ports
    from tests.fakes.ports import Unreachable, with_regions

    # Given a deployment whose us-west-2 answers nothing (its Batch, its pools), and a home pool with a lost instance
    ports = with_regions(fake_ports(), {"us-west-2": {"pools": Unreachable(), "batch": Unreachable()}})
    pool(ports)
    ports.fleet.launch(POOL, "i-never", launched_at=LONG_AGO, zone="us-east-1a")

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then home was swept (its finding, its termination), and us-west-2 is one finding with AWS's words
    assert result.status == "COMPLETE" and ports.fleet.terminated == ["i-never"]
    [unreachable] = [f for f in result.findings if f.kind == "REGION_UNREACHABLE"]
    assert (unreachable.resource, unreachable.region, unreachable.severity) == ("us-west-2", "us-west-2", "critical")
    assert unreachable.evidence["error"].startswith("UnrecognizedClientException: The security token")
    assert "ECS_AGENT_NOT_REGISTERED" in [f.kind for f in result.findings]


def test_a_sweep_reads_the_sweep_before_it_only_when_a_reservation_s_idle_hours_need_it(monkeypatch):
    from tests.fakes import fake_ports

    # Given an account holding no reservation, and a health store that refuses to be read
    ports = fake_ports()
    monkeypatch.setattr(ports.health, "latest_report", lambda: pytest.fail("the sweep before was read"))

    # When / Then the sweep completes without reading it (one call less a sweep)
    assert run_sweep(None, ports).status == "COMPLETE"


def test_a_home_region_that_cannot_be_read_fails_the_sweep():
    from tests.fakes import fake_ports
    from tests.fakes.ports import Unreachable, with_regions

    # Given a deployment whose home Batch answers nothing
    ports = with_regions(fake_ports(pools=Unreachable()), {"us-west-2": {}})

    # When / Then the sweep fails (Lambda retries it), recorded FAILED with AWS's words
    with pytest.raises(Exception, match="UnrecognizedClientException"):
        run_sweep("sweep-1", ports)
    assert ports.health.get_report("sweep-1").status == "FAILED"


# -- the records of unfinished jobs -------------------------------------------------------------------
STARTED_MS, STOPPED_MS = 1_800_000_000_000, 1_800_000_600_000


def running_job(ports, job_id: str, **request) -> str:
    """A GPU Pilot job RUNNING on a g4dn.xlarge of POOL, its workflow parked on the finish: its Batch job id."""
    ports.jobs.create_job(job_id, JobRequest.model_validate(REQUEST | request))
    batch_job_id = ports.batch.submit_job(batch_job_name(job_id, 1), POOL, "gpupilot-def", {})
    ports.batch.set_status(batch_job_id, "RUNNING", startedAt=STARTED_MS, createdAt=LONG_AGO_MS)
    attempt = AttemptRecord(instance_type="g4dn.xlarge", capacity=CapacityType.ON_DEMAND, job_queue=POOL)
    ports.jobs.put_attempt(job_id, 1, attempt.model_copy(update={"batch_job_id": batch_job_id}))
    ports.jobs.update_attempt(job_id, 1, {"batch_status": BatchStatus.RUNNING, "status": AttemptStatus.RUNNING})
    ports.jobs.advance(job_id, JobStatus.RUNNING, attempt=1)
    ports.jobs.set_execution_arn(job_id, f"arn:aws:states:us-east-1:123456789012:execution:GpuJob:{job_id}")
    ports.jobs.store_wait(job_id, WaitPhase.FINISH, Wait(attempt=1, token=f"tok-{job_id}"))
    return batch_job_id


def store_calls(ports, monkeypatch, *names: str) -> list[str]:
    """The job store's methods the use cases call (not those the fake's own methods call), in order."""
    calls: list[str] = []
    depth = [0]

    def spy(name, method):
        def called(*args, **kwargs):
            if not depth[0]:
                calls.append(name)
            depth[0] += 1
            try:
                return method(*args, **kwargs)
            finally:
                depth[0] -= 1

        return called

    for name in names:
        monkeypatch.setattr(ports.jobs, name, spy(name, getattr(ports.jobs, name)))
    return calls


def test_many_missed_ends_and_vanished_jobs_cost_the_job_store_the_same_few_calls_as_one(ports, monkeypatch):
    # Given six jobs whose Batch jobs ended unnoticed and two whose Batch jobs are gone
    pool(ports)
    ended = [f"ended{n:015d}" for n in range(6)]
    gone = [f"gone{n:016d}" for n in range(2)]
    for job_id in ended:
        ports.batch.set_status(running_job(ports, job_id), "SUCCEEDED", stoppedAt=STOPPED_MS, container={"exitCode": 0})
    for job_id in gone:
        del ports.batch.jobs[running_job(ports, job_id)]
    singles = ("get_job", "update_attempt", "finish", "clear_wait")
    calls = store_calls(ports, monkeypatch, *singles, "get_jobs", "write_many")

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then every end is recorded, priced and its workflow resumed, and every vanished job failed and stopped...
    for job_id in ended:
        attempt = ports.jobs.records[job_id].attempts[1]
        assert (attempt.batch_status, attempt.exit_code, attempt.cost is not None) == (BatchStatus.SUCCEEDED, 0, True)
        assert ports.jobs.records[job_id].waits == {}
    assert sorted(token for token, _ in ports.workflow.sent) == sorted(f"tok-{job_id}" for job_id in ended)
    assert [ports.jobs.records[job_id].status for job_id in gone] == [JobStatus.FAILED] * 2
    assert sorted(ports.workflow.stopped) == sorted(
        f"arn:aws:states:us-east-1:123456789012:execution:GpuJob:{j}" for j in gone
    )
    assert (result.summary["reconciled_events"], result.summary["vanished_jobs"]) == (6, 2)
    # ... in writes of many jobs at once: the ends with the vanished, then the prices, then the spent tokens,
    # and one read of the records written, as for a single job
    assert calls == ["write_many", "get_jobs", "write_many", "write_many"]


def test_a_record_written_before_the_index_held_stuck_after_is_judged_by_its_own_request(ports, monkeypatch):
    # Given a job that may wait 120 minutes, RUNNABLE for an hour, whose record predates stuck_after in the index
    pool(ports)
    batch_job_id = running_job(ports, "patient0000000000000", stuck_after_minutes=120)
    ports.batch.set_status(batch_job_id, "RUNNABLE", createdAt=int(time.time() * 1000) - 3_600_000)
    ports.jobs.update_attempt("patient0000000000000", 1, {"batch_status": BatchStatus.RUNNABLE})
    listed = ports.jobs.active_jobs
    monkeypatch.setattr(
        ports.jobs, "active_jobs", lambda: [job.model_copy(update={"stuck_after_minutes": None}) for job in listed()]
    )

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then the job is not stuck: its request's 120 minutes count, not the default 15
    assert [f for f in result.findings if "patient0000000000000" in f.jobs] == []


def test_pools_whose_stuck_jobs_need_the_vcpu_quota_read_the_account_s_running_instances_once(ports, monkeypatch):
    # Given two on-demand pools without instances, each with a job stuck for lack of room, and their quota known
    for instance_type in ("g4dn.xlarge", "g5.xlarge"):
        name = f"gpupilot-od-x8664-{instance_type.replace('.', '-')}"
        ports.pools.environments[name] = {
            "computeEnvironmentName": name,
            "status": "VALID",
            "ecsClusterArn": f"arn:aws:ecs:us-east-1:123456789012:cluster/{name}",
            "computeResources": {"type": "EC2", "instanceTypes": [instance_type], "maxvCpus": 256},
        }
        ports.pools.queues[name] = {"jobQueueName": name, "status": "VALID"}
        ports.batch.jobs[f"stuck-{name}"] = {"jobId": f"stuck-{name}", "jobName": "someone", "jobQueue": name,
                                             "status": "RUNNABLE", "createdAt": LONG_AGO_MS}  # fmt: skip
    ports.quotas.values["L-DB2E81BA"] = 64
    reads: list[bool] = []
    running = ports.fleet.running_instances
    monkeypatch.setattr(ports.fleet, "running_instances", lambda spot: reads.append(spot) or running(spot))

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then both pools' diagnoses weighed the quota, and what holds it was read once for both
    assert len([f for f in result.findings if f.jobs]) == 2
    assert ports.quotas.asked == ["L-DB2E81BA", "L-DB2E81BA"]
    assert reads == [False]
