"""The progress a job makes while the CLI waits for it, on stderr: a live line on a terminal, plain lines
elsewhere."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from gpupilot.cli.render.waiting import reason_key, status_line, waiting_reason


class WaitProgress:
    """What a job does while the CLI waits for it, on stderr: a live status line (rich) when stderr is a terminal,
    else one plain line each time the status or the wait reason changes (`plain=False`: none). Lines meant for
    stdout go through `stdout` so that they never break the live line."""

    def __init__(self, stream: TextIO | None = None, plain: bool = True, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.plain = plain
        # A terminal that cannot move its cursor (TERM=dumb: an editor's shell, some CI consoles) gets plain lines.
        terminal = self.stream.isatty() and os.environ.get("TERM") != "dumb"
        self.live_wanted = terminal if live is None else live
        self._seen: tuple[str, int | None, str | None, str | None] | None = None
        self._live: Any = None
        self._line: _LiveLine | None = None

    def __enter__(self) -> WaitProgress:
        if self.live_wanted:
            from rich.console import Console
            from rich.live import Live

            self._line = _LiveLine()
            console = Console(file=self.stream, force_terminal=True)
            self._live = Live(self._line, console=console, transient=True, redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def update(self, job: dict[str, Any], elapsed_seconds: float) -> None:
        """The job as the last poll saw it, `elapsed_seconds` into the status it is in. A plain line only when
        something changed: the status, the attempt, what the job waits for (not a diagnosis made again with newer
        numbers)."""
        if self._line is not None:
            self._line.show(job, elapsed_seconds)
            return
        seen = (job["status"], job.get("attempt"), job.get("instance_type"), reason_key(waiting_reason(job)))
        if self.plain and seen != self._seen:
            print(status_line(job, elapsed_seconds), file=self.stream, flush=True)
        self._seen = seen

    def stdout(self, write: Callable[[str], None]) -> Callable[[str], None]:
        """`write`, pausing the live line around it (stdout and stderr are often the same terminal)."""

        def paused(text: str) -> None:
            if self._live is None:
                write(text)
                return
            self._live.stop()
            write(text)
            sys.stdout.flush()
            self._live.start(refresh=True)

        return paused


class _LiveLine:
    """The live line's content: the job's last state, with the elapsed time counting on between polls."""

    def __init__(self) -> None:
        import time

        from rich.spinner import Spinner

        self._clock = time.monotonic
        self._spinner = Spinner("dots")
        self._job: dict[str, Any] | None = None
        self._elapsed_at = (0.0, self._clock())

    def show(self, job: dict[str, Any], elapsed_seconds: float) -> None:
        self._job = job
        self._elapsed_at = (elapsed_seconds, self._clock())

    def __rich__(self) -> Any:
        from rich.text import Text

        seconds, at = self._elapsed_at
        now = self._clock()
        words = "waiting for the job" if self._job is None else status_line(self._job, seconds + now - at)
        # One line, cut to the terminal's width: a wrapped line could not be redrawn in place.
        frame = self._spinner.render(now)  # a Text: the spinner has no text of its own
        return Text.assemble(frame if isinstance(frame, Text) else "", " ", words, no_wrap=True, overflow="ellipsis")
