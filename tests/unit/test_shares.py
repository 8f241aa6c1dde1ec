"""The share of an instance no job held: with the jobs' own shares, it adds up to what the instance cost while it
served them, however the jobs shared it and in whatever order they were priced."""

from __future__ import annotations

from decimal import Decimal

from functions.shared.domain.cost.shares import MAX_OCCUPANTS, SharedInstance, occupant, occupy, unused

HOURLY = 21.957642  # p4d.24xlarge, us-east-1 on demand: 8 A100s


def ledger() -> SharedInstance:
    return SharedInstance(instance_id="i-0abc", pool="gpupilot-od-p4d", instance_type="p4d.24xlarge", day="2026-11-22")


def ran(stop: str, seconds: float, share: float = 0.125) -> object:
    return occupant(stop, seconds, share, HOURLY)


def instance_cost(seconds: float) -> Decimal:
    return Decimal(repr(HOURLY)) * Decimal(repr(seconds)) / 3600


def test_a_job_alone_on_an_eight_gpu_instance_leaves_seven_eighths_of_it_unused():
    # Given a 1-GPU job that ran an hour alone on a p4d.24xlarge
    # When it is added to the instance's ledger
    written = occupy(ledger(), "job-a#1", ran("2026-11-22T11:00:00.000Z", 3600))

    # Then seven eighths of the instance's hour are unused: the job's eighth and they make the whole hour
    assert written is not None
    assert written.usd == float((instance_cost(3600) * Decimal("0.875")).quantize(Decimal("1e-12")))
    assert written.seconds == 3150.0
    [entry] = written.entries()
    assert (entry.reason, entry.usd) == ("unused_share", written.usd)


def test_two_jobs_side_by_side_share_the_instance_and_leave_six_eighths_unused():
    # Given two 1-GPU jobs that ran the same hour on one p4d.24xlarge
    first = occupy(ledger(), "job-a#1", ran("2026-11-22T11:00:00.000Z", 3600))
    assert first is not None
    both = occupy(first, "job-b#1", ran("2026-11-22T11:00:00.000Z", 3600))

    # Then six eighths of the hour are unused, not seven and seven
    assert both is not None and both.seconds == 2700.0


def test_jobs_that_overlap_in_part_leave_unused_what_neither_held_at_each_moment():
    # Given one job from 10:00 to 10:02 and another from 10:01 to 10:03, an eighth each
    one = occupy(ledger(), "a#1", ran("2026-11-22T10:02:00.000Z", 120))
    assert one is not None
    two = occupy(one, "b#1", ran("2026-11-22T10:03:00.000Z", 120))

    # Then 7/8 of the first and last minutes and 6/8 of the middle one are unused
    assert two is not None and two.seconds == 60 * 0.875 + 60 * 0.75 + 60 * 0.875


def test_the_order_jobs_are_priced_in_does_not_change_the_unused_share():
    a, b = ran("2026-11-22T10:02:00.000Z", 120), ran("2026-11-22T10:03:00.000Z", 120, share=0.5)
    ab = occupy(occupy(ledger(), "a#1", a) or ledger(), "b#1", b)
    ba = occupy(occupy(ledger(), "b#1", b) or ledger(), "a#1", a)
    assert ab is not None and ba is not None and (ab.seconds, ab.usd) == (ba.seconds, ba.usd)


def test_an_attempt_priced_twice_is_counted_once():
    once = occupy(ledger(), "a#1", ran("2026-11-22T10:02:00.000Z", 120))
    assert once is not None and occupy(once, "a#1", ran("2026-11-22T10:02:00.000Z", 120)) is None


def test_jobs_that_hold_more_than_the_whole_between_them_leave_nothing_unused():
    # Given two jobs each holding all the vCPUs of the instance at once (share 1 each)
    seconds, usd = unused([ran("2026-11-22T10:01:00.000Z", 60, 1.0), ran("2026-11-22T10:01:00.000Z", 60, 1.0)])
    # Then nothing is unused (and nothing is negative), and no waste entry says otherwise
    assert (seconds, usd) == (0, 0)
    full = occupy(ledger(), "a#1", ran("2026-11-22T10:01:00.000Z", 60, 1.0))
    assert full is not None and full.entries() == []


def test_a_ledger_of_many_attempts_folds_the_old_ones_and_keeps_its_total():
    # Given more attempts, one after another, than a ledger keeps
    written = ledger()
    for number in range(MAX_OCCUPANTS + 1):
        stop = f"2026-11-22T{10 + number // 60:02d}:{number % 60:02d}:30.000Z"
        written = occupy(written, f"job#{number}", ran(stop, 30)) or written

    # Then it keeps fewer, and its unused share is still 7/8 of every attempt's 30 s
    assert len(written.occupants) <= MAX_OCCUPANTS
    assert written.seconds == (MAX_OCCUPANTS + 1) * 30 * 0.875
