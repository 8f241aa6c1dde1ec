"""What one route of the HTTP API is made of: its operation, path, models, query parameters and answers
(functions/shared/api/contract.py holds the table of them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from functions.shared.domain.core.vocabulary import Action


@dataclass(frozen=True)
class QueryParam:
    name: str
    description: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "string"})
    required: bool = False


@dataclass(frozen=True)
class Route:
    """One operation of the API (paths use API Gateway's `{param}` syntax)."""

    operation_id: str
    method: str
    path: str
    summary: str
    response: type[BaseModel]
    action: Action
    status: int = 200
    body: type[BaseModel] | None = None
    query: tuple[QueryParam, ...] = ()
    errors: tuple[int, ...] = (400,)
    headers: tuple[QueryParam, ...] = ()
    csv: bool = False  # also answers text/csv when asked (Accept)

    @property
    def json_body(self) -> bool:
        return self.body is not None

    @property
    def resolver_path(self) -> str:
        """The path in Powertools' syntax (`<param>`)."""
        return self.path.replace("{", "<").replace("}", ">")
