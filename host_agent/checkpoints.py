"""A job's checkpoint directory on the host, and its copy in S3 under the job's prefix.

Each upload writes the files that changed under a prefix of its own, then the manifest that names every file of the
checkpoint (changed or kept from an earlier upload) last: the manifest is the checkpoint, so an upload cut short by
the reclaim leaves the previous checkpoint whole. A restore reads the manifest and fetches what it names.

The wrapper around the job's command and the agent talk through marker files in the directory's `.gpupilot/` folder
(never uploaded): `ready` (the directory is prepared: the program may start), `restoring`, `resumed` (a checkpoint was
restored), `interrupted` (the host was told it will be reclaimed: the wrapper keeps the container up after the program
ends, so that Batch sees the host go, not the program's exit) and `exited` (the program has ended: its checkpoint is
written).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import TYPE_CHECKING, Any, Callable

from host_agent.report import iso

if TYPE_CHECKING:
    from host_agent.ports import Cloud

MARKERS = ".gpupilot"
READY, RESTORING, RESUMED, INTERRUPTED, EXITED = "ready", "restoring", "resumed", "interrupted", "exited"
MANIFEST = "manifest.json"
PART = ".gpupilot-part"

File = tuple[str, int, int]


def prefix(job_id: str) -> str:
    """Where a job's checkpoints are kept in the bucket (the instance role may write only under checkpoints/)."""
    return f"checkpoints/{job_id}/"


def files(root: str) -> list[File]:
    """(relative path, size, mtime in ns) of every regular file under `root`, markers and links left out."""
    found: list[File] = []
    for directory, folders, names in os.walk(root):
        folders[:] = sorted(f for f in folders if not (directory == root and f == MARKERS))
        for name in names:
            path = os.path.join(directory, name)
            if os.path.islink(path) or name.endswith(PART):
                continue
            try:
                stat = os.stat(path)
            except OSError:
                continue  # removed while we looked: the next look sees what is there
            found.append((os.path.relpath(path, root).replace(os.sep, "/"), stat.st_size, stat.st_mtime_ns))
    return sorted(found)


def mark(root: str, name: str, text: str = "") -> None:
    os.makedirs(os.path.join(root, MARKERS), exist_ok=True)
    with open(os.path.join(root, MARKERS, name), "w") as marker:
        marker.write(text)


def marked(root: str, name: str) -> bool:
    return os.path.exists(os.path.join(root, MARKERS, name))


def unmark(root: str, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(root, MARKERS, name))


def upload(
    cloud: Cloud, region: str, bucket: str, root: str, previous: dict[str, Any] | None, meta: dict[str, Any],
    stamp: str, clock: Callable[[], float],
) -> dict[str, Any]:  # fmt: skip
    """Upload the directory's changed files under `<prefix><stamp>/`, then its manifest (`meta`, when the files were
    all uploaded, and every file); returns the manifest."""
    base = prefix(meta["job_id"])
    kept = {entry["path"]: entry for entry in (previous or {}).get("files", [])}
    entries = []
    for path, size, mtime in files(root):
        old = kept.get(path)
        if old is not None and old["size"] == size and old["mtime_ns"] == mtime:
            entries.append(old)
            continue
        key = f"{base}{stamp}/{path}"
        cloud.put_file(region, bucket, key, os.path.join(root, path))
        entries.append({"path": path, "key": key, "size": size, "mtime_ns": mtime})
    manifest = dict(meta, uploaded_at=iso(clock()), files=entries)
    cloud.put_bytes(region, bucket, base + MANIFEST, json.dumps(manifest, sort_keys=True).encode())
    return manifest


def restore(cloud: Cloud, region: str, bucket: str, job_id: str, root: str) -> dict[str, Any] | None:
    """Fetch the job's latest checkpoint into `root`; its manifest, or None when the job has none."""
    key = prefix(job_id) + MANIFEST
    if not cloud.exists(region, bucket, key):
        return None
    manifest: dict[str, Any] = json.loads(cloud.get_bytes(region, bucket, key).decode())
    for entry in manifest.get("files", []):
        target = _inside(root, entry["path"])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # Fetched beside, renamed when whole: a restore cut short leaves no half file under the program's name.
        cloud.get_file(region, bucket, entry["key"], target + PART)
        os.replace(target + PART, target)
        # Its upload's mtime: a restored file the program leaves alone is not uploaded again.
        os.utime(target, ns=(entry["mtime_ns"], entry["mtime_ns"]))
    return manifest


def _inside(root: str, path: str) -> str:
    """`path` (a manifest's, relative) under `root`; a path that would leave it is refused."""
    target = os.path.normpath(os.path.join(root, path))
    if os.path.isabs(path) or not target.startswith(os.path.normpath(root) + os.sep):
        raise ValueError(f"checkpoint file {path!r} is outside the checkpoint directory")
    return target
