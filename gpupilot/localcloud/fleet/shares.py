"""Fair-share queues: Batch starts the RUNNABLE jobs of a queue with a scheduling policy share by share, the next from
the share whose usage is least for its weight (functions/shared/domain/teams/shares.py, next_share), first in, first
out within a share.

A simplification of Batch's scheduler: usage here is the vCPUs a share's jobs hold now (STARTING or RUNNING) in the
queue, where Batch sums the vCPU-seconds of running and recently finished jobs, decayed over the policy's
shareDecaySeconds ("Diving Deeper into Fair-Share Scheduling in AWS Batch", AWS HPC Blog), and ignores
computeReservation (GPU Pilot's policy sets it to 0). With GPU Pilot's shortest decay the two agree on who goes next
while jobs of several shares wait; they differ only in how long a share's finished jobs still count against it.
"""

from __future__ import annotations

from functions.shared.domain.teams.shares import next_share, weights_of
from gpupilot.localcloud.fleet.placement import FleetPlacement
from gpupilot.localcloud.fleet.records import SimJob
from gpupilot.localcloud.moto_adaptations.batch_shares import policy_of_queue, share_of_job

HOLDING = ("STARTING", "RUNNING")


class FleetShares(FleetPlacement):
    """The pass that starts the jobs of fair-share queues, after every other job moved in a tick."""

    def _start_by_share(self, now: float) -> None:
        queues: dict[str, list[SimJob]] = {}
        for sim in self._jobs.values():
            if share_of_job(sim.job) is not None:
                queues.setdefault(sim.job.job_queue.arn, []).append(sim)
        for jobs in queues.values():
            self._start_queue(jobs, now)

    def _start_queue(self, jobs: list[SimJob], now: float) -> None:
        """Each RUNNABLE job of one queue, in share order, given its chance to start (or to launch an instance)."""
        queue = jobs[0].job.job_queue
        weights = weights_of(policy_of_queue(queue.backend, queue) or {})
        usage: dict[str, float] = {}
        waiting: dict[str, list[SimJob]] = {}
        for sim in jobs:  # in the order Batch took them
            share = str(share_of_job(sim.job))
            if sim.job.status in HOLDING:
                usage[share] = usage.get(share, 0.0) + sim.needs["VCPU"]
            elif sim.job.status == "RUNNABLE" and not sim.job.stop:
                waiting.setdefault(share, []).append(sim)
        while (turn := next_share(list(waiting), usage, weights)) is not None:
            sim = waiting[turn].pop(0)
            if not waiting[turn]:
                del waiting[turn]
            self._schedule(sim, now)
            if sim.job.status in HOLDING:
                usage[turn] = usage.get(turn, 0.0) + sim.needs["VCPU"]
