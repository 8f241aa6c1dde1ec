"""The local cloud's time: real time, plus however far it has been advanced.

Everything in the local cloud that waits or ages reads this one clock: the simulated fleet (boots, holds, idle
scale-in, spot reclaims, job runtimes), the compute environments' lifecycle, the reservations' windows, the sweep's
schedule, the workflow's Wait states and timeouts (moto_adaptations.stepfunctions), the handlers' own time, and the
times moto records of what the fleet does (Batch's createdAt, startedAt and stoppedAt, EC2's LaunchTime). It runs at
the rate of real time, so nothing changes for a caller that never advances it; `advance(seconds)` moves all of them
at once, so a test (through `POST /local/clock`) plays a deployment's ten-minute grace period in no time, and never
races real seconds. `--speedup` scales simulated durations (a job's runtime, the workflow's waits) measured on this
clock: a 60 s Wait state at speedup 60 lasts one second of it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

# A wait for an event of its own looks at the clock this often too: an advance past its end ends it within this
# long. (A wait for time alone is woken by the advance at once.)
ADVANCE_NOTICED_WITHIN_SECONDS = 0.2


class LocalClock:
    """Real time plus an offset that only grows."""

    def __init__(self) -> None:
        self._advanced = 0.0
        self._advancing = threading.Condition()

    @property
    def advanced_seconds(self) -> float:
        """How far ahead of real time the clock is."""
        return self._advanced

    def time(self) -> float:
        """Epoch seconds, as `time.time()` gives them."""
        return time.time() + self._advanced

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, as `time.monotonic()` gives them: for durations."""
        return time.monotonic() + self._advanced

    def now(self) -> datetime:
        """The current moment, in UTC."""
        return datetime.fromtimestamp(self.time(), tz=UTC)

    def local_now(self) -> datetime:
        """The current moment as naive local time, as `datetime.now()` gives it (what moto records)."""
        return datetime.fromtimestamp(self.time())

    def advance(self, seconds: float) -> float:
        """Move the clock `seconds` ahead (never back): every wait on it that is now over ends. Its new `time()`."""
        if not 0 <= seconds < float("inf"):
            raise ValueError(f"the local cloud's clock moves forward by a finite number of seconds, not {seconds!r}")
        with self._advancing:
            self._advanced += seconds
            self._advancing.notify_all()
        return self.time()

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """Wait `seconds` of this clock, or until `stop` is set: whether `stop` was set. An advance past the end ends
        the wait at once; `stop` is noticed within ADVANCE_NOTICED_WITHIN_SECONDS."""
        deadline = self.monotonic() + seconds
        with self._advancing:
            while True:
                if stop is not None and stop.is_set():
                    return True
                left = deadline - self.monotonic()
                if left <= 0:
                    return False
                self._advancing.wait(left if stop is None else min(left, ADVANCE_NOTICED_WITHIN_SECONDS))

    def wait(self, event: threading.Event, seconds: float | None) -> bool:
        """Wait until `event` is set (True) or `seconds` of this clock have passed (False; None: no limit). Setting the
        event ends the wait at once; an advance past the end ends it within ADVANCE_NOTICED_WITHIN_SECONDS."""
        if seconds is None:
            return threading.Event.wait(event)
        deadline = self.monotonic() + seconds
        while True:
            left = deadline - self.monotonic()
            if left <= 0:
                return event.is_set()
            if threading.Event.wait(event, min(left, ADVANCE_NOTICED_WITHIN_SECONDS)):
                return True

    def event_class(self) -> type[threading.Event]:
        """threading.Event whose timed waits last seconds of this clock (for code that makes its own events)."""
        clock = self

        class ClockedEvent(threading.Event):
            def wait(self, timeout: float | None = None) -> bool:
                return clock.wait(self, timeout)

        return ClockedEvent


@contextlib.contextmanager
def handlers_read(clock: LocalClock) -> Iterator[None]:
    """The handlers, in this process, read `clock` as their time (functions.shared.domain.core.clock.now), as a Lambda
    reads its region's: their ages, graces and deadlines pass as the local cloud's time does."""
    from functions.shared.domain.core import clock as handlers_clock

    original = handlers_clock.now
    handlers_clock.now = clock.now
    try:
        yield
    finally:
        handlers_clock.now = original
