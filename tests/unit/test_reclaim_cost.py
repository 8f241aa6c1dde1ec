"""What a job's reclaims cost and what resuming from a checkpoint saved: `cost.reclaims` of GET /jobs/{job_id}."""

from __future__ import annotations

from typing import Any

import pytest

from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.core.vocabulary import AttemptStatus, CapacityType, JobStatus
from functions.shared.domain.cost.attempts import attempt_cost
from functions.shared.domain.jobs.costs import reclaim_cost
from functions.shared.domain.jobs.records import AttemptRecord, JobRecord
from functions.shared.domain.jobs.views import job_view
from tests.unit.builders import job_request

SPOT = PriceQuote(hourly_usd=0.36, pricing="spot history")
ON_DEMAND = PriceQuote(hourly_usd=1.0, pricing="on-demand")


def attempt(capacity: CapacityType, quote: PriceQuote | None, runtime: float, **fields: Any) -> AttemptRecord:
    """An ended attempt on half of its instance (1 of 2 GPUs), priced at `quote` (None: not priced yet)."""
    cost = attempt_cost(quote, runtime, job_gpus=1, instance_gpus=2) if quote else None
    return AttemptRecord(
        instance_type="g6.2xlarge", capacity=capacity, job_queue="q", status=AttemptStatus.FAILED,
        started_at="2026-01-01T10:00:00Z", runtime_seconds=runtime, cost=cost, **fields,
    )  # fmt: skip


def reclaimed(quote: PriceQuote | None = SPOT, lost: float = 180.0) -> AttemptRecord:
    """Started at 10:00, noticed at 10:08, reclaimed at 10:10: its checkpoint was written at 10:07."""
    return attempt(
        CapacityType.SPOT, quote, 600, interruption_notice_at="2026-01-01T10:08:00Z", progress_lost_seconds=lost,
        checkpoint_uploaded_at="2026-01-01T10:08:30Z",
    )  # fmt: skip


def resumed(quote: PriceQuote = ON_DEMAND, source: int = 1) -> AttemptRecord:
    return attempt(
        CapacityType.ON_DEMAND, quote, 780, resumed_from={"attempt": source, "saved_at": "2026-01-01T10:07:00Z"}
    )


def test_a_reclaim_costs_the_progress_it_lost_and_resuming_saves_the_work_up_to_the_checkpoint_at_its_price():
    # Given a spot attempt at $0.36/h on half its instance, reclaimed 180 s after its checkpoint (written 420 s in),
    # and an on-demand attempt at $1/h resumed from that checkpoint
    attempts = {1: reclaimed(), 2: resumed()}

    # When the reclaims are priced
    reclaims = reclaim_cost(attempts)

    # Then the lost work is priced as the spot attempt was: 0.36 x 0.5 x 180 s / 3600 = $0.009; the work resuming
    # did not redo, 420 s of it: 0.36 x 0.5 x 420 / 3600 = $0.021 (never at the on-demand attempt's price)
    assert reclaims is not None
    assert (reclaims.count, reclaims.lost_seconds, reclaims.saved_seconds) == (1, 180.0, 420.0)
    assert reclaims.lost_usd == pytest.approx(0.009, abs=1e-12)
    assert reclaims.saved_by_resume_usd == pytest.approx(0.021, abs=1e-12)


def test_every_reclaim_is_summed_and_only_a_resumed_one_saves_anything():
    # Given two reclaimed attempts (180 s and 300 s lost), of which only the second's checkpoint was resumed from
    attempts = {1: reclaimed(lost=180.0), 2: reclaimed(lost=300.0), 3: resumed(source=2)}

    # When the reclaims are priced
    reclaims = reclaim_cost(attempts)

    # Then both losses count, 480 s at $0.18/h of share = $0.024; the one resume saved 420 s = $0.021
    assert reclaims is not None
    assert (reclaims.count, reclaims.lost_seconds, reclaims.saved_seconds) == (2, 480.0, 420.0)
    assert reclaims.lost_usd == pytest.approx(0.024, abs=1e-12)
    assert reclaims.saved_by_resume_usd == pytest.approx(0.021, abs=1e-12)


def test_a_reclaim_of_an_attempt_not_priced_yet_counts_its_seconds_and_no_dollars():
    # Given a reclaimed attempt RecordCost has not priced yet, and the attempt resumed from it
    reclaims = reclaim_cost({1: reclaimed(quote=None), 2: resumed()})

    # Then its seconds are said, its dollars are not guessed
    assert reclaims is not None
    assert (reclaims.count, reclaims.lost_seconds, reclaims.saved_seconds) == (1, 180.0, 420.0)
    assert (reclaims.lost_usd, reclaims.saved_by_resume_usd) == (0.0, 0.0)


def test_a_job_never_reclaimed_has_no_reclaims_and_a_reclaimed_one_shows_them_under_its_cost():
    # Given a job that ran once on demand, and one reclaimed and resumed
    def record(attempts: dict[int, AttemptRecord]) -> JobRecord:
        at = "2026-01-01T10:30:00Z"
        return JobRecord(job_id="j", name="n", status=JobStatus.SUCCEEDED, request=job_request(), attempts=attempts,
                         created_at=at, updated_at=at)  # fmt: skip

    # When GET /jobs/{job_id} shows them
    calm = job_view(record({1: resumed()})).model_dump(mode="json")
    reclaimed_job = job_view(record({1: reclaimed(), 2: resumed()})).model_dump(mode="json")

    # Then only the reclaimed job's cost says what its reclaims took and what resuming saved, beside its total
    # (0.36 x 0.5 x 600 s and 1.0 x 0.5 x 780 s)
    assert calm["cost"]["reclaims"] is None
    assert reclaimed_job["cost"]["reclaims"] == {
        "count": 1, "lost_seconds": 180.0, "lost_usd": 0.009, "saved_seconds": 420.0, "saved_by_resume_usd": 0.021,
    }  # fmt: skip
    assert reclaimed_job["cost"]["usd"] == pytest.approx(0.03 + 0.108333333333, abs=1e-12)
