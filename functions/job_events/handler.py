"""Batch job state changes (EventBridge, asynchronous): update the job record and resume the waiting workflow.

An error here is retried by Lambda and then sent to the function's on-failure queue (alarmed); the
sweep reconciles the job meanwhile.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared.adapters.wiring import live_ports
from functions.shared.coldstart import ends_cold_start
from functions.shared.domain.fleet.batch import BatchJobEvent
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.hosts.evidence import note_host_faults
from functions.shared.usecases.jobs.agent import record_agent_event
from functions.shared.usecases.jobs.queue_verdicts import tell_queue
from functions.shared.usecases.jobs.track import record_batch_event


@ends_cold_start
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext, ports: Ports | None = None) -> dict[str, Any]:
    parsed = BatchJobEvent.from_eventbridge(event)
    if parsed is None:
        # A host agent's report, or EC2's interruption warning or rebalance recommendation for a spot host, is
        # recorded (usecases/jobs/agent.py); malformed events are noted, not retried.
        return record_agent_event(event, lambda: ports or live_ports())
    ports = ports or live_ports()
    recorded = record_batch_event(parsed, ports)
    # Batch says its verdict of the job heading a queue: the jobs behind it wait for the same cause.
    told = tell_queue(parsed, ports)
    if told:
        recorded["told_behind"] = told
    # Foreign jobs in GPU Pilot's queues are evidence against a host too.
    note_host_faults(parsed, ports)
    return recorded
