"""EnsureJobQueue: pools are created in Batch's order, reused, and an INVALID one is left behind."""

from __future__ import annotations

from functions.shared.domain.core.clock import now_iso, seconds_between
from functions.shared.domain.core.vocabulary import AttemptStatus, DiagnosisCategory, MetricName, Remedy
from functions.shared.domain.jobs.steps import EnsureQueueInput, Selection, Timeouts
from functions.shared.domain.pools.specs import QueueStatus
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import plan_request
from functions.shared.usecases.jobs.queries import get_job
from functions.shared.usecases.pools.provision import ensure_job_queue
from tests.unit.usecases.conftest import JOB_ID, selected

BROKEN = "CLIENT_ERROR - The specified instance profile gpupilot-gpu-instance does not exist"


TIMEOUTS = Timeouts(stuck_after_seconds=900, finish_after_seconds=3600, provision_timeout_seconds=600)
LONG_AGO = "2026-01-01T00:00:00.000Z"


def ensure(ports: Ports, index: int = 0, previous: dict | None = None) -> tuple[EnsureQueueInput, QueueStatus]:
    """EnsureJobQueue for candidate `index` of a selected job (selected on the first call)."""
    if not ports.jobs.records:
        selected(ports)
    record = ports.jobs.get_job(JOB_ID)
    selection = Selection(candidates=plan_request(record.request, ports).candidates[:6], index=index)
    payload = EnsureQueueInput(
        job_id=JOB_ID, request=record.request, selection=selection, previous=previous, timeouts=TIMEOUTS
    )
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


def test_an_attempt_s_deadline_is_set_at_its_first_check_from_the_workflow_s_timeout_and_carried_on(ports):
    # Given a new pool (CREATING) checked once
    before = now_iso()
    _, first = ensure(ports)

    # When the workflow checks again
    _, second = ensure(ports, previous=first.model_dump())

    # Then the first check set the deadline provision_timeout_seconds after it, and later checks keep it
    assert first.since is not None and first.deadline is not None and first.since >= before
    assert seconds_between(first.since, first.deadline) == TIMEOUTS.provision_timeout_seconds
    assert (second.attempt, second.since, second.deadline, second.checks) == (1, first.since, first.deadline, 2)
    assert second.ready is False and second.remedy is None


def test_a_pool_not_ready_by_the_attempt_s_deadline_is_diagnosed_pool_not_ready_and_the_workflow_falls_back(ports):
    # Given a compute environment still CREATING when the attempt's deadline has passed
    _, first = ensure(ports)
    past = first.model_dump() | {"since": LONG_AGO, "deadline": "2026-01-01T00:30:00.000Z"}

    # When the workflow checks again
    _, status = ensure(ports, previous=past)

    # Then the attempt says why (what was waited on, since when, until when), nothing was submitted, and the
    # workflow falls back to the next candidate instead of waiting on
    attempt = ports.jobs.get_job(JOB_ID).attempts[1]
    assert attempt.status == AttemptStatus.NOT_SUBMITTED and attempt.batch_job_id is None
    assert attempt.diagnosis is not None and attempt.diagnosis.category == DiagnosisCategory.POOL_NOT_READY
    evidence = attempt.diagnosis.evidence
    assert (evidence["status"], evidence["provisioning_since"], evidence["deadline"]) == (
        "CREATING/NOT_CREATED",
        LONG_AGO,
        "2026-01-01T00:30:00.000Z",
    )
    assert "GPUPILOT_PROVISION_TIMEOUT_SECONDS" in attempt.diagnosis.recommendation
    assert (status.ready, status.remedy, status.next_index, status.status) == (
        False,
        Remedy.FALL_BACK,
        1,
        "CREATING/NOT_CREATED",
    )


def test_a_fallback_gets_a_deadline_of_its_own(ports):
    # Given the first candidate's attempt gave up on its pool past its deadline
    _, first = ensure(ports)
    spent = first.model_dump() | {"since": LONG_AGO, "deadline": "2026-01-01T00:30:00.000Z"}

    # When the next candidate's pool is checked for the first time
    _, status = ensure(ports, index=1, previous=spent)

    # Then it waits, with a deadline of its own
    assert (status.attempt, status.checks, status.remedy) == (2, 1, None)
    assert status.deadline is not None and status.deadline > now_iso()


def test_a_fallback_s_provisioning_puts_the_job_on_its_attempt_with_how_it_is_billed(ports):
    # Given the first candidate's attempt gave up on its pool, and the next candidate's pool is checked
    _, first = ensure(ports)
    payload, _ = ensure(ports, index=1, previous=first.model_dump() | {"since": LONG_AGO})

    # When the job is viewed meanwhile (its attempt 2 has no entry until it is submitted)
    view = get_job(JOB_ID, ports)

    # Then it is on attempt 2, with that candidate's GPU type, region and capacity type
    following = payload.selection.current()
    assert (view.attempt, view.instance_type, view.capacity_type) == (2, following.instance_type, following.capacity)


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
    assert set(ports.offerings.unavailable_offerings()) == {
        f"on-demand:us-east-1:{candidate.instance_type}:{zone}" for zone in candidate.zones
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
    key = f"on-demand:us-east-1:{candidate.instance_type}:{candidate.zones[0]}"
    assert key in ports.offerings.unavailable_offerings()


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
