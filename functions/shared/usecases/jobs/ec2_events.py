"""EC2's interruption warning and rebalance recommendation for a spot host (EventBridge, to job_events): recorded on
each attempt running on it, once (the host agent may have recorded the notice first: its time stands), with a note on
the job's timeline."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.jobs.ec2_events import Ec2InstanceEvent, attempts_on
from functions.shared.ports import Ports


def record_instance_event(event: Ec2InstanceEvent, ports: Ports) -> dict[str, Any]:
    """The attempts on the instance, found in the index of unfinished jobs (a read per 1 MB of it, once per event: EC2
    sends at most these two per spot instance), each given the signal's time where it has none, and a timeline note."""
    found = attempts_on(ports.jobs.active_jobs(), event.instance_id)
    if not found:
        # Another team's instance, or a host whose agent has not reported yet: nothing of GPU Pilot's to record.
        return {"ignored": f"no running attempt on {event.instance_id}", "signal": event.signal.value}
    recorded = []
    for job_id, number in found:
        # Both writes are once only (EventBridge may deliver the event again, and then retries a failed one).
        record = ports.jobs.update_attempt(job_id, number, {}, if_missing={event.field: event.at})
        record = record or ports.jobs.get_job(job_id)
        ports.jobs.note_host(job_id, record.status, event.note_key, event.note, event.at)
        recorded.append({"job_id": job_id, "attempt": number})
    return {"signal": event.signal.value, "instance_id": event.instance_id, "recorded": recorded}
