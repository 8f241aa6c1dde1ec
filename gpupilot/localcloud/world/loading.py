"""The world file read: its JSON validated, every error explained in one line naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from gpupilot.localcloud.world.base import WorldError
from gpupilot.localcloud.world.model import World


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
        raise WorldError(f"world file {path}: {_explained(error.errors()[0])}") from error


def _explained(error: ErrorDetails) -> str:
    """One line naming the field: an unknown key lists the valid ones; our checks' messages name their own."""
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "value_error":  # a model check: its message names the field
        message = str(error["ctx"]["error"]) if "ctx" in error else error["msg"]
        return f"{where}: {message}" if where else message
    if error["type"] == "extra_forbidden":
        valid = _keys_at(error["loc"][:-1])
        return f"{where}: unknown key; valid: {', '.join(valid)}"
    return f"{where or '(top level)'}: {error['msg']}"


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the model at `loc` (a path into World, map keys included) accepts."""
    shape: Any = World
    for part in loc:
        if isinstance(shape, type) and issubclass(shape, BaseModel):
            shape = shape.model_fields[str(part)].annotation
        elif get_origin(shape) is dict:
            shape = get_args(shape)[1]
        shape = next((arg for arg in get_args(shape) if arg is not type(None)), shape) if _optional(shape) else shape
    return list(shape.model_fields) if isinstance(shape, type) and issubclass(shape, BaseModel) else []


def _optional(shape: Any) -> bool:
    return type(None) in get_args(shape)
