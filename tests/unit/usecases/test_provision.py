"""EnsureJobQueue: pools are created in Batch's order, reused, and an INVALID one is left behind."""

from __future__ import annotations

import pytest

from functions.shared.domain.pools import MAX_READY_CHECKS, QueueNotReady, QueueStatus
from functions.shared.domain.steps import EnsureQueueInput, Selection
from functions.shared.domain.vocabulary import AttemptStatus, DiagnosisCategory, MetricName, Remedy
from functions.shared.ports import Ports
from functions.shared.usecases.provision import ensure_job_queue
from functions.shared.usecases.select import plan_request
from tests.unit.usecases.conftest import JOB_ID, selected

BROKEN = "CLIENT_ERROR - The specified instance profile gpupilot-gpu-instance does not exist"


def ensure(ports: Ports, index: int = 0) -> tuple[EnsureQueueInput, QueueStatus]:
    """EnsureJobQueue for candidate `index` of a selected job (selected on the first call)."""
    if not ports.jobs.records:
        selected(ports)
    record = ports.jobs.get_job(JOB_ID)
    selection = Selection(candidates=plan_request(record.request, ports).candidates[:6], index=index)
    payload = EnsureQueueInput(job_id=JOB_ID, request=record.request, selection=selection)
    return payload, ensure_job_queue(payload, ports)


def test_a_new_pool_is_not_given_a_queue_while_its_compute_environment_is_creating(ports):
    # Given no pool yet (Batch creates compute environments CREATING)
    # When ensuring the first candidate's pool
    _, status = ensure(ports)

    # Then the compute environment is created, no queue yet (Batch refuses one on a non-VALID CE), not ready
    pool = status.compute_environment
    assert pool in ports.pools.environments
    assert ports.pools.queues == {}
    assert (status.ready, status.checks, status.status) == (False, 1, "CREATING/NOT_CREATED")


def test_the_queue_is_created_once_the_compute_environment_is_valid(ports):
    # Given a pool whose compute environment became VALID after the first check
    payload, first = ensure(ports)
    ports.pools.make_valid()

    # When the workflow checks again
    status = ensure_job_queue(payload.model_copy(update={"previous": first.model_dump()}), ports)

    # Then the queue exists, ordered onto that compute environment, and the pool is ready
    queue = ports.pools.queues[status.job_queue]
    environment = ports.pools.environments[status.compute_environment]
    assert queue["computeEnvironmentOrder"] == [
        {"order": 1, "computeEnvironment": environment["computeEnvironmentArn"]}
    ]
    assert (status.ready, status.checks, status.status) == (True, 2, "VALID/VALID")


def test_a_ready_pool_is_reused_without_creating_anything(ports):
    # Given a ready pool
    payload, _ = ensure(ports)
    ports.pools.make_valid()
    ensure_job_queue(payload, ports)
    environments, queues = dict(ports.pools.environments), dict(ports.pools.queues)

    # When another job needs it
    status = ensure_job_queue(payload, ports)

    # Then nothing new is created
    assert status.ready is True
    assert (ports.pools.environments, ports.pools.queues) == (environments, queues)


def test_the_wait_for_a_pool_is_bounded(ports):
    # Given a compute environment stuck in CREATING, checked all but once
    payload, status = ensure(ports)
    previous = status.model_dump() | {"checks": MAX_READY_CHECKS - 1}

    # When / Then: the last check gives up with what is waiting
    with pytest.raises(QueueNotReady, match=f"CREATING/NOT_CREATED after {MAX_READY_CHECKS} checks"):
        ensure_job_queue(payload.model_copy(update={"previous": previous}), ports)


