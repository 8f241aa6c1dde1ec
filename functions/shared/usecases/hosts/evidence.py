"""The evidence against GPU hosts, as Batch's events bring it: every attempt that failed because of its host is kept
(once), and the host that now has failures of enough different jobs gets a sweep at once, which quarantines it.

A bad host fails a job in seconds and is free for the next one at once: waiting for the scheduled sweep (minutes)
would let it fail dozens more. One sweep per host is started (the first writer of its claim starts it).
"""

from __future__ import annotations

from datetime import timedelta

from functions.shared.domain.core.clock import iso, parse_iso
from functions.shared.domain.fleet.batch import BatchJobEvent
from functions.shared.domain.health.sweep import new_sweep_id
from functions.shared.domain.hosts.evidence import HostFault, enough_to_quarantine, host_faults
from functions.shared.observability import logger
from functions.shared.ports import Ports


def note_host_faults(event: BatchJobEvent, ports: Ports, sweeping: bool = False) -> list[HostFault]:
    """Keep the event's host-side failures; start a sweep for a host that has enough. Returns the new ones.

    `sweeping`: the sweep itself keeps the failures of the events it replays, and judges the hosts after its jobs:
    it starts no other sweep (the sweep function has no grant to invoke itself, and needs none)."""
    settings = ports.settings
    found = host_faults(event.job, event.at)
    if not found:
        return []
    # The window counts from each failure; the items outlive it by as much, as DynamoDB's TTL deletes late.
    new = [fault for fault in found if ports.hosts.record_fault(fault, 2 * settings.bad_host_window_seconds)]
    if not new or not settings.quarantine_bad_hosts or sweeping:
        return new
    since = iso(parse_iso(event.at) - timedelta(seconds=settings.bad_host_window_seconds))
    kept = ports.hosts.faults(since)
    for host in sorted({fault.container_instance_arn for fault in new}):
        against = [fault for fault in kept if fault.container_instance_arn == host]
        if enough_to_quarantine(against) and ports.hosts.claim_sweep(host, settings.bad_host_window_seconds):
            sweep_id = new_sweep_id()
            ports.health.start_sweep(sweep_id)
            ports.sweeps.start_sweep(sweep_id)
            logger.info("sweep started for a bad host", extra={"container_instance": host, "sweep_id": sweep_id})
    return new
