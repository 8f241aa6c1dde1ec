"""What the host agent reports of an attempt (host_agent/report.py: one EventBridge event per thing that happened,
each a snapshot of all it knows), as the fields the attempt records, and what an idle report asks of the job."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import Field, ValidationError

from functions.shared.domain.core.clock import iso, normalize_iso, parse_iso
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.cost.attempts import attempt_cost
from functions.shared.domain.cost.waste import WasteEntry
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.domain.requests.host_agent import NOTICE_SECONDS, IdleAction
from functions.shared.domain.requests.job_request import JobRequest

SOURCE = "gpupilot.agent"
DETAIL_TYPE = "GPU Pilot Host Agent Report"
IDLE = "idle"
# Below this utilisation (percent) a GPU-second is idle (DESIGN.md, Host agent).
IDLE_PERCENT = 5.0
GPU_IDLE_WASTE = "gpu_idle"


class GpuUtilization(DomainModel):
    mean: float = Field(ge=0, description="Mean utilisation of the job's GPUs, percent")
    p95: float = Field(ge=0)
    max_memory_gib: float = Field(ge=0)
    idle_seconds: float = Field(ge=0, description="Seconds the job's GPUs spent under 5% utilisation")
    samples: int = Field(ge=0)


class AgentReport(DomainModel):
    job_id: str
    attempt: int = Field(ge=1)
    reason: str
    at: str
    sequence: int = 0
    instance_id: str | None = None
    image_pull_seconds: float | None = Field(default=None, ge=0)
    resumed_from: dict[str, Any] | None = None
    interruption_notice_at: str | None = None
    reclaim_at: str | None = None
    gpu_utilization: GpuUtilization | None = None
    checkpoint: dict[str, Any] | None = None

    @classmethod
    def from_eventbridge(cls, event: dict[str, Any]) -> AgentReport | None:
        """The report, or None for anything that is not a well-formed one (noted, never retried)."""
        if event.get("source") != SOURCE or event.get("detail-type") != DETAIL_TYPE:
            return None
        try:
            return cls.model_validate(event.get("detail") or {}, strict=False)
        except ValidationError:
            return None

    def attempt_fields(self, started_at: str | None) -> dict[str, Any]:
        """The attempt's host-agent fields this report says (a later report says at least as much)."""
        fields: dict[str, Any] = {"agent_report_sequence": self.sequence}
        if self.instance_id:
            fields["host"] = self.instance_id
        if self.image_pull_seconds is not None:
            fields["image_pull_seconds"] = self.image_pull_seconds
        if self.resumed_from is not None:
            fields["resumed_from"] = self.resumed_from
        if self.gpu_utilization is not None:
            fields["gpu_utilization"] = self.gpu_utilization.model_dump()
        uploaded = (self.checkpoint or {}).get("uploaded_at")
        if isinstance(uploaded, str):
            fields["checkpoint_uploaded_at"] = normalize_iso(uploaded)
        if self.interruption_notice_at is not None:
            fields["interruption_notice_at"] = normalize_iso(self.interruption_notice_at)
            lost = self.progress_lost_seconds(started_at)
            if lost is not None:
                fields["progress_lost_seconds"] = lost
        return fields

    def progress_lost_seconds(self, started_at: str | None) -> float | None:
        """The work the reclaim takes: from the program's last checkpoint write (or the attempt's start, without one)
        to the reclaim (the notice's time plus its two minutes when EC2 gave no time)."""
        assert self.interruption_notice_at is not None
        reclaim = parse_iso(self.reclaim_at) if self.reclaim_at else None
        notice = parse_iso(self.interruption_notice_at)
        end = reclaim or notice + timedelta(seconds=NOTICE_SECONDS)
        saved = (self.checkpoint or {}).get("saved_at")
        since = saved if isinstance(saved, str) else started_at
        if since is None:
            return None
        return round(max(0.0, (end - parse_iso(since)).total_seconds()), 1)


def idle_action(report: AgentReport, request: JobRequest) -> IdleAction | None:
    """What the job's idle_policy does with an idle report (the agent sends one when the job's GPUs have all idled
    past the policy's minutes)."""
    if report.reason != IDLE or request.idle_policy is None:
        return None
    return request.idle_policy.action


def idle_reason(request: JobRequest) -> str:
    assert request.idle_policy is not None
    return (
        f"GPU_IDLE: its GPUs stayed under {IDLE_PERCENT:g}% utilisation for {request.idle_policy.after_minutes} minutes"
    )


def gpu_idle_waste(job_id: str, number: int, attempt: AttemptRecord) -> WasteEntry | None:
    """The attempt's idle GPU-seconds as waste (`gpu_idle`), priced like its share of the instance: its span grows
    from the attempt's start by its idle seconds, so the ledger charges each second once, whichever of the agent's
    last report and the attempt's pricing comes last. None before the attempt is priced or idle."""
    idle = float((attempt.gpu_utilization or {}).get("idle_seconds") or 0.0)
    if attempt.cost is None or attempt.started_at is None or idle <= 0:
        return None
    share = attempt.cost.gpu_share
    quote = PriceQuote(hourly_usd=attempt.cost.hourly_usd * share, pricing=f"{share:g} of {attempt.cost.pricing}")
    start = normalize_iso(attempt.started_at)
    return WasteEntry(
        instance_id=f"{job_id}#{number}", reason=GPU_IDLE_WASTE, pool=attempt.job_queue,
        instance_type=attempt.instance_type, day=start[:10], seconds=idle, hourly_usd=quote.hourly_usd,
        usd=attempt_cost(quote, idle, share=(1.0, "instance")).usd, pricing=quote.pricing, started_at=start,
        at=iso(parse_iso(start) + timedelta(seconds=idle)),
    )  # fmt: skip
