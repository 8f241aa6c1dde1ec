"""botocore's data files parsed once per process, not once per session.

Every botocore session parses the files it needs again, and a local cloud makes many before it serves a request:
moto's EC2 alone makes three sessions as it is imported (its regions and zones, read while the world file is checked),
then come the embedded AWS's services, the deployment's clients, the fleet simulator's and the handlers'. EC2's model
(4 MB) was parsed seven times while a local cloud started: a second of its four. botocore treats what it loads as
read-only (one session already hands the same objects to all its clients), so every session of the process can share
one parse of each file. `gpupilot serve` shares them before it reads the world, and the embedded AWS from its start
(a bench or test running a local cloud in its own process)."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_parsed: dict[str, Any] = {}
_listed: dict[tuple[Any, ...], Any] = {}
_original: Any = None
_original_listing: Any = None


def share() -> None:
    """From now on, in this process, each data file is parsed by the first session that asks for it."""
    global _original, _original_listing
    from botocore.loaders import JSONFileLoader, Loader

    with _lock:
        if _original is not None:
            return
        _original, _original_listing = JSONFileLoader.load_file, Loader.list_available_services

        def load_file(loader: JSONFileLoader, file_path: str) -> Any:
            with _lock:
                if file_path not in _parsed:
                    _parsed[file_path] = _original(loader, file_path)
                return _parsed[file_path]

        def list_available_services(loader: Loader, type_name: str) -> Any:
            # Each session lists botocore's data directories again: a directory read per service, per session.
            key = (tuple(loader.search_paths), type_name)
            with _lock:
                if key not in _listed:
                    _listed[key] = _original_listing(loader, type_name)
                return list(_listed[key])

        JSONFileLoader.load_file = load_file  # type: ignore[method-assign]
        Loader.list_available_services = list_available_services  # type: ignore[method-assign]


def is_shared() -> bool:
    return _original is not None


def unshare() -> None:
    """Each session parses its own files again (what botocore does by itself)."""
    global _original, _original_listing
    from botocore.loaders import JSONFileLoader, Loader

    with _lock:
        if _original is None:
            return
        JSONFileLoader.load_file = _original  # type: ignore[method-assign]
        Loader.list_available_services = _original_listing  # type: ignore[method-assign]
        _original = _original_listing = None
        _parsed.clear()
        _listed.clear()
