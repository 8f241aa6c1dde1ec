"""The gpu_idle waste of an attempt, charged from the host agent's report and from the attempt's pricing, whichever
comes last (the ledger charges each second once)."""

from __future__ import annotations

from functions.shared.domain.jobs.agent_reports import gpu_idle_waste
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.ports import Ports


def charge_gpu_idle(job_id: str, number: int, attempt: AttemptRecord, ports: Ports) -> float:
    """The attempt's idle GPU-seconds charged as waste once it is priced (jobs/agent_reports.gpu_idle_waste)."""
    entry = gpu_idle_waste(job_id, number, attempt)
    return ports.waste.record_waste(entry) if entry is not None else 0.0
