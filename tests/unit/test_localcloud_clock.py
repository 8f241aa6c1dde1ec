"""The local cloud's clock: real time until it is advanced, then ahead by the advance; whatever waits on it sees the
advance at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from functions.shared.domain.core import clock as handlers_clock
from gpupilot.localcloud.clock import LocalClock, handlers_read

DAY = 86400.0
# How long a test waits for a thread to see what it waits for: generous for a busy machine, never reached when it works.
PATIENCE_SECONDS = 60


def in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """`work()` run in a thread of its own; its answer lands in the list."""
    answers: list[object] = []
    thread = threading.Thread(target=lambda: answers.append(work()), daemon=True)
    thread.start()
    return thread, answers


def test_the_clock_is_real_time_until_advanced_and_then_ahead_by_the_advance() -> None:
    clock = LocalClock()
    assert abs(clock.time() - time.time()) < 1 and abs(clock.monotonic() - time.monotonic()) < 1

    clock.advance(DAY)
    clock.advance(30)

    assert clock.advanced_seconds == DAY + 30
    assert abs(clock.time() - (time.time() + DAY + 30)) < 1
    assert abs(clock.monotonic() - (time.monotonic() + DAY + 30)) < 1
    assert abs((clock.now() - datetime.now(UTC)).total_seconds() - (DAY + 30)) < 1


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), float("inf")])
def test_the_clock_never_moves_back_nor_without_end(seconds: float) -> None:
    clock = LocalClock()
    with pytest.raises(ValueError, match="forward"):
        clock.advance(seconds)
    assert clock.advanced_seconds == 0


def test_a_sleep_of_a_day_ends_when_the_clock_is_advanced_past_it() -> None:
    # Given a thread sleeping a day on the clock
    clock = LocalClock()
    sleeper, answers = in_thread(lambda: clock.sleep(DAY))

    # When the clock is advanced a day
    clock.advance(DAY)

    # Then the sleep ended (not stopped: its time passed)
    sleeper.join(PATIENCE_SECONDS)
    assert answers == [False]


def test_a_sleep_ends_when_it_is_stopped() -> None:
    clock, stop = LocalClock(), threading.Event()
    sleeper, answers = in_thread(lambda: clock.sleep(DAY, stop))
    stop.set()
    sleeper.join(PATIENCE_SECONDS)
    assert answers == [True]


def test_an_event_waited_on_for_a_day_times_out_when_the_clock_passes_the_day_and_ends_at_once_when_set() -> None:
    # Given two threads waiting a day for events of their own, on the clock
    clock = LocalClock()
    clocked = clock.event_class()
    timed_out, set_later = clocked(), clocked()
    first, first_answer = in_thread(lambda: timed_out.wait(DAY))
    second, second_answer = in_thread(lambda: set_later.wait(DAY))

    # When one event is set, and the clock then passes the day
    set_later.set()
    second.join(PATIENCE_SECONDS)
    clock.advance(DAY)
    first.join(PATIENCE_SECONDS)

    # Then the set one's wait said so, and the other's timed out
    assert (second_answer, first_answer) == ([True], [False])


def test_within_handlers_read_the_functions_time_is_the_clocks() -> None:
    # Given a clock a day ahead
    clock = LocalClock()
    clock.advance(DAY)

    # When the functions read their time, inside and after the block
    with handlers_read(clock):
        inside = handlers_clock.now_iso()
    after = handlers_clock.now_iso()

    # Then inside it is the clock's, a day ahead; after, real time again
    real = datetime.now(UTC)
    assert abs((handlers_clock.parse_iso(inside) - real).total_seconds() - DAY) < 60
    assert abs((handlers_clock.parse_iso(after) - real).total_seconds()) < 60
