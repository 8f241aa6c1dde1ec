"""GET /costs: what finished jobs cost, per UTC day of creation, by GPU type and by job name."""

from __future__ import annotations

from functions.shared.domain.views import CostReport, DailyCost
from functions.shared.ports import Ports


def cost_report(date_from: str, date_to: str, ports: Ports) -> CostReport:
    """Daily cost of jobs created from `date_from` to `date_to` (YYYY-MM-DD, inclusive)."""
    days: dict[str, DailyCost] = {}
    for record in ports.jobs.jobs_created_between(date_from, date_to):
        if record.cost is None:
            continue
        date = record.created_at[:10]
        day = days.setdefault(date, DailyCost(date=date, usd=0.0, by_gpu_type={}, by_job_name={}))
        usd = record.cost.usd
        gpu_type = record.instance_type or "unknown"
        day.usd = round(day.usd + usd, 10)
        day.by_gpu_type[gpu_type] = round(day.by_gpu_type.get(gpu_type, 0.0) + usd, 10)
        day.by_job_name[record.name] = round(day.by_job_name.get(record.name, 0.0) + usd, 10)
    ordered = [days[d] for d in sorted(days)]
    return CostReport(
        date_from=date_from, date_to=date_to, total_usd=round(sum(d.usd for d in ordered), 10), days=ordered
    )
