"""Terminal rendering of a job: its cost line and its timeline."""

from __future__ import annotations

from typing import Any

from gpupilot.render import job_summary


def job(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "job_id": "0123456789abcdef0123",
        "name": "train",
        "status": "SUCCEEDED",
        "instance_type": "g5.12xlarge",
        "gpu_model": "A10G",
        "attempts": [
            {
                "instance_type": "g5.12xlarge",
                "capacity": "on-demand",
                "job_queue": "gpupilot-od-x8664-g5-12xlarge",
                "batch_job_id": "batch-1",
                "status": "SUCCEEDED",
            }
        ],
        "cost": {
            "usd": 0.15,
            "hourly_usd": 1.2,
            "runtime_seconds": 1800,
            "gpu_share": 0.25,
            "pricing": "on-demand us-east-1 price snapshot of 2025-08-01",
        },
        "timeline": [
            {"status": "SUBMITTED", "at": "2024-05-01T12:00:00.000Z"},
            {"status": "RUNNING", "at": "2024-05-01T12:03:10.250Z"},
            {"status": "SUCCEEDED", "at": "2024-05-01T12:33:10.250Z"},
        ],
    }
    return base | overrides


def line(summary: str, key: str) -> str:
    [found] = [row for row in summary.splitlines() if row.startswith(key + " ")]
    return found


def test_summary_shows_the_cost_and_how_it_was_computed():
    # Given / When
    summary = job_summary(job())

    # Then the cost line shows dollars = hourly x runtime x share, and the price source
    assert line(summary, "cost").split(None, 1)[1] == (
        "$0.150000  = $1.2/h x 30.0 min x 0.25 GPU share (on-demand us-east-1 price snapshot of 2025-08-01)"
    )
    assert line(summary, "runtime").endswith("30.0 min")


def test_summary_shows_the_timeline_in_order_with_times_of_day():
    # Given / When
    summary = job_summary(job())

    # Then
    assert line(summary, "timeline").endswith(
        "SUBMITTED 12:00:00.000 -> RUNNING 12:03:10.250 -> SUCCEEDED 12:33:10.250"
    )


def test_summary_shows_the_gpu_type_queue_and_attempts():
    # Given / When
    summary = job_summary(job())

    # Then
    assert line(summary, "GPU type").endswith("g5.12xlarge (A10G, on-demand)")
    assert line(summary, "queue").endswith("gpupilot-od-x8664-g5-12xlarge")
    assert line(summary, "attempts").endswith("1")


def test_summary_of_an_unfinished_job_has_no_cost_line():
    # Given / When
    summary = job_summary(job(status="RUNNING", cost=None))

    # Then
    assert not [row for row in summary.splitlines() if row.startswith(("cost ", "runtime "))]


def test_summary_shows_each_attempts_diagnosis():
    # Given a first attempt that fell back for lack of capacity
    first = job()["attempts"][0] | {
        "instance_type": "g6.xlarge",
        "diagnosis": {"category": "INSUFFICIENT_CAPACITY", "reason": "AWS Batch says: CAPACITY:..."},
    }
    summary = job_summary(job(attempts=[first, *job()["attempts"]]))

    # Then
    assert line(summary, "diagnosis g6.xlarge").endswith("INSUFFICIENT_CAPACITY: AWS Batch says: CAPACITY:...")
