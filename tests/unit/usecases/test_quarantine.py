"""The sweep's bad GPU hosts: quarantined on evidence (drained, terminated, recorded, noted on the jobs they hit),
within the pool's share; past it, one POOL_UNHEALTHY finding and no termination."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from functions.shared.domain.core.clock import iso, now
from functions.shared.domain.core.vocabulary import (
    BatchStatus,
    CapacityType,
    FindingKind,
    JobStatus,
    MetricName,
    Severity,
)
from functions.shared.domain.hosts.evidence import HostFault, Symptom
from functions.shared.domain.hosts.quarantine import QuarantineReason, QuarantineRecord
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.usecases.health.sweep import run_sweep
from functions.shared.usecases.hosts.quarantine import SWEEP_RUNS_AT_MOST_SECONDS
from tests.unit.usecases.conftest import JOB_ID, create_job, submitted
from tests.unit.usecases.test_sweep import CLUSTER, POOL, pool

ARN = "arn:aws:ecs:us-east-1:123456789012:container-instance/{}"
NOW = "2026-11-22T09:00:00.000Z"
PASSED = "gpupilot-boot-check: PASS 1 GPUs visible (g4dn.xlarge): NVIDIA T4\n"
FAILED = "gpupilot-boot-check: FAIL nvidia-smi did not answer within 60 s (g4dn.xlarge)\n"
XID = "NVRM: Xid (PCI:0000:00:1e): 79, pid=0, GPU has fallen off the bus."


def fleet_of(ports: Any, *instances: str, gpus: int = 1, **settings: Any) -> None:
    """A pool whose instances all registered, each with `gpus` GPUs, and passed their boot check."""
    pool(ports, **settings)
    for instance in instances:
        ports.fleet.launch(POOL, instance, launched_at="2026-11-22T08:00:00.000Z")
        ports.fleet.register(CLUSTER, instance, gpus=gpus)
        ports.fleet.consoles[instance] = PASSED


def failed_on(ports: Any, instance: str, batch_job_id: str, job_id: str | None = None, at: str | None = None) -> None:
    """Evidence kept against `instance`: an attempt of `batch_job_id` its GPU failed (as job_events keeps it)."""
    ports.hosts.record_fault(
        HostFault(container_instance_arn=ARN.format(instance), batch_job_id=batch_job_id, attempt=1, job_id=job_id,
                  pool=POOL, symptom=Symptom.GPU_CHECK_EXIT, why="exit code 14: a CUDA error",
                  at=at or _recent()),
        7200,
    )  # fmt: skip


def _recent(seconds: float = 0) -> str:
    return iso(now() + timedelta(seconds=seconds))


def kinds(result: Any, kind: FindingKind) -> list[Any]:
    return [f for f in result.findings if f.kind == kind]


def test_a_host_that_failed_two_different_jobs_is_drained_terminated_recorded_and_reported(ports):
    # Given four hosts, one of which failed two jobs with the CUDA smoke test's CUDA-error code, its kernel saying why
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    ports.fleet.consoles["i-bad"] = PASSED + XID
    failed_on(ports, "i-bad", "b-1")
    failed_on(ports, "i-bad", "b-2")

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then the host is drained, then terminated, and the finding carries its evidence, the jobs hit and the action
    assert ports.fleet.drained == [ARN.format("i-bad")] and ports.fleet.terminated == ["i-bad"]
    [finding] = kinds(result, FindingKind.BAD_GPU_HOST)
    assert (finding.resource, finding.instances, finding.severity) == (POOL, ["i-bad"], Severity.CRITICAL)
    assert finding.evidence["reason"] == "host_failures" and finding.evidence["jobs_hit"] == ["b-1", "b-2"]
    assert finding.evidence["last_failure"] == "exit code 14: a CUDA error"
    assert finding.evidence["kernel_gpu_errors"] == [XID]
    assert "drained" in (finding.action or "") and "terminated i-bad" in (finding.action or "")
    [record] = ports.hosts.records.values()
    assert (record.instance, record.pool, record.jobs_hit) == ("i-bad", POOL, ["b-1", "b-2"])
    assert ports.metrics.by_pool[(MetricName.QUARANTINED_HOSTS, POOL)] == 1


def test_a_host_that_failed_one_job_is_left_alone(ports):
    # Given one host-side failure only (one job's trouble could be the job's own doing)
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    failed_on(ports, "i-bad", "b-1")

    # When / Then
    result = run_sweep(None, ports)
    assert kinds(result, FindingKind.BAD_GPU_HOST) == [] and ports.fleet.drained == []


def test_evidence_older_than_the_window_does_not_count(ports):
    # Given two failures, one of them two hours old
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    failed_on(ports, "i-bad", "b-1", at="2020-01-01T00:00:00.000Z")
    failed_on(ports, "i-bad", "b-2")

    # When / Then
    assert kinds(run_sweep(None, ports), FindingKind.BAD_GPU_HOST) == []


def test_a_host_still_running_a_task_is_drained_now_and_terminated_by_the_next_sweep(ports):
    # Given a bad host that runs a task when it is quarantined
    fleet_of(ports, "i-1", "i-2", "i-3")
    ports.fleet.launch(POOL, "i-bad", launched_at="2026-11-22T08:00:00.000Z")
    ports.fleet.register(CLUSTER, "i-bad", running_tasks=1)
    failed_on(ports, "i-bad", "b-1")
    failed_on(ports, "i-bad", "b-2")

    # When the sweep runs, then the next
    first = run_sweep(None, ports)
    assert ports.fleet.drained == [ARN.format("i-bad")] and ports.fleet.terminated == []
    assert "terminated by the next sweep" in (kinds(first, FindingKind.BAD_GPU_HOST)[0].action or "")
    second = run_sweep(None, ports)

    # Then it is terminated, and the later sweep still reports it (a warning now)
    assert ports.fleet.terminated == ["i-bad"]
    [finding] = kinds(second, FindingKind.BAD_GPU_HOST)
    assert finding.severity == Severity.WARNING and "terminated i-bad at" in (finding.action or "")


def test_a_spot_host_still_running_a_task_is_terminated_only_once_its_tasks_end(ports):
    # Given a bad spot host that runs a task when it is quarantined (Batch would read its termination as a reclaim)
    fleet_of(ports, "i-1", "i-2", "i-3")
    ports.pools.environments[POOL]["computeResources"]["type"] = "SPOT"
    ports.fleet.launch(POOL, "i-bad", launched_at="2026-11-22T08:00:00.000Z")
    ports.fleet.register(CLUSTER, "i-bad", running_tasks=1)
    failed_on(ports, "i-bad", "b-1")
    failed_on(ports, "i-bad", "b-2")

    # When the sweep runs, then the next while the task still runs
    first = run_sweep(None, ports)
    run_sweep(None, ports)

    # Then it is drained at once and not terminated yet
    assert ports.fleet.drained == [ARN.format("i-bad")] and ports.fleet.terminated == []
    assert "terminated once they end (spot)" in (kinds(first, FindingKind.BAD_GPU_HOST)[0].action or "")

    # When its task has ended / Then the next sweep terminates it
    [bad] = [c for c in ports.fleet.by_cluster[CLUSTER] if c.ec2_instance_id == "i-bad"]
    ports.fleet.by_cluster[CLUSTER] = [c for c in ports.fleet.by_cluster[CLUSTER] if c.ec2_instance_id != "i-bad"]
    ports.fleet.by_cluster[CLUSTER].append(bad.model_copy(update={"running_tasks": 0}))
    run_sweep(None, ports)
    assert ports.fleet.terminated == ["i-bad"]


def test_a_host_another_sweep_is_quarantining_is_left_to_it_unless_that_sweep_outlived_a_sweeps_run(ports):
    # Given a bad host that a sweep running now has recorded and not yet drained
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    racing = QuarantineRecord(instance="i-bad", pool=POOL, reason=QuarantineReason.HOST_FAILURES, at=_recent())
    ports.hosts.record_quarantine(racing)

    # When another sweep runs / Then it neither drains nor terminates it: the first drains it before it terminates
    run_sweep(None, ports)
    assert ports.fleet.terminated == [] and ports.fleet.drained == []

    # When that sweep has run longer than a sweep can (it failed midway) / Then the next sweep terminates the host
    ports.hosts.update_quarantine(racing.model_copy(update={"at": _recent(-SWEEP_RUNS_AT_MOST_SECONDS - 1)}))
    run_sweep(None, ports)
    assert ports.fleet.terminated == ["i-bad"]


def test_a_terminated_host_ec2_still_lists_is_not_terminated_again(ports):
    # Given a bad host quarantined and terminated by one sweep, which EC2 still lists as running a while
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    failed_on(ports, "i-bad", "b-1")
    failed_on(ports, "i-bad", "b-2")
    run_sweep(None, ports)
    ports.fleet.launch(POOL, "i-bad", launched_at="2026-11-22T08:00:00.000Z")

    # When the next sweep runs / Then it terminates nothing again, and still reports the host
    second = run_sweep(None, ports)
    assert ports.fleet.terminated == ["i-bad"]
    [finding] = kinds(second, FindingKind.BAD_GPU_HOST)
    assert (finding.action or "").count("terminated i-bad") == 1


def test_a_host_that_failed_its_boot_check_is_a_bad_host_quoting_its_console(ports):
    # Given a host that registered without GPUs, its console showing the boot check's verdict
    fleet_of(ports, "i-1", "i-2", "i-3")
    ports.fleet.launch(POOL, "i-boot", launched_at="2026-11-22T08:00:00.000Z")
    ports.fleet.register(CLUSTER, "i-boot", gpus=0)
    ports.fleet.consoles["i-boot"] = FAILED

    # When
    result = run_sweep(None, ports)

    # Then it is quarantined as a bad host (not reported as a GPU-less configuration), its verdict quoted
    [finding] = kinds(result, FindingKind.BAD_GPU_HOST)
    assert finding.evidence["reason"] == "boot_check_failed"
    assert finding.evidence["boot_check"] == FAILED.strip() and finding.evidence["jobs_hit"] == []
    assert kinds(result, FindingKind.GPU_NOT_REGISTERED) == []
    assert ports.fleet.terminated == ["i-boot"]


def test_a_registration_without_gpus_is_quarantined_like_any_bad_host(ports):
    # Given one instance that joined ECS without GPU resources (its job fell back), no boot check on its console
    fleet_of(ports, "i-nogpu", gpus=0)
    ports.fleet.consoles["i-nogpu"] = "[    0.000000] Linux version 6.1\n"

    # When
    result = run_sweep(None, ports)

    # Then it is still reported as GPU_NOT_REGISTERED, and quarantined and recorded as a bad host: it stops costing
    assert kinds(result, FindingKind.GPU_NOT_REGISTERED)[0].instances == ["i-nogpu"]
    assert kinds(result, FindingKind.BAD_GPU_HOST)[0].evidence["reason"] == "registered_without_gpus"
    assert ports.fleet.terminated == ["i-nogpu"]


def test_ecs_calling_a_host_impaired_is_enough_to_quarantine_it(ports):
    # Given a host whose container runtime ECS reports IMPAIRED (DescribeContainerInstances, CONTAINER_INSTANCE_HEALTH)
    fleet_of(ports, "i-1", "i-2", "i-3")
    ports.fleet.launch(POOL, "i-sick", launched_at="2026-11-22T08:00:00.000Z")
    ports.fleet.register(CLUSTER, "i-sick", health="IMPAIRED", impaired=["CONTAINER_RUNTIME: Docker is unresponsive"])

    # When / Then
    [finding] = kinds(run_sweep(None, ports), FindingKind.BAD_GPU_HOST)
    assert finding.evidence["reason"] == "ecs_impaired"
    assert finding.evidence["impaired"] == "CONTAINER_RUNTIME: Docker is unresponsive"


def test_more_bad_hosts_than_the_pools_share_get_one_pool_finding_and_no_termination(ports):
    # Given four hosts of which three failed jobs (one of them two different jobs)
    fleet_of(ports, "i-good", "i-bad1", "i-bad2", "i-bad3")
    failed_on(ports, "i-bad1", "b-1")
    failed_on(ports, "i-bad1", "b-2")
    failed_on(ports, "i-bad2", "b-3")
    failed_on(ports, "i-bad3", "b-4")

    # When
    result = run_sweep(None, ports)

    # Then one pool finding, recommending to look at the AMI, driver or launch template; nothing terminated
    [finding] = kinds(result, FindingKind.POOL_UNHEALTHY)
    assert finding.resource == POOL and set(finding.instances) == {"i-bad1", "i-bad2", "i-bad3"}
    assert (finding.evidence["hosts_unhealthy"], finding.evidence["hosts_alive"]) == (3, 4)
    assert "AMI" in finding.recommendation and "no host quarantined" in (finding.action or "")
    assert ports.fleet.terminated == [] and ports.fleet.drained == []
    assert kinds(result, FindingKind.BAD_GPU_HOST) == []
    assert "on-demand:us-east-1:g4dn.xlarge:us-east-1a" in ports.offerings.unavailable_offerings()
    assert ports.metrics.by_pool[(MetricName.UNHEALTHY_POOLS, POOL)] == 1


def test_with_quarantine_switched_off_the_sweep_acts_on_no_host(ports):
    # Given a bad host, and a deployment that does not quarantine
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad", quarantine_bad_hosts=False)
    failed_on(ports, "i-bad", "b-1")
    failed_on(ports, "i-bad", "b-2")

    # When / Then
    run_sweep(None, ports)
    assert ports.fleet.drained == [] and ports.fleet.terminated == [] and ports.hosts.records == {}


def test_the_timeline_of_each_job_the_host_failed_says_it_was_quarantined(ports):
    # Given a GPU Pilot job the bad host failed (Batch retried it elsewhere), and another job's failure
    create_job(ports)
    ports.jobs.advance(JOB_ID, JobStatus.RUNNING, attempt=1)
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    failed_on(ports, "i-bad", "b-1", job_id=JOB_ID)
    failed_on(ports, "i-bad", "b-2")

    # When the sweep quarantines the host, twice over
    run_sweep(None, ports)
    run_sweep(None, ports)

    # Then the job's timeline says so once, with the evidence, without moving the job
    record = ports.jobs.get_job(JOB_ID)
    notes = [e for e in record.timeline if e.note]
    assert len(notes) == 1 and notes[0].reason.startswith("host i-bad quarantined: it failed 2 different jobs")
    assert "exit code 14" in notes[0].reason and record.status == JobStatus.RUNNING


def test_a_quarantined_hosts_cost_since_its_first_failure_is_waste(ports):
    # Given a bad host that first failed a job half an hour ago, then another
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    first = _recent(-1800)
    failed_on(ports, "i-bad", "b-1", at=first)
    failed_on(ports, "i-bad", "b-2", at=_recent(-600))

    # When
    run_sweep(None, ports)

    # Then its waste is charged under bad_host, from its first failure
    [entry] = [e for e in ports.waste.entries.values() if e.instance_id == "i-bad"]
    assert (entry.reason, entry.started_at) == ("bad_host", first) and entry.seconds >= 1800


def test_a_quarantined_hosts_waste_runs_from_the_end_of_the_last_job_that_succeeded_on_it(ports):
    # Given a host that failed a job, then ran a GPU Pilot job to success, then failed another
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    failed_on(ports, "i-bad", "b-1", at=_recent(-1800))
    create_job(ports)
    succeeded = _recent(-1200)
    ports.jobs.put_attempt(JOB_ID, 1, AttemptRecord(instance_type="g4dn.xlarge", capacity=CapacityType.ON_DEMAND,
                                                    job_queue=POOL))  # fmt: skip
    ports.jobs.update_attempt(JOB_ID, 1, {"batch_status": BatchStatus.SUCCEEDED, "stopped_at": succeeded,
                                          "container_instance_arn": ARN.format("i-bad")})  # fmt: skip
    failed_on(ports, "i-bad", "b-2", at=_recent(-600))

    # When
    run_sweep(None, ports)

    # Then its cost is waste from the end of that job, not from its first failure
    [entry] = [e for e in ports.waste.entries.values() if e.instance_id == "i-bad"]
    assert (entry.reason, entry.started_at) == ("bad_host", succeeded)
    assert ports.hosts.records["i-bad"].waste_from == succeeded


def test_a_quarantined_host_that_never_served_a_job_since_its_launch_is_waste_from_its_launch(ports):
    # Given a host launched twenty minutes ago that failed two jobs and ran none to success
    fleet_of(ports, "i-1", "i-2", "i-3")
    launched = _recent(-1200)
    ports.fleet.launch(POOL, "i-bad", launched_at=launched)
    ports.fleet.register(CLUSTER, "i-bad")
    ports.fleet.consoles["i-bad"] = PASSED
    failed_on(ports, "i-bad", "b-1", at=_recent(-900))
    failed_on(ports, "i-bad", "b-2", at=_recent(-600))

    # When / Then: all it cost is waste
    run_sweep(None, ports)
    assert ports.hosts.records["i-bad"].waste_from == launched


def test_a_host_finding_names_the_jobs_waiting_in_its_pool(ports):
    # Given a job RUNNABLE in the pool while a bad host is quarantined
    fleet_of(ports, "i-1", "i-2", "i-3", "i-bad")
    failed_on(ports, "i-bad", "b-1")
    failed_on(ports, "i-bad", "b-2")
    ports.batch.jobs["waiting-1"] = {"jobId": "waiting-1", "jobName": "someone", "status": "RUNNABLE",
                                     "jobQueue": POOL, "createdAt": 1_800_000_000_000}  # fmt: skip

    # When / Then
    [finding] = kinds(run_sweep(None, ports), FindingKind.BAD_GPU_HOST)
    assert finding.jobs == ["waiting-1"] and finding.evidence["jobs_waiting"] == 1


def test_a_registration_finding_names_the_jobs_waiting_in_its_pool_and_what_its_instance_printed(ports):
    # Given a job RUNNABLE in a pool whose one instance never registered, its console read through EC2
    pool(ports)
    ports.fleet.launch(POOL, "i-never", launched_at="2026-01-01T00:00:00.000Z")
    ports.fleet.consoles["i-never"] = "[ 0.0] Linux version 6.1\n" + PASSED
    ports.batch.jobs["waiting-1"] = {"jobId": "waiting-1", "jobName": "someone", "status": "RUNNABLE",
                                     "jobQueue": POOL, "createdAt": 1_800_000_000_000}  # fmt: skip

    # When / Then
    [finding] = kinds(run_sweep(None, ports), FindingKind.ECS_AGENT_NOT_REGISTERED)
    assert finding.jobs == ["waiting-1"]
    assert finding.evidence["console"]["i-never"]["boot_check"] == PASSED.strip()


def test_a_disabled_pools_finding_names_the_jobs_still_waiting_in_it(ports):
    # Given a pool whose queue is DISABLED with a job still RUNNABLE in it
    pool(ports)
    ports.pools.queues[POOL] |= {"state": "DISABLED"}
    ports.batch.jobs["waiting-1"] = {"jobId": "waiting-1", "jobName": "someone", "status": "RUNNABLE",
                                     "jobQueue": POOL, "createdAt": 1_800_000_000_000}  # fmt: skip

    # When / Then
    [finding] = kinds(run_sweep(None, ports), FindingKind.POOL_DISABLED)
    assert finding.jobs == ["waiting-1"]


def test_a_host_failure_the_sweep_replays_is_judged_by_that_sweep_which_starts_no_other(ports):
    # Given a host that failed one job already, and a job whose Batch event of a failure on that host never came
    fleet_of(ports, "i-1", "i-bad")
    failed_on(ports, "i-bad", "b-0")
    submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.jobs.advance(JOB_ID, JobStatus.RUNNING, attempt=1)
    stopped = int(now().timestamp() * 1000)
    reason = "CannotStartContainerError: ... stderr: nvidia-container-cli: initialization error: nvml error"
    ports.batch.set_status(batch_job_id, "RUNNABLE", attempts=[
        {"container": {"containerInstanceArn": ARN.format("i-bad"), "reason": reason},
         "statusReason": "Task failed to start", "startedAt": stopped - 2000, "stoppedAt": stopped},
    ])  # fmt: skip

    # When the sweep runs (and replays the event)
    result = run_sweep(None, ports)

    # Then the replayed failure is kept, and this sweep quarantines the host: no other sweep is started (the sweep
    # function may not invoke itself)
    assert len(ports.hosts.kept) == 2
    assert ports.fleet.drained == [ARN.format("i-bad")] and kinds(result, FindingKind.BAD_GPU_HOST)
    assert ports.sweeps.started == []
