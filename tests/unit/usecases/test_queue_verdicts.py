"""Batch's verdict on the job heading a queue holds every job waiting behind it: each acts on it within seconds with
its own next candidate (AWS says it of the head alone)."""

from __future__ import annotations

import json
from typing import Any

from functions.shared.domain.core.vocabulary import DiagnosisCategory, Remedy, WaitPhase
from functions.shared.domain.fleet.batch import BatchJobEvent
from functions.shared.domain.jobs.steps import DiagnoseInput, SelectInput, SubmitInput, SubmittedJob, WaitInput
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import select_gpu_type
from functions.shared.usecases.diagnosis.diagnose import diagnose_stuck_job
from functions.shared.usecases.health.jobs import sweep_jobs
from functions.shared.usecases.jobs.attempt import submit_batch_job
from functions.shared.usecases.jobs.queue_verdicts import tell_queue
from functions.shared.usecases.jobs.track import park_wait, record_batch_event
from tests.unit.usecases.conftest import REQUEST, ready_queue

AT = "2026-11-27T10:00:00.000Z"
CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested"
TOO_LARGE = "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT - The job resource requirement cannot be met"
HEAD, BEHIND, ALONE = "aaaaaaaaaaaaaaaaaaa1", "aaaaaaaaaaaaaaaaaaa2", "aaaaaaaaaaaaaaaaaaa3"
TYPES = ["g4dn.xlarge", "g5.xlarge"]


def waiting(ports: Ports, job_id: str, types: list[str]) -> SubmitInput:
    """A job submitted to its first candidate's queue, RUNNABLE in Batch and recorded so, its start wait parked."""
    request = JobRequest.model_validate(REQUEST | {"instance_types": types, "price_band": 1000})
    ports.jobs.create_job(job_id, request)
    selection = select_gpu_type(SelectInput(job_id=job_id, request=request), ports)
    step = SubmitInput(job_id=job_id, request=request, selection=selection, queue=ready_queue(selection))
    submitted = submit_batch_job(step, ports)
    state = ports.batch.set_status(submitted.batch_job_id, "RUNNABLE")
    record_batch_event(BatchJobEvent(at=AT, job=state), ports)
    park_wait(
        WaitInput(job_id=job_id, phase=WaitPhase.START, attempt=1, batch_job_id=submitted.batch_job_id,
                  task_token=f"tok-{job_id}", selection=selection),
        ports,
    )  # fmt: skip
    return step


def batch_job(ports: Ports, job_id: str) -> str:
    return str(ports.jobs.get_job(job_id).attempts[1].batch_job_id)


def blocked(ports: Ports, job_id: str, reason: str) -> BatchJobEvent:
    """Batch's queue-blocked event for the job: its words become the job's statusReason."""
    state = ports.batch.set_status(batch_job(ports, job_id), "RUNNABLE", statusReason=reason)
    event = BatchJobEvent(at=AT, job=state, queue_blocked=True)
    record_batch_event(event, ports)
    return event


def sent_to(ports: Ports, job_id: str) -> list[dict[str, Any]]:
    return [json.loads(output) for token, output in ports.workflow.sent if token == f"tok-{job_id}"]


def test_a_job_waiting_behind_a_head_without_capacity_is_told_and_resumed_at_once(ports):
    # Given a job that may run on g4dn.xlarge alone heading its queue, and a job with a fallback waiting behind it
    waiting(ports, HEAD, TYPES[:1])
    waiting(ports, BEHIND, TYPES)

    # When Batch says the head lacks capacity (a queue-blocked event, of the head alone)
    told = tell_queue(blocked(ports, HEAD, CAPACITY), ports)

    # Then the job behind is told (its attempt keeps whose words they are) and its start wait resumes on the verdict
    assert told == [BEHIND]
    attempt = ports.jobs.get_job(BEHIND).attempts[1]
    assert (attempt.queue_verdict, attempt.queue_head, attempt.verdict) == (CAPACITY, batch_job(ports, HEAD), CAPACITY)
    assert [sent["verdict"] for sent in sent_to(ports, BEHIND)] == ["INSUFFICIENT_CAPACITY"]
    entry = ports.jobs.get_job(BEHIND).timeline[-1]
    assert entry.status == "RUNNABLE" and entry.reason.startswith(CAPACITY) and batch_job(ports, HEAD) in entry.reason
    # And the head, with no other type to try, keeps waiting for its stuck_after
    assert sent_to(ports, HEAD) == []


