"""The port to what jobs printed (CloudWatch Logs). Part of functions/shared/ports.py (which re-exports it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.logs import LogPage


class JobLogs(Protocol):
    """What jobs printed: CloudWatch Logs streams."""

    def read(self, log_group: str, log_stream: str, next_token: str | None) -> LogPage:
        """A page of the stream, oldest first, from `next_token` (None: its start); empty while it does not exist."""
        ...


__all__ = ["JobLogs"]
