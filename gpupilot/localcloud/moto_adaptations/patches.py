"""The machinery every adaptation uses: attribute replacements on moto, undone in reverse order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Patches:
    """Attribute replacements, undone in reverse order."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def replace(self, owner: Any, name: str, value: Any) -> Any:
        original = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, original))
        return original

    def on_exit(self, undo: Callable[[], None]) -> None:
        self._undo.append(undo)

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()