def test_a_job_joining_a_blocked_queue_later_is_told_on_its_own_runnable_event(ports):
    # Given a head Batch said lacks capacity, remembered on its pool, and no job behind it yet
    waiting(ports, HEAD, TYPES[:1])
    assert tell_queue(blocked(ports, HEAD, CAPACITY), ports) == []

    # When a job with a fallback joins the queue and Batch says it is RUNNABLE
    waiting(ports, BEHIND, TYPES)
    runnable = BatchJobEvent(at=AT, job=ports.batch.describe_jobs([batch_job(ports, BEHIND)])[0])
    told = tell_queue(runnable, ports)

    # Then it is told the head's verdict (the head still waits for it) and acts on it
    assert told == [BEHIND]
    assert [sent["verdict"] for sent in sent_to(ports, BEHIND)] == ["INSUFFICIENT_CAPACITY"]


def test_a_job_joining_a_queue_whose_head_moved_on_is_not_told(ports):
    # Given a head once without capacity, which has started since
    waiting(ports, HEAD, TYPES[:1])
    tell_queue(blocked(ports, HEAD, CAPACITY), ports)
    ports.batch.set_status(batch_job(ports, HEAD), "STARTING", statusReason="")

    # When a job joins the queue
    waiting(ports, BEHIND, TYPES)
    runnable = BatchJobEvent(at=AT, job=ports.batch.describe_jobs([batch_job(ports, BEHIND)])[0])

    # Then nothing is told: the queue moves again
    assert tell_queue(runnable, ports) == []
    assert ports.jobs.get_job(BEHIND).attempts[1].queue_verdict is None and sent_to(ports, BEHIND) == []


def test_a_verdict_about_the_head_job_alone_is_not_told_to_the_jobs_behind_it(ports):
    # Given a head too large for its pool, and a job behind it
    waiting(ports, HEAD, TYPES[:1])
    waiting(ports, BEHIND, TYPES)

    # When Batch says the head's resource requirement cannot be met
    told = tell_queue(blocked(ports, HEAD, TOO_LARGE), ports)

    # Then nobody behind is told: that verdict is the head's own
    assert told == [] and ports.jobs.get_job(BEHIND).attempts[1].queue_verdict is None


def test_a_job_behind_with_no_other_type_to_try_is_told_but_keeps_waiting(ports):
    # Given two jobs that may run on g4dn.xlarge alone
    waiting(ports, HEAD, TYPES[:1])
    waiting(ports, ALONE, TYPES[:1])

    # When Batch says the head lacks capacity
    told = tell_queue(blocked(ports, HEAD, CAPACITY), ports)

    # Then the other is told, and its start wait keeps its stuck_after (capacity may come back)
    assert told == [ALONE]
    assert ports.jobs.get_job(ALONE).attempts[1].queue_verdict == CAPACITY and sent_to(ports, ALONE) == []


def test_the_sweep_tells_the_jobs_behind_a_head_whose_queue_blocked_event_was_missed(ports):
    # Given a head Batch says lacks capacity, whose event never came, and a job with a fallback behind it
    waiting(ports, HEAD, TYPES[:1])
    waiting(ports, BEHIND, TYPES)
    ports.batch.set_status(batch_job(ports, HEAD), "RUNNABLE", statusReason=CAPACITY)
    queue = ports.jobs.get_job(HEAD).attempts[1].job_queue

    # When the sweep lists the queue
    sweep_jobs([queue], AT, ports)

    # Then the job behind acts on the verdict
    assert [sent["verdict"] for sent in sent_to(ports, BEHIND)] == ["INSUFFICIENT_CAPACITY"]


def test_a_job_told_its_queue_s_verdict_is_diagnosed_from_it_and_falls_back(ports):
    # Given a job behind a head without capacity, told so (Batch says nothing of the job itself)
    waiting(ports, HEAD, TYPES[:1])
    step = waiting(ports, BEHIND, TYPES)
    tell_queue(blocked(ports, HEAD, CAPACITY), ports)
    attempt = ports.jobs.get_job(BEHIND).attempts[1]

    # When the workflow diagnoses it
    outcome = diagnose_stuck_job(
        DiagnoseInput(
            job_id=BEHIND, request=step.request, selection=step.selection, queue=step.queue,
            batch_job=SubmittedJob(batch_job_id=attempt.batch_job_id or "", job_queue=attempt.job_queue,
                                   job_definition=attempt.job_definition or "", attempt=1,
                                   instance_type=attempt.instance_type, capacity=attempt.capacity),
        ),
        ports,
    )  # fmt: skip

    # Then the head's words are its diagnosis, saying whose they are, and it falls back to its next candidate
    assert (outcome.category, outcome.remedy) == (DiagnosisCategory.INSUFFICIENT_CAPACITY, Remedy.FALL_BACK)
    assert outcome.evidence["queue_head_job"] == batch_job(ports, HEAD)
    assert batch_job(ports, HEAD) in outcome.reason
