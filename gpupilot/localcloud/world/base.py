"""What every section of the world file shares: unknown keys refused, and the error that names what is wrong."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class WorldError(ValueError):
    """The world file cannot be read or does not validate; the message names the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
