"""A command of the real `gpupilot` run at a pseudo-terminal of a given width, through a local cloud: what it shows,
and what is typed into it."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time

from tests.e2e.conftest import GPUPILOT, PATIENCE_SECONDS, RunningCloud

COLUMNS = 80


class Terminal:
    """A command run at a pseudo-terminal of `columns` columns (COLUMNS unset unless `environment` sets it): what it
    shows, and what is typed into it."""

    def __init__(
        self, cloud: RunningCloud, *args: str, columns: int = COLUMNS, environment: dict[str, str] | None = None
    ) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env |= {"GPUPILOT_ENDPOINT": cloud.api_url, "TERM": "xterm"} | (environment or {})
        self.process = subprocess.Popen([GPUPILOT, *args], stdin=slave, stdout=slave, stderr=slave, env=env)
        os.close(slave)
        self.shown = ""

    def read_until(self, text: str, timeout: float = PATIENCE_SECONDS) -> str:
        """What the terminal shows once `text` appears (or the command ends)."""
        deadline = time.monotonic() + timeout
        while text not in self.shown and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.shown += os.read(self.master, 4096).decode(errors="replace").replace("\r\n", "\n")
                except OSError:  # the command ended and closed the terminal
                    break
        return self.shown

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def finish(self, timeout: float = PATIENCE_SECONDS) -> int:
        self.read_until("\0never\0", timeout=2)
        code = self.process.wait(timeout=timeout)
        self.read_until("\0never\0", timeout=0.5)
        os.close(self.master)
        return code
