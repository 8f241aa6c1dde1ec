"""EC2's spot signals (interruption warning, rebalance recommendation) as the attempts on the instance they name."""

from __future__ import annotations

from typing import Any

import pytest

from functions.shared.domain.core.vocabulary import AttemptStatus, BatchStatus, CapacityType, JobStatus
from functions.shared.domain.jobs.ec2_events import Ec2InstanceEvent, Ec2Signal, attempts_on
from functions.shared.domain.jobs.records import HOST_NOTE, ActiveJob, AttemptRecord, TimelineEntry

WARNING = {
    "version": "0", "id": "12345678-1234-1234-1234-123456789012",
    "detail-type": "EC2 Spot Instance Interruption Warning",
    "source": "aws.ec2", "account": "123456789012", "time": "2027-01-15T10:00:00Z", "region": "us-east-2",
    "resources": ["arn:aws:ec2:us-east-2:123456789012:instance/i-1234567890abcdef0"],
    "detail": {"instance-id": "i-1234567890abcdef0", "instance-action": "terminate"},
}  # fmt: skip
REBALANCE = WARNING | {"detail-type": "EC2 Instance Rebalance Recommendation",
                       "detail": {"instance-id": "i-1234567890abcdef0"}}  # fmt: skip


def test_ec2_s_interruption_warning_and_rebalance_recommendation_are_read_as_the_user_guide_shows_them():
    # Given / When the two events as EC2 sends them
    warning, rebalance = Ec2InstanceEvent.from_eventbridge(WARNING), Ec2InstanceEvent.from_eventbridge(REBALANCE)

    # Then each names its instance, its time, and the attempt field it sets
    assert warning is not None and rebalance is not None
    assert (warning.signal, warning.instance_id, warning.at, warning.action) == (
        Ec2Signal.INTERRUPTION_WARNING, "i-1234567890abcdef0", "2027-01-15T10:00:00.000Z", "terminate"
    )  # fmt: skip
    assert (warning.field, rebalance.field) == ("interruption_notice_at", "rebalance_recommended_at")
    assert warning.note_key != rebalance.note_key


@pytest.mark.parametrize(
    "event",
    [
        WARNING | {"source": "aws.batch"},
        WARNING | {"detail-type": "EC2 Instance State-change Notification"},
        WARNING | {"detail": {"instance-action": "terminate"}},
        {"source": "gpupilot.agent", "detail-type": "GPU Pilot Host Agent Report", "detail": {}},
    ],
    ids=["another source", "another detail type", "no instance", "an agent report"],
)
def test_any_other_event_is_not_an_ec2_spot_signal(event: dict[str, Any]):
    assert Ec2InstanceEvent.from_eventbridge(event) is None


def attempt(host: str | None, batch_status: BatchStatus | None = BatchStatus.RUNNING) -> AttemptRecord:
    return AttemptRecord(
        instance_type="g6.xlarge", capacity=CapacityType.SPOT, job_queue="q", status=AttemptStatus.RUNNING,
        batch_job_id="b", batch_status=batch_status, host=host,
    )  # fmt: skip


def test_the_attempts_on_an_instance_are_the_latest_unended_attempts_its_host_agent_placed_there():
    # Given unfinished jobs: two running on the instance, one running elsewhere, one whose attempt there ended,
    # one that ran there before falling back elsewhere, and one whose agent has not reported its host yet
    here = "i-1234567890abcdef0"
    records = [
        ActiveJob(job_id="b-job", attempts={1: attempt(here)}),
        ActiveJob(job_id="a-job", attempts={1: attempt(here, BatchStatus.STARTING)}),
        ActiveJob(job_id="elsewhere", attempts={1: attempt("i-0ther")}),
        ActiveJob(job_id="ended", attempts={1: attempt(here, BatchStatus.FAILED)}),
        ActiveJob(job_id="moved-on", attempts={1: attempt(here, BatchStatus.FAILED), 2: attempt("i-0ther")}),
        ActiveJob(job_id="unreported", attempts={1: attempt(None)}),
    ]

    # When EC2 warns of that instance
    found = attempts_on(records, here)

    # Then only the attempts running there now are told
    assert found == [("a-job", 1), ("b-job", 1)]


def test_the_timeline_note_of_a_signal_is_a_note_and_never_reads_as_a_quarantine():
    # Given the warning's note on a job's timeline
    event = Ec2InstanceEvent.from_eventbridge(WARNING)
    assert event is not None
    entry = TimelineEntry(status=JobStatus.RUNNING, at=event.at, reason=event.note)

    # Then it is a note (no status change), names the host and the signal, and is no quarantine of the host
    assert entry.note
    assert (
        entry.reason
        == "host i-1234567890abcdef0 spot interruption warning: EC2 gave it at 2027-01-15T10:00:00.000Z (terminate)"
    )
    assert HOST_NOTE.match(entry.reason) is None