def test_an_invalid_pool_is_diagnosed_on_its_attempt_and_the_workflow_falls_back(ports):
    # Given the first candidate's pool exists and Batch marked it INVALID
    payload, first = ensure(ports)
    ports.pools.make_invalid(first.compute_environment, BROKEN)

    # When ensuring it again
    status = ensure_job_queue(payload, ports)

    # Then the attempt says why (Batch's statusReason verbatim), nothing was submitted, and the next candidate is next
    attempt = ports.jobs.get_job(JOB_ID).attempts[1]
    assert attempt.status == AttemptStatus.NOT_SUBMITTED
    assert attempt.batch_job_id is None
    assert attempt.diagnosis is not None
    assert attempt.diagnosis.category == DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID
    assert attempt.diagnosis.evidence["compute_environment_reason"] == BROKEN
    assert (status.ready, status.remedy, status.next_index) == (False, Remedy.FALL_BACK, 1)
    assert status.diagnosis == attempt.diagnosis


def test_an_invalid_pool_is_remembered_so_the_next_selections_skip_it(ports):
    # Given an INVALID pool for the first candidate
    payload, first = ensure(ports)
    ports.pools.make_invalid(first.compute_environment, BROKEN)

    # When ensuring it
    ensure_job_queue(payload, ports)

    # Then its offering is remembered as unavailable in every zone, and the fallback is counted
    candidate = payload.selection.current()
    assert ports.offerings.unavailable_offerings() == {
        f"on-demand:{candidate.instance_type}:{zone}" for zone in candidate.zones
    }
    assert ports.metrics.total(MetricName.FALLBACKS) == 1


def test_an_invalid_pool_for_the_last_candidate_gives_up(ports):
    # Given the last candidate's pool is INVALID
    payload, _ = ensure(ports)
    last = len(payload.selection.candidates) - 1
    payload, status = ensure(ports, index=last)
    ports.pools.make_invalid(status.compute_environment, BROKEN)

    # When ensuring it
    status = ensure_job_queue(payload, ports)

    # Then the workflow gives up with the diagnosis
    assert (status.remedy, status.next_index) == (Remedy.GIVE_UP, last)


def test_a_disabled_queue_is_diagnosed_on_its_attempt_remembered_and_the_workflow_falls_back(ports):
    # Given the first candidate's pool is ready, then its queue is disabled (by the sweep or an operator)
    payload, first = ensure(ports)
    ports.pools.make_valid()
    ensure_job_queue(payload, ports)
    ports.pools.disable_job_queue(first.job_queue)

    # When ensuring it again
    status = ensure_job_queue(payload, ports)

    # Then nothing is submitted to it: the attempt says why, its offering is skipped, the next candidate is next
    attempt = ports.jobs.get_job(JOB_ID).attempts[1]
    assert attempt.status == AttemptStatus.NOT_SUBMITTED and attempt.batch_job_id is None
    assert attempt.diagnosis is not None and attempt.diagnosis.category == DiagnosisCategory.POOL_DISABLED
    assert attempt.diagnosis.evidence["job_queue_state"] == "DISABLED"
    assert f"--job-queue {first.job_queue} --state ENABLED" in attempt.diagnosis.recommendation
    assert (status.ready, status.remedy, status.next_index, status.status) == (
        False,
        Remedy.FALL_BACK,
        1,
        "VALID/DISABLED",
    )
    candidate = payload.selection.current()
    assert f"on-demand:{candidate.instance_type}:{candidate.zones[0]}" in ports.offerings.unavailable_offerings()


def test_the_workflow_tries_at_most_max_attempts_offerings(ports):
    from tests.unit.usecases.conftest import selected as select_job

    _, selection = select_job(ports, max_attempts=2)
    assert len(selection.candidates) == 2
    assert selection.candidates[0].family != selection.candidates[1].family


def test_a_job_limited_to_zones_gets_a_pool_of_those_zones_subnets_only(ports):
    from tests.unit.usecases.conftest import selected as select_job

    request, selection = select_job(ports, zones=["us-east-1b"])
    payload = EnsureQueueInput(job_id=JOB_ID, request=request, selection=selection)
    status = ensure_job_queue(payload, ports)
    assert "-1b-" in status.compute_environment
    spec = ports.pools.environments[status.compute_environment]
    assert spec["computeResources"]["subnets"] == ["subnet-b"]
