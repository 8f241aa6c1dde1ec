"""The hosts' life after launch: booted (a bad host's boot check failing, as the world says) and registered
(or not), reclaimed by the spot market, terminated elsewhere, retired when idle."""

from __future__ import annotations

from functions.shared.domain.jobs.ec2_events import Ec2Signal
from functions.shared.domain.requests.host_agent import NOTICE_SECONDS
from gpupilot.localcloud.fleet.records import HOST_TERMINATED, SimInstance
from gpupilot.localcloud.fleet.shares import FleetShares

# EC2's signals before a reclaim, in simulated seconds before it: a rebalance recommendation (which EC2 sends when it
# can, sooner than the notice or with it) a minute before the two-minute interruption warning.
REBALANCE_LEAD_SECONDS = 60
SPOT_SIGNALS: tuple[tuple[Ec2Signal, int, dict[str, str]], ...] = (
    (Ec2Signal.REBALANCE_RECOMMENDATION, NOTICE_SECONDS + REBALANCE_LEAD_SECONDS, {}),
    (Ec2Signal.INTERRUPTION_WARNING, NOTICE_SECONDS, {"instance-action": "terminate"}),
)


class FleetHosts(FleetShares):
    """Each instance's life, tick by tick."""

    # -- instances -----------------------------------------------------------------------------
    def _advance_instance(self, instance: SimInstance, now: float) -> None:
        if instance.terminated:
            return
        if self._terminated_elsewhere(instance):
            # Terminated through EC2 (the sweep's remediation, an operator): Batch sees the host go, fails
            # the attempts that ran there, and launches another instance for the jobs still RUNNABLE.
            self._reclaim(instance, now)
            return
        behaviour = self.world.instance(instance.instance_type)
        booted = now - instance.launched_at >= self.timeline.boot
        passed = instance.symptom != "boot_check_fails"
        if booted and not instance.checked:
            # The launch template's boot check, before the ECS agent starts: its verdict on the console, and a host
            # that fails it registers without GPUs (userdata.py).
            instance.checked = True
            instance.print(
                f"cloud-init[2051]: gpupilot-boot-check: PASS {instance.gpus} GPUs visible ({instance.instance_type})"
                if passed
                else f"cloud-init[2051]: gpupilot-boot-check: FAIL nvidia-smi did not answer within 60 s "
                f"({instance.instance_type})"
            )
        if instance.container_instance_arn is None and booted and behaviour.ecs_agent != "never_registers":
            self._register(instance, gpus=behaviour.gpu_registration != "missing" and passed)
            instance.disconnects = behaviour.ecs_agent == "disconnects"
        disconnects_at = instance.launched_at + self.timeline.boot + self.timeline.disconnect_after
        if behaviour.ecs_agent == "disconnects" and instance.connected and now >= disconnects_at:
            instance.connected = False
            self._container_instance(instance).agent_connected = False
        held = instance.reservation
        if held is not None and self.reservations is not None and self.reservations.now() >= held.reclaims_at():
            # EC2: "Thirty minutes before the reservation expires, we begin to terminate any instances that are
            # still running in the Capacity Block."
            self._reclaim(instance, now)
            return
        spot = self.world.spot.get(instance.instance_type)
        reclaim_after = spot.interrupt_after_seconds if spot is not None else None
        if not instance.spot or reclaim_after is None:
            return
        # Simulated seconds, like a job's runtime: --speedup 60 reclaims a 120 s instance after 2 s of the clock.
        lived = (now - instance.launched_at) * self._speedup
        for signal, before, detail in SPOT_SIGNALS:
            if signal.value not in instance.signalled and lived >= reclaim_after - before:
                instance.signalled.add(signal.value)
                self._emit_instance(instance, signal.value, dict(detail))
        if lived >= reclaim_after:
            self._reclaim(instance, now)

    def _reclaim(self, instance: SimInstance, now: float) -> None:
        """The host goes (a spot interruption, or terminated through EC2): its jobs' attempts fail the way Batch
        reports it, and are retried as their job definition's retryStrategy says."""
        self._terminate(instance)
        for job_id in list(instance.jobs):
            self._attempt_ended(self._jobs[job_id], now, None, None, HOST_TERMINATED.format(instance.instance_id))

    def _terminated_elsewhere(self, instance: SimInstance) -> bool:
        try:
            state = self._ec2().get_instance(instance.instance_id).state
        except Exception:
            return True  # moto no longer knows it: gone
        return state in ("shutting-down", "terminated", "stopping", "stopped")

    def _retire_if_idle(self, instance: SimInstance, now: float) -> None:
        if instance.terminated or instance.jobs or not instance.usable:
            return
        # A host still cleaning up a task it failed is not idle yet.
        if now - max(instance.idle_since, instance.held_until) >= self.timeline.idle:
            self._terminate(instance)
