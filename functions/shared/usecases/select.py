"""POST /plan, the check of POST /jobs, and SelectGpuType: rank the GPU offerings that fit a request against
what the account and the region say now (offerings, quotas, spot prices and placement scores)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from functions.shared.domain.errors import NoCandidate, RequestRefused, SignalUnavailable
from functions.shared.domain.fleet import vcpu_quota_code
from functions.shared.domain.offers import SignalGap
from functions.shared.domain.requests import JobRequest
from functions.shared.domain.selection import (
    MarketSignals,
    Plan,
    Rejected,
    capacities_for,
    fits,
    placement_score_types,
    plan,
    within_filters,
)
from functions.shared.domain.steps import NoGpuTypeAvailable, SelectInput, Selection
from functions.shared.domain.vocabulary import CapacityType, JobStatus, MarketSignal
from functions.shared.ports import Ports

# The workflow carries its candidates in every state's input: a bound on the attempts, whatever is asked.
MAX_WORKFLOW_CANDIDATES = 20
T = TypeVar("T")


def plan_request(request: JobRequest, ports: Ports) -> Plan:
    """Every GPU offering for `request`, in attempt order, and every one left out with its reason.

    RequestRefused when the request names what this deployment does not know (a GPU model, a zone). A market
    signal AWS will not give (a quota, a price, placement scores) is a warning, never a failure."""
    gpu_types = ports.catalog.gpu_types()
    known_models = sorted({gpu.gpu_model for gpu in gpu_types.values()})
    unknown = [m for m in request.gpu_models or [] if m.lower() not in {k.lower() for k in known_models}]
    if unknown:
        raise RequestRefused("gpu_models", f"unknown GPU model {', '.join(unknown)}; known: {', '.join(known_models)}")
    # A request may retry on purpose what the memory of unavailable offerings would leave out.
    remembered = {} if request.ignore_unavailable else ports.offerings.unavailable_offerings()
    snapshot = ports.availability.snapshot(sorted(gpu_types), set(remembered))
    snapshot.remembered = remembered
    outside = [z for z in request.zones or [] if z not in snapshot.zones]
    if outside:
        deployed = ", ".join(snapshot.zones) or "none"
        raise RequestRefused("zones", f"{', '.join(outside)} is not a zone of this deployment's subnets ({deployed})")
    fitting = sorted(t for t, gpu in gpu_types.items() if fits(request, gpu))
    capacities = capacities_for(request.capacity)
    market = MarketSignals(max_vcpus=ports.settings.max_vcpus)
    market.quotas = {
        code: _read(market, MarketSignal.VCPU_QUOTAS, partial(ports.quotas.vcpu_quota, code), None, subject=code)
        for code in _quota_codes(fitting, capacities)
    }
    if CapacityType.ON_DEMAND in capacities and fitting:
        price_list = ports.prices.price_list_unavailable()
        if price_list is not None:
            _note_gap(market, MarketSignal.ON_DEMAND_PRICES, price_list)
    arm64_ami = bool(ports.settings.arm64_gpu_ami_id)
    spot = CapacityType.SPOT in capacities and bool(fitting)
    if spot:
        zones = [z for z in snapshot.zones if not request.zones or z in request.zones]
        market.spot_prices = _read(market, MarketSignal.SPOT_PRICES, partial(ports.prices.spot, fitting, zones), {})
    planned = plan(request, gpu_types, snapshot, ports.prices.on_demand, arm64_ami=arm64_ami, market=market)
    scored = placement_score_types(planned.candidates, request.max_attempts) if spot else []
    if not scored:
        return planned
    # Placement scores are asked once, for a set of the spot offerings the job would try: rank again with them.
    read_scores = partial(ports.availability.placement_scores, sorted(scored))
    market.placement_scores = _read(market, MarketSignal.PLACEMENT_SCORES, read_scores, {})
    return plan(request, gpu_types, snapshot, ports.prices.on_demand, arm64_ami=arm64_ami, market=market)


def _quota_codes(fitting: list[str], capacities: list[CapacityType]) -> list[str]:
    """The vCPU quotas that bound the fitting types on the request's capacity types (at most five codes)."""
    codes = {
        vcpu_quota_code(instance_type, capacity == CapacityType.SPOT)
        for instance_type in fitting
        for capacity in capacities
    }
    return sorted(code for code in codes if code)


def _read(
    market: MarketSignals, signal: MarketSignal, read: Callable[[], T], unknown: T, subject: str | None = None
) -> T:
    """A market signal as AWS gives it now, or `unknown` (and the gap noted) when AWS will not."""
    try:
        return read()
    except SignalUnavailable as error:
        _note_gap(market, signal, error, subject)
        return unknown


def _note_gap(
    market: MarketSignals, signal: MarketSignal, error: SignalUnavailable, subject: str | None = None
) -> None:
    market.unavailable.append(SignalGap(signal=signal, operation=error.operation, code=error.code, subject=subject))


def check_plannable(request: JobRequest, ports: Ports) -> Plan:
    """POST /jobs: the plan a job would start with; NoCandidate (a 400, nothing started) when it is empty."""
    found = plan_request(request, ports)
    if not found.candidates:
        raise NoCandidate(found.rejected, _telling_field(found, request, ports), _summary(found, request, ports))
    return found


def select_gpu_type(payload: SelectInput, ports: Ports) -> Selection:
    """SelectGpuType: the ranked offerings the workflow will try in order, at most `max_attempts`."""
    ports.jobs.advance(payload.job_id, JobStatus.SELECTING, attempt=0)
    ranked = plan_request(payload.request, ports)
    if not ranked.candidates:
        raise NoGpuTypeAvailable(f"no GPU instance type fits the request ({_summary(ranked, payload.request, ports)})")
    bound = min(payload.request.max_attempts, MAX_WORKFLOW_CANDIDATES)
    return Selection(candidates=ranked.candidates[:bound], index=0, catalog=ports.catalog.source)


def _telling(found: Plan, request: JobRequest, ports: Ports) -> list[Rejected]:
    """Rejections, the most telling first: types the request's own filters left out say least about why."""
    gpu_types = ports.catalog.gpu_types()
    return sorted(
        found.rejected,
        key=lambda r: r.instance_type in gpu_types and not within_filters(request, gpu_types[r.instance_type]),
    )


def _summary(found: Plan, request: JobRequest, ports: Ports) -> str:
    return "; ".join(f"{r.instance_type}: {r.reason}" for r in _telling(found, request, ports)[:5])


def _telling_field(found: Plan, request: JobRequest, ports: Ports) -> str:
    """The request field most rejections of the most telling kind point at ("body" when none does)."""
    telling = _telling(found, request, ports)
    fields = [r.field for r in telling if r.field]
    return fields[0] if fields else "body"
