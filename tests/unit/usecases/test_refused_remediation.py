"""A quarantine or remediation step AWS refuses is said in the finding: which step, that it was refused, and AWS's
words for it (a missing grant names its action and resource), never swallowed into a bare error class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from functions.shared.domain.core.vocabulary import FindingKind
from functions.shared.usecases.health.sweep import run_sweep
from tests.unit.usecases.test_quarantine import ARN, failed_on, fleet_of, kinds
from tests.unit.usecases.test_sweep import CLUSTER, LONG_AGO, LONG_AGO_MS, POOL, pool

INSTANCE = "arn:aws:ec2:us-east-1:123456789012:instance/{}"


def refused(action: str, resource: str, code: str = "AccessDeniedException") -> Callable[..., Any]:
    """A call AWS refuses as the local cloud's IAM does when the function's role lacks the grant."""
    message = (
        f"health_sweep is not authorized to perform: {action} on resource: {resource} "
        "(its role in the synthesized template grants no such permission)"
    )

    def call(*_: Any, **__: Any) -> Any:
        raise ClientError({"Error": {"Code": code, "Message": message}}, action.split(":")[1])

    return call


def bad_host(ports: Any, running_tasks: int = 0) -> None:
    """Four hosts of a pool, one of which failed two different jobs: the sweep quarantines it."""
    fleet_of(ports, "i-1", "i-2", "i-3")
    ports.fleet.launch(POOL, "i-bad", launched_at="2026-11-22T08:00:00.000Z")
    ports.fleet.register(CLUSTER, "i-bad", running_tasks=running_tasks)
    failed_on(ports, "i-bad", "b-1")
    failed_on(ports, "i-bad", "b-2")


# -- quarantine ------------------------------------------------------------------------------------------------
def test_a_bad_hosts_termination_iam_refuses_is_said_in_its_finding_with_the_action_and_the_resource(ports):
    # Given a bad host, and a sweep whose role may not terminate it
    bad_host(ports)
    ports.fleet.terminate_instances = refused("ec2:TerminateInstances", INSTANCE.format("i-bad"))

    # When the sweep quarantines it
    [finding] = kinds(run_sweep(None, ports), FindingKind.BAD_GPU_HOST)

    # Then the finding says it was drained, and that its termination was refused, by what and on what
    assert "drained i-bad in ECS" in (finding.action or "")
    words = "terminating i-bad was refused: AccessDeniedException: health_sweep is not authorized to perform: "
    assert f"{words}ec2:TerminateInstances on resource: {INSTANCE.format('i-bad')}" in (finding.action or "")
    [record] = ports.hosts.records.values()
    assert record.terminated_at is None


def test_a_bad_hosts_drain_iam_refuses_is_said_in_its_finding(ports):
    bad_host(ports)
    ports.fleet.drain = refused("ecs:UpdateContainerInstancesState", ARN.format("i-bad"))

    [finding] = kinds(run_sweep(None, ports), FindingKind.BAD_GPU_HOST)

    assert "draining i-bad in ECS was refused: AccessDeniedException" in (finding.action or "")
    assert "ecs:UpdateContainerInstancesState" in (finding.action or "")


def test_a_later_sweeps_termination_ec2_refuses_is_said_with_ec2s_own_code(ports):
    # Given a bad host quarantined while it ran a task (terminated by the next sweep), then EC2 refusing that sweep
    bad_host(ports, running_tasks=1)
    run_sweep(None, ports)
    [container] = [c for c in ports.fleet.by_cluster[CLUSTER] if c.ec2_instance_id == "i-bad"]
    ports.fleet.by_cluster[CLUSTER].remove(container)
    ports.fleet.by_cluster[CLUSTER].append(container.model_copy(update={"running_tasks": 0}))
    ports.fleet.terminate_instances = refused(
        "ec2:TerminateInstances", INSTANCE.format("i-bad"), code="UnauthorizedOperation"
    )

    # When the next sweep terminates it
    [finding] = kinds(run_sweep(None, ports), FindingKind.BAD_GPU_HOST)

    # Then the finding says that termination was refused, with EC2's code
    assert "terminating i-bad at " in (finding.action or "")
    assert "was refused: UnauthorizedOperation: health_sweep is not authorized" in (finding.action or "")


def test_a_console_iam_refuses_to_read_is_said_in_the_bad_hosts_evidence(ports):
    bad_host(ports)
    ports.fleet.console_output = refused("ec2:GetConsoleOutput", INSTANCE.format("i-bad"))

    [finding] = kinds(run_sweep(None, ports), FindingKind.BAD_GPU_HOST)

    assert str(finding.evidence["console"]).startswith(
        "reading i-bad's console output was refused: AccessDeniedException: health_sweep is not authorized to "
        "perform: ec2:GetConsoleOutput"
    )


def test_a_step_that_fails_for_another_reason_is_said_to_have_failed_not_to_have_been_refused(ports):
    bad_host(ports)
    ports.fleet.terminate_instances = refused("ec2:TerminateInstances", "*", code="RequestLimitExceeded")

    [finding] = kinds(run_sweep(None, ports), FindingKind.BAD_GPU_HOST)

    assert "terminating i-bad failed: RequestLimitExceeded" in (finding.action or "")


# -- remediation -----------------------------------------------------------------------------------------------
def test_terminating_instances_that_never_registered_iam_refuses_is_said_in_the_finding(ports):
    pool(ports)
    ports.fleet.launch(POOL, "i-never", launched_at=LONG_AGO)
    ports.fleet.terminate_instances = refused("ec2:TerminateInstances", INSTANCE.format("i-never"))

    [finding] = [f for f in run_sweep(None, ports).findings if f.kind == "ECS_AGENT_NOT_REGISTERED"]

    words = "terminating i-never was refused: AccessDeniedException: health_sweep is not authorized to perform: "
    assert f"{words}ec2:TerminateInstances" in (finding.action or "")


def test_deregistering_a_disconnected_agent_iam_refuses_is_said_in_the_finding(ports):
    pool(ports)
    ports.fleet.launch(POOL, "i-gone", launched_at=LONG_AGO)
    ports.fleet.register(CLUSTER, "i-gone", connected=False)
    ports.fleet.deregister_container_instance = refused("ecs:DeregisterContainerInstance", CLUSTER)

    [finding] = [f for f in run_sweep(None, ports).findings if f.kind == "AGENT_DISCONNECTED"]

    assert "deregistering i-gone from ECS was refused: AccessDeniedException" in (finding.action or "")
    assert "ecs:DeregisterContainerInstance" in (finding.action or "") and ports.fleet.terminated == []


def test_cancelling_a_job_stuck_past_the_hard_limit_iam_refuses_is_said_in_the_finding(ports):
    pool(ports)
    ports.batch.jobs["foreign-1"] = {"jobId": "foreign-1", "jobName": "someone", "jobQueue": POOL,
                                     "status": "RUNNABLE", "statusReason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
                                     "createdAt": LONG_AGO_MS}  # fmt: skip
    job = "arn:aws:batch:us-east-1:123456789012:job/foreign-1"
    ports.batch.terminate_job = refused("batch:TerminateJob", job)

    [finding] = [f for f in run_sweep(None, ports).findings if f.jobs]

    assert "cancelled" not in (finding.action or "")
    words = "cancelling Batch job foreign-1 was refused: AccessDeniedException: health_sweep is not authorized to "
    assert f"{words}perform: batch:TerminateJob on resource: {job}" in (finding.action or "")


def test_disabling_a_failing_pools_queue_iam_refuses_is_said_in_the_finding(ports):
    # Given a pool whose instances keep failing to register, and a sweep whose role may not disable its queue
    pool(ports)
    ports.fleet.launch(POOL, "i-never-1", launched_at=LONG_AGO)
    run_sweep(None, ports)
    ports.fleet.launch(POOL, "i-never-2", launched_at=LONG_AGO)
    queue = f"arn:aws:batch:us-east-1:123456789012:job-queue/{POOL}"
    ports.pools.disable_job_queue = refused("batch:UpdateJobQueue", queue)

    # When the next sweep finds it again
    second = run_sweep(None, ports)

    # Then the finding says the disabling was refused, and the queue stays enabled
    failing = next(f for f in second.findings if f.kind == "ECS_AGENT_NOT_REGISTERED")
    assert f"disabling job queue {POOL} was refused: AccessDeniedException" in (failing.action or "")
    assert "batch:UpdateJobQueue" in (failing.action or "")
    assert ports.pools.queues[POOL].get("state") != "DISABLED"
