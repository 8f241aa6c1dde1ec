"""A job's GPU utilisation over an attempt, from samples of the GPUs it holds: what the job record shows
(`gpu_utilization`) and CloudWatch's minute by minute. Bounded memory, whatever the job's length: a histogram of
whole percents gives the 95th percentile."""

from __future__ import annotations

from typing import Any

from host_agent.model import GpuSample

# A GPU below this utilisation is idle: its time is waste (`gpu_idle`), and a job whose GPUs are all idle for its
# idle_policy's minutes is warned of or cancelled.
IDLE_BELOW = 0.05


class Utilization:
    """The samples of one job's GPUs, summed as they come."""

    def __init__(self) -> None:
        self.rounds = 0
        self.count = 0
        self.total = 0.0
        self.histogram = [0] * 101
        self.max_memory_mib = 0.0
        self.idle_gpu_seconds = 0.0
        self.gpus = 0
        # When the job's GPUs were last all seen idle after being busy (None: busy at the last sample).
        self.idle_since: float | None = None
        self._window: list[float] = []

    def add(self, gpus: list[GpuSample], at: float, interval: float) -> None:
        """One sampling of the job's GPUs at `at`, each standing for the `interval` seconds since the last."""
        if not gpus:
            return
        self.rounds += 1
        self.gpus = max(self.gpus, len(gpus))
        busy = False
        for gpu in gpus:
            share = min(1.0, max(0.0, gpu.utilization))
            self.count += 1
            self.total += share
            self.histogram[round(share * 100)] += 1
            self.max_memory_mib = max(self.max_memory_mib, gpu.memory_used_mib)
            self._window.append(share * 100)
            if share < IDLE_BELOW:
                self.idle_gpu_seconds += interval
            else:
                busy = True
        if busy:
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = at

    def idle_for(self, now: float) -> float:
        """How long the job's GPUs have all been idle, as of `now` (0 while any is busy)."""
        return 0.0 if self.idle_since is None else max(0.0, now - self.idle_since)

    def percentile_percent(self, fraction: float) -> int:
        """The utilisation, in whole percents, that `fraction` of the samples are at or under."""
        wanted = fraction * self.count
        seen = 0
        for percent, times in enumerate(self.histogram):
            seen += times
            if times and seen >= wanted:
                return percent
        return 0

    def summary(self) -> dict[str, Any] | None:
        """{mean, p95, max_memory_gib, idle_seconds, samples, idle_since (epoch or None)}, None before any sample. Mean
        and p95 are percents. idle_seconds is the idle GPU-seconds over the job's GPUs: the seconds the job held idle
        GPUs."""
        if not self.count:
            return None
        return {
            "mean": round(self.total / self.count * 100, 2),  # percent, as the job record shows it
            "p95": float(self.percentile_percent(0.95)),
            "max_memory_gib": round(self.max_memory_mib / 1024, 3),
            "idle_seconds": round(self.idle_gpu_seconds / max(1, self.gpus), 1),
            "samples": self.rounds,
            "idle_since": self.idle_since,
        }

    def drain_window(self) -> dict[str, float] | None:
        """The utilisation percents sampled since the last call, as CloudWatch's StatisticValues (None: none)."""
        window, self._window = self._window, []
        if not window:
            return None
        return {"SampleCount": float(len(window)), "Sum": sum(window), "Minimum": min(window), "Maximum": max(window)}
