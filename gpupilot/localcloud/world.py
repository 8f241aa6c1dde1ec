"""The world file: what the simulated AWS offers and how its GPU fleet behaves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class WorldError(ValueError):
    """The world file cannot be read or does not validate; the message names the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InstanceTypeWorld(_Strict):
    offered: bool = Field(default=True, description="false: not offered in any zone")
    zones: list[str] | None = Field(default=None, description="Zones that offer it (default: all)")
    capacity: Literal["available", "none"] = Field(
        default="available", description="none: jobs stay RUNNABLE with CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
    )
    ecs_agent: Literal["registers", "never_registers"] = "registers"
    gpu_registration: Literal["ok", "missing"] = "ok"


class SpotWorld(_Strict):
    placement_score: int = Field(default=9, ge=1, le=10)
    hourly_usd: float | None = Field(default=None, gt=0)


class JobsWorld(_Strict):
    runtime_seconds: float = Field(default=2, ge=0, description="Simulated runtime of every job")
    exit_code: int = Field(default=0, ge=0, le=255)


class World(_Strict):
    region: str = "us-east-1"
    zones: list[str] = Field(default_factory=lambda: ["us-east-1a", "us-east-1b"], min_length=1)
    instance_types: dict[str, InstanceTypeWorld] = Field(default_factory=dict)
    spot: dict[str, SpotWorld] = Field(default_factory=dict)
    jobs: JobsWorld = Field(default_factory=JobsWorld)

    def instance(self, instance_type: str) -> InstanceTypeWorld:
        return self.instance_types.get(instance_type) or InstanceTypeWorld()


def load_world(path: str | Path | None) -> World:
    """The world in `path` (JSON), or the default world; WorldError names what is wrong."""
    if path is None:
        return World()
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as error:
        raise WorldError(f"cannot read world file {path}: {error.strerror}") from error
    except ValueError as error:
        raise WorldError(f"world file {path} is not valid JSON: {error}") from error
    try:
        return World.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise WorldError(f"world file {path}: {where}: {first['msg']}") from error
