"""GET /costs: what every ended attempt cost, per UTC day of its job's creation, by GPU type, job name, capacity
type (reserved and capacity-block apart from on-demand) and region, or grouped by one of them, and what each added to
the bill; as JSON or CSV. Sums are exact (domain/cost/attempts.py)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from decimal import Decimal

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import dollars, usd_sum
from functions.shared.domain.core.vocabulary import BilledCapacity
from functions.shared.domain.cost.attempts import Cost, billed, capacity_type
from functions.shared.domain.cost.report import CostGroup, CostReport, DailyCost, Waste
from functions.shared.domain.cost.waste import RESERVATION_IDLE
from functions.shared.ports import Ports

GROUPS = ("day", "gpu_type", "job_name", "capacity_type", "region", "team", "owner")
CSV_COLUMNS = ("date", "job_id", "job_name", "attempt", "gpu_type", "capacity_type", "runtime_seconds", "share",
               "hourly_usd", "usd", "marginal_usd", "pricing", "region", "team", "owner")  # fmt: skip
# The group of the costs of jobs recorded before teams (no team, no owner).
NONE = "(none)"


class CostLine(DomainModel):
    """One priced attempt."""

    date: str
    job_id: str
    job_name: str
    attempt: int
    gpu_type: str
    capacity_type: str
    runtime_seconds: float
    share: float
    hourly_usd: float
    usd: float
    marginal_usd: float
    pricing: str
    region: str
    team: str = NONE
    owner: str = NONE

    def key(self, group_by: str) -> str:
        return self.date if group_by == "day" else str(getattr(self, group_by))


def cost_lines(date_from: str, date_to: str, ports: Ports, team: str | None = None) -> list[CostLine]:
    """Every priced attempt of the jobs created from `date_from` to `date_to` (YYYY-MM-DD, inclusive); `team`: of
    that team's jobs only."""
    lines = []
    home = ports.settings.home  # attempts recorded before regions ran there
    for record in ports.jobs.jobs_created_between(date_from, date_to):
        if team is not None and record.team != team:
            continue
        whose = {"team": record.team or NONE, "owner": record.owner or NONE}
        priced = [(n, a) for n, a in record.ordered_attempts() if a.cost is not None]
        if not priced and record.cost is not None:  # priced before attempts were: the job's one cost
            lines.append(_line(record.created_at[:10], record.job_id, record.name, 1, record.instance_type or "unknown",
                               BilledCapacity.ON_DEMAND, billed(record.cost, None), home, whose))  # fmt: skip
        for number, attempt in priced:
            assert attempt.cost is not None
            billed_as = capacity_type(attempt.capacity, attempt.reservation, attempt.reserved)
            cost = billed(attempt.cost, attempt.reservation)
            lines.append(_line(record.created_at[:10], record.job_id, record.name, number, attempt.instance_type,
                               billed_as, cost, attempt.region or home, whose))  # fmt: skip
    return lines


def _line(
    date: str,
    job_id: str,
    name: str,
    number: int,
    gpu_type: str,
    capacity: BilledCapacity,
    cost: Cost,
    region: str,
    whose: dict[str, str],
) -> CostLine:
    return CostLine(
        date=date, job_id=job_id, job_name=name, attempt=number, gpu_type=gpu_type, capacity_type=capacity,
        runtime_seconds=cost.runtime_seconds, share=cost.gpu_share, hourly_usd=cost.hourly_usd, usd=cost.usd,
        marginal_usd=cost.marginal_usd or 0.0, pricing=cost.pricing, region=region, **whose,
    )  # fmt: skip


def cost_report(
    date_from: str, date_to: str, ports: Ports, group_by: str | None = None, team: str | None = None
) -> CostReport:
    """The attempts' costs per day (each day by GPU type, job name and capacity type), and by `group_by`; `team`: of
    that team's jobs only, without the fleet's waste (no team's own)."""
    lines = cost_lines(date_from, date_to, ports, team)
    by_day: dict[str, list[CostLine]] = defaultdict(list)
    for line in lines:
        by_day[line.date].append(line)
    days = [
        DailyCost(
            date=date,
            usd=_sum(day),
            marginal_usd=_sum(day, "marginal_usd"),
            by_gpu_type=_sums(day, "gpu_type"),
            by_job_name=_sums(day, "job_name"),
            by_capacity_type=_sums(day, "capacity_type"),
            by_region=_sums(day, "region"),
        )
        for date, day in sorted(by_day.items())
    ]
    groups = []
    if group_by:
        keyed: dict[str, list[CostLine]] = defaultdict(list)
        for line in lines:
            keyed[line.key(group_by)].append(line)
        groups = sorted(
            (
                CostGroup(
                    key=key,
                    usd=_sum(part),
                    marginal_usd=_sum(part, "marginal_usd"),
                    attempts=len(part),
                    region=_shared_region(part),
                )
                for key, part in keyed.items()
            ),
            key=lambda g: (-g.usd, g.key),
        )
    return CostReport(date_from=date_from, date_to=date_to, total_usd=_sum(lines),
                      marginal_usd=_sum(lines, "marginal_usd"), days=days, group_by=group_by, groups=groups,
                      waste=waste_report(date_from, date_to, ports) if team is None else Waste())  # fmt: skip


def waste_report(date_from: str, date_to: str, ports: Ports) -> Waste:
    """The fleet's waste that began in the range, by reason and by pool (exact sums)."""
    entries = ports.waste.waste_between(date_from, date_to)

    def by(field: str, reason: str | None = None) -> dict[str, float]:
        keyed: dict[str, list[float]] = defaultdict(list)
        for entry in entries:
            # A reservation's idle hours belong to no pool: they are by reservation.
            if getattr(entry, field) and (reason is None or entry.reason == reason):
                keyed[str(getattr(entry, field))].append(entry.usd)
        return {key: usd_sum(values) for key, values in sorted(keyed.items())}

    return Waste(
        usd=usd_sum(e.usd for e in entries),
        by_reason=by("reason"),
        by_pool=by("pool"),
        by_reservation=by("instance_id", RESERVATION_IDLE),
        billed_to={e.instance_id: e.billed_to for e in entries if e.reason == RESERVATION_IDLE and e.billed_to},
    )


def cost_csv(date_from: str, date_to: str, ports: Ports, team: str | None = None) -> str:
    """One row per priced attempt, amounts as stored (exact); a spreadsheet's sum is the report's total."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for line in cost_lines(date_from, date_to, ports, team):
        writer.writerow([_text(getattr(line, column)) for column in CSV_COLUMNS])
    return out.getvalue()


def _text(value: object) -> str:
    return str(dollars(value)) if isinstance(value, float) else str(value)


def _shared_region(lines: list[CostLine]) -> str | None:
    """The one region all the lines ran in, None when they ran in several."""
    regions = {line.region for line in lines}
    return regions.pop() if len(regions) == 1 else None


def _sum(lines: list[CostLine], amount: str = "usd") -> float:
    return float(sum((dollars(getattr(line, amount)) for line in lines), Decimal(0)))


def _sums(lines: list[CostLine], field: str) -> dict[str, float]:
    keyed: dict[str, list[CostLine]] = defaultdict(list)
    for line in lines:
        keyed[str(getattr(line, field))].append(line)
    return {key: _sum(part) for key, part in sorted(keyed.items())}
