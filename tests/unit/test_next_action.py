"""While a job waits to start, what the workflow does next and when: a fallback is always dated."""

from __future__ import annotations

from typing import Any

import pytest

from functions.shared.domain.core.vocabulary import (
    BatchStatus,
    CapacityType,
    DiagnosisCategory,
    JobStatus,
    NextStep,
    WaitPhase,
)
from functions.shared.domain.diagnosis.recommendations import INVALID_RECOMMENDATION, UNREGISTERED_RECOMMENDATION
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.jobs.next_action import NextAction, next_action, with_next_action
from functions.shared.domain.jobs.records import AttemptRecord, JobRecord, NextCandidate, Wait
from functions.shared.domain.jobs.views import job_view
from functions.shared.domain.requests.job_request import JobRequest

CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested"
NEXT = NextCandidate(instance_type="g6.xlarge", capacity=CapacityType.ON_DEMAND)
REQUEST = {"name": "train", "image": "nvidia/cuda:12.4.1-base", "command": ["nvidia-smi"]}


def waiting(reason: str | None = None, following: NextCandidate | None = NEXT, **request: Any) -> JobRecord:
    """A job whose attempt 1 is RUNNABLE, its start wait parked at 12:26:00 for 15 minutes."""
    attempt = AttemptRecord(
        instance_type="g4dn.xlarge", capacity=CapacityType.ON_DEMAND, job_queue="q", batch_job_id="b-1",
        batch_status=BatchStatus.RUNNABLE, status_reason=reason,
    )  # fmt: skip
    wait = Wait(attempt=1, token="t", since="2026-11-22T12:26:00.000Z", timeout_seconds=900, next_candidate=following)
    return JobRecord(
        job_id="j1", name="train", status=JobStatus.RUNNABLE, request=JobRequest.model_validate(REQUEST | request),
        attempts={1: attempt}, waits={WaitPhase.START: wait},
        created_at="2026-11-22T12:25:00.000Z", updated_at="2026-11-22T12:26:00.000Z",
    )  # fmt: skip


def test_a_job_waiting_on_a_cause_another_type_cures_falls_back_to_the_next_candidate_at_the_end_of_its_wait():
    action = next_action(waiting(CAPACITY))
    assert action == NextAction(action=NextStep.FALL_BACK, at="2026-11-22T12:41:00.000Z", candidate=NEXT)
    assert action.words() == "falls back to g6.xlarge (on-demand) at 12:41 UTC unless it starts"


def test_a_job_waiting_without_a_known_cause_is_diagnosed_at_the_end_of_its_wait_and_says_what_may_follow():
    action = next_action(waiting())
    assert action is not None and action.action == NextStep.DIAGNOSE
    assert action.words() == "diagnoses at 12:41 UTC unless it starts; it may then fall back to g6.xlarge (on-demand)"


def test_a_job_with_no_candidate_left_gives_up_at_the_end_of_its_wait():
    action = next_action(waiting(CAPACITY, following=None))
    assert action is not None and action.words() == "gives up at 12:41 UTC unless it starts"


def test_a_job_whose_give_up_after_minutes_is_past_by_then_gives_up_whatever_the_cause():
    # Given a job created at 12:25 that may wait 10 minutes in all: its wait ends at 12:41
    action = next_action(waiting(CAPACITY, give_up_after_minutes=10))
    assert action is not None and action.action == NextStep.GIVE_UP


def test_a_cause_found_now_decides_the_next_action():
    # Given no reason recorded yet, and a diagnosis made now naming a cause another type cures
    action = next_action(waiting(), DiagnosisCategory.ECS_AGENT_NOT_REGISTERED)
    assert action is not None and action.action == NextStep.FALL_BACK


def test_a_started_or_finished_job_has_no_next_action():
    started = waiting(CAPACITY)
    started.attempts[1].batch_status = BatchStatus.RUNNING
    assert next_action(started) is None
    assert next_action(waiting(CAPACITY).model_copy(update={"status": JobStatus.CANCELLED})) is None


def test_the_view_of_a_waiting_job_carries_its_next_action():
    assert job_view(waiting(CAPACITY)).next_action == next_action(waiting(CAPACITY))


@pytest.mark.parametrize("recommendation", [UNREGISTERED_RECOMMENDATION, INVALID_RECOMMENDATION])
def test_a_recommendation_never_promises_a_fallback_meanwhile_without_its_time(recommendation: str):
    # Given a diagnosis whose recommendation says GPU Pilot falls back "meanwhile"
    diagnosis = Diagnosis(
        category=DiagnosisCategory.ECS_AGENT_NOT_REGISTERED, reason="r", recommendation=recommendation
    )

    # When it is shown with the next action
    shown = with_next_action(diagnosis, next_action(waiting(), diagnosis.category))

    # Then it says when, and to what
    assert "meanwhile" not in shown.recommendation
    assert shown.recommendation.endswith("GPU Pilot falls back to g6.xlarge (on-demand) at 12:41 UTC unless it starts.")
