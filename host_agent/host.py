"""The host's adapters: the instance metadata service (IMDSv2), Docker and the ECS agent's introspection API, and
`nvidia-smi`. Every command runs bounded: its output goes to a file, it is waited for a few seconds at most, and one
that hangs (nvidia-smi can, in the kernel, past any signal) is left behind rather than waited on, and not run again
while it hangs."""

from __future__ import annotations

import datetime
import json
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Callable

from host_agent.model import Container, GpuSample, SpotNotice

IMDS = "http://169.254.169.254"
ECS_INTROSPECTION = "http://localhost:51678/v1/tasks"
TASK_LABEL = "com.amazonaws.ecs.task-arn"
TOKEN_SECONDS = 21600


class Imds:
    """Implements ports.Metadata, with IMDSv2 session tokens (the launch template requires them)."""

    def __init__(self, base: str = IMDS, timeout: float = 2.0, clock: Callable[[], float] = time.time) -> None:
        self._base, self._timeout, self._clock = base.rstrip("/"), timeout, clock
        self._token: tuple[str, float] | None = None

    def _session(self) -> str | None:
        if self._token is None or self._token[1] - self._clock() < 60:
            ttl = {"X-aws-ec2-metadata-token-ttl-seconds": str(TOKEN_SECONDS)}
            request = urllib.request.Request(f"{self._base}/latest/api/token", method="PUT", headers=ttl)
            try:
                with urllib.request.urlopen(request, timeout=self._timeout) as answer:
                    self._token = (answer.read().decode(), self._clock() + TOKEN_SECONDS)
            except (urllib.error.URLError, OSError):
                return None
        return self._token[0]

    def get(self, path: str, tree: str = "meta-data") -> str | None:
        """A meta-data path's text; None when it is absent (404) or the service does not answer."""
        token = self._session()
        headers = {"X-aws-ec2-metadata-token": token} if token else {}
        request = urllib.request.Request(f"{self._base}/latest/{tree}/{path}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:
                return str(answer.read().decode())
        except urllib.error.HTTPError as error:
            if error.code == 401:
                self._token = None  # expired or refused: a new one next time
            return None
        except (urllib.error.URLError, OSError):
            return None

    def instance_id(self) -> str:
        return self.get("instance-id") or "unknown"

    def instance_type(self) -> str:
        return self.get("instance-type") or "unknown"

    def region(self) -> str:
        return self.get("placement/region") or "unknown"

    def account(self) -> str | None:
        """The instance's account (its identity document): every bucket the agent uses must be the account's."""
        found = _json(self.get("instance-identity/document", "dynamic"))
        return str(found["accountId"]) if found and found.get("accountId") else None

    def spot_notice(self) -> SpotNotice | None:
        found = _json(self.get("spot/instance-action"))
        return SpotNotice(str(found.get("action", "")), str(found.get("time", ""))) if found else None


def bounded(args: list[str], seconds: float) -> tuple[int, str] | None:
    """(exit code, output) of a command that ended within `seconds`; None when it did not (it is killed, and left
    to end on its own: a process stuck in the kernel cannot be waited for)."""
    with tempfile.TemporaryFile() as output:
        try:
            process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.DEVNULL,
                                       start_new_session=True)  # fmt: skip
        except OSError:
            return None
        deadline = time.monotonic() + seconds
        while process.poll() is None:
            if time.monotonic() >= deadline:
                process.kill()
                threading.Thread(target=process.wait, daemon=True).start()
                return None
            time.sleep(0.05)
        output.seek(0)
        return process.returncode, output.read().decode("utf-8", "replace")


class DockerContainers:
    """Implements ports.Containers with the `docker` command; the ECS agent's introspection API says when each task
    was first listed (its image pull's start, within a poll)."""

    def __init__(
        self, docker: str = "docker", introspection: str = ECS_INTROSPECTION, timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self._docker, self._introspection, self._timeout, self._clock = docker, introspection, timeout, clock
        self._first_seen: dict[str, float] = {}

    def running(self) -> list[Container] | None:
        self._poll_tasks()
        listed = bounded([self._docker, "ps", "--no-trunc", "--quiet"], self._timeout)
        if listed is None or listed[0] != 0:
            return None
        ids = listed[1].split()
        if not ids:
            return []
        inspected = bounded([self._docker, "inspect", *ids], self._timeout)
        if inspected is None:
            return None
        try:
            described = json.loads(inspected[1] or "[]")
        except ValueError:
            return None
        return [self._container(c) for c in described if (c.get("State") or {}).get("Running")]

    def _container(self, described: dict) -> Container:
        config = described.get("Config") or {}
        env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
        mounts = {m["Destination"]: m["Source"] for m in described.get("Mounts") or [] if m.get("Type") == "bind"}
        created = _docker_time(described.get("Created"))
        first = self._first_seen.get((config.get("Labels") or {}).get(TASK_LABEL, ""))
        started = first if first is not None and created is not None and first <= created else None
        return Container(str(described["Id"]), env, mounts, created, started)

    def _poll_tasks(self) -> None:
        try:
            with urllib.request.urlopen(self._introspection, timeout=2) as answer:
                tasks = json.loads(answer.read().decode()).get("Tasks") or []
        except (urllib.error.URLError, OSError, ValueError):
            return
        now, listed = self._clock(), {str(task.get("Arn")) for task in tasks}
        for arn in listed:
            self._first_seen.setdefault(arn, now)
        for arn in [a for a in self._first_seen if a not in listed]:
            del self._first_seen[arn]

    def signal(self, container_id: str, signal: str) -> bool:
        done = bounded([self._docker, "kill", f"--signal={signal}", container_id], self._timeout)
        return done is not None and done[0] == 0


class NvidiaSmi:
    """Implements ports.Gpus with `nvidia-smi --query-gpu`. After a call that hung, none for a minute: a driver that
    hangs would otherwise gather a stuck process every sample."""

    QUERY = ["--query-gpu=index,uuid,utilization.gpu,memory.used", "--format=csv,noheader,nounits"]
    BACKOFF_SECONDS = 60.0

    def __init__(self, command: str = "nvidia-smi", timeout: float = 8.0,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self._command, self._timeout, self._clock = command, timeout, clock
        self._quiet_until = 0.0

    def sample(self) -> list[GpuSample] | None:
        if self._clock() < self._quiet_until:
            return None
        answered = bounded([self._command, *self.QUERY], self._timeout)
        if answered is None:
            self._quiet_until = self._clock() + self.BACKOFF_SECONDS
            return None
        if answered[0] != 0:
            return None
        samples = []
        for line in answered[1].splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != 4 or not fields[0].isdigit():
                continue
            samples.append(GpuSample(fields[1], int(fields[0]), _number(fields[2]) / 100, _number(fields[3])))
        return samples


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0  # "[N/A]", "[Not Supported]"


def _json(text: str | None) -> dict | None:
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _docker_time(text: str | None) -> float | None:
    """Docker's RFC 3339 time with nanoseconds, as epoch seconds."""
    if not text:
        return None
    whole, _, rest = text.rstrip("Z").partition(".")
    fraction = float("0." + "".join(c for c in rest if c.isdigit())) if rest else 0.0
    try:
        moment = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    return moment.timestamp() + fraction
