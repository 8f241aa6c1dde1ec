"""Each invocation its own execution environment, as far as the handlers' per-request state goes.

Lambda runs one invocation at a time in an execution environment, so a handler module may keep the request it is
serving in module state: Powertools' event handler does, in class attributes of its BaseRouter (`current_event`,
`lambda_context`) and in its resolver's `context` dict (GPU Pilot's api keeps its ports and caller there). The local
cloud runs a function's concurrent invocations side by side, in threads of one process. Without this module two
concurrent API requests would read each other's event and caller, and one's `clear_context()` would empty the
other's (an audit line lost, a caller mistaken for another), which no deployment can do. Here that state is kept per
thread, so concurrent requests stay as isolated as Lambda's environments keep them, and still run at once (the
races between them that DynamoDB's conditions settle remain real).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, MutableMapping
from types import ModuleType
from typing import Any

_ROUTER_REQUEST_STATE = ("current_event", "lambda_context")
_patched = threading.Lock()


class _PerThread:
    """A data descriptor whose value is the current thread's: on BaseRouter for `self.current_event`, and on its
    metaclass for Powertools' own `BaseRouter.current_event = ...`."""

    def __init__(self, local: threading.local, name: str) -> None:
        self._local, self._name = local, name

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        try:
            return getattr(self._local, self._name)
        except AttributeError:
            raise AttributeError(self._name) from None

    def __set__(self, instance: Any, value: Any) -> None:
        setattr(self._local, self._name, value)


class PerThreadDict(MutableMapping[str, Any]):
    """A dict whose items are the current thread's."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _items(self) -> dict[str, Any]:
        items: dict[str, Any] | None = getattr(self._local, "items", None)
        if items is None:
            items = self._local.items = {}
        return items

    def __getitem__(self, key: str) -> Any:
        return self._items()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._items()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._items()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._items()))

    def __len__(self) -> int:
        return len(self._items())


def per_thread_routers() -> None:
    """Powertools' BaseRouter keeps the request being served per thread (once per process)."""
    from aws_lambda_powertools.event_handler import api_gateway

    base = api_gateway.BaseRouter
    with _patched:
        if isinstance(base.__dict__.get(_ROUTER_REQUEST_STATE[0]), _PerThread):
            return
        local = threading.local()
        for name in _ROUTER_REQUEST_STATE:
            setattr(base, name, _PerThread(local, name))
        meta = type(base)
        per_thread_meta = type(
            f"PerThread{meta.__name__}", (meta,), {n: _PerThread(local, n) for n in _ROUTER_REQUEST_STATE}
        )
        # Class-level assignments (Powertools' `BaseRouter.current_event = ...`) go through the metaclass.
        base.__class__ = per_thread_meta  # type: ignore[method-assign]


def isolate(module: ModuleType) -> None:
    """The module's event handlers (Powertools resolvers) keep their request state per thread."""
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

    routers = [value for value in vars(module).values() if isinstance(value, BaseRouter)]
    if not routers:
        return
    per_thread_routers()
    for router in routers:
        if not isinstance(router.context, PerThreadDict):
            router.context = PerThreadDict()  # type: ignore[assignment]
