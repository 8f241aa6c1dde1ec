"""What every boto3 adapter shares: a client it was given (tests), or the process's client for its service."""

from __future__ import annotations

from typing import Any, ClassVar

from functions.shared.adapters.clients import client


class ClientAdapter:
    service: ClassVar[str]

    def __init__(self, aws_client: Any | None = None) -> None:
        self._given = aws_client

    @property
    def _aws(self) -> Any:
        return self._given or client(self.service)
