"""POST /plan, the check of POST /jobs, and SelectGpuType: rank the GPU offerings that fit a request against
what the account and the region say now (offerings, quotas, prices, spot prices and placement scores, the capacity
the account reserved).

One way, the planning walk (domain/capacity/planning.py): the signals are read first, each once (the domain says
which: `signal_needs`, then the spot types worth scoring once prices are known), then one pure walk makes the plan
(`plan_across`), and the warnings are written from it (domain/capacity/warnings.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.capacity.market import AvailabilitySnapshot, MarketSignals, SignalGap, Signals
from functions.shared.domain.capacity.offers import Plan, PlanRefusal
from functions.shared.domain.capacity.planning import plan_across
from functions.shared.domain.capacity.refusal import beyond_band, refusal, rejections_summary
from functions.shared.domain.capacity.signals import placement_score_types, signal_needs
from functions.shared.domain.capacity.unavailable import UnavailableOffering
from functions.shared.domain.capacity.warnings import plan_warnings, signal_warnings
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import NoCandidate, RequestRefused, SignalUnavailable, aws_failure_words
from functions.shared.domain.core.vocabulary import CapacityPreference, CapacityType, JobStatus, MarketSignal
from functions.shared.domain.jobs.steps import NoGpuTypeAvailable, SelectInput, Selection
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.reservations.reservation import Reservation
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.elsewhere import other_regions_words

# The workflow carries its candidates in every state's input: a bound on the attempts, whatever is asked.
MAX_WORKFLOW_CANDIDATES = 20
T = TypeVar("T")


def plan_request(request: JobRequest, ports: Ports) -> Plan:
    """Every GPU offering for `request`, in attempt order across the regions it may run in, and every one left out
    with its reason, and each capacity region's outcome (its candidates, or why none).

    RequestRefused when the request names what this deployment does not know (a GPU model, a zone, a region). A
    market signal AWS will not give (a quota, a price, placement scores) is a warning, never a failure."""
    allowed, left_out = request_regions(request, ports)
    # A request may retry on purpose what the memory of unavailable offerings would leave out.
    remembered = {} if request.ignore_unavailable else ports.offerings.unavailable_offerings()
    catalogs: dict[str, dict[str, GpuType]] = {}
    snapshots: dict[str, AvailabilitySnapshot] = {}
    unreadable: dict[str, str] = {}
    for region in allowed:
        try:
            regional = ports.in_region(region)
            # Each region sells its own GPU types (DescribeInstanceTypes answers for the region it is asked in): a
            # type sold only in a capacity region is planned there.
            catalogs[region] = regional.catalog.gpu_types()
            snapshots[region] = _snapshot(regional, sorted(catalogs[region]), remembered)
        except Exception as error:
            if region == ports.settings.home:
                raise
            # A capacity region that cannot be read (its stack not deployed, the region not enabled, a grant
            # missing) is left out of the plan, saying why; the others are planned.
            unreadable[region] = aws_failure_words(error)
    known_models = sorted({gpu.gpu_model for catalog in catalogs.values() for gpu in catalog.values()})
    unknown = [m for m in request.gpu_models or [] if m.lower() not in {k.lower() for k in known_models}]
    if unknown:
        raise RequestRefused("gpu_models", f"unknown GPU model {', '.join(unknown)}; known: {', '.join(known_models)}")
    left_out |= {region: f"could not be read ({failure})" for region, failure in unreadable.items()}
    zones = {zone for snapshot in snapshots.values() for zone in snapshot.zones}
    outside = [z for z in request.zones or [] if z not in zones]
    if outside:
        deployed = ", ".join(sorted(zones)) or "none"
        raise RequestRefused("zones", f"{', '.join(outside)} is not a zone of this deployment's subnets ({deployed})")
    if request.reservation and request.capacity in (CapacityPreference.SPOT, CapacityPreference.SPOT_FIRST):
        raise RequestRefused(
            "reservation", "a reservation runs on-demand instances: capacity must be on-demand (default) or reserved"
        )
    regions = []
    for region, snapshot in snapshots.items():
        if request.zones and not set(request.zones) & set(snapshot.zones):
            left_out[region] = "none of the request's zones is in it"
            continue
        signals = _signals(request, ports.in_region(region), catalogs[region], snapshot, region)
        signals.sold_elsewhere = {t for other in catalogs.values() for t in other} - set(catalogs[region])
        regions.append(signals)
    _check_reservation(request, regions)
    planned = plan_across(request, regions, left_out)
    gaps = [gap for signals in regions for gap in signals.market.unavailable]
    gone = [
        f"capacity region {region} could not be read, so it is left out ({why})" for region, why in unreadable.items()
    ]
    warnings = plan_warnings(planned, request) + list(dict.fromkeys(signal_warnings(gaps))) + gone
    return planned.model_copy(update={"warnings": warnings})


def request_regions(request: JobRequest, ports: Ports) -> tuple[list[str], dict[str, str]]:
    """The capacity regions the request may run in (its `regions`, else the deployment's default_regions, else
    home), in the deployment's order, and why each other one is left out. RequestRefused for a region the
    deployment has no capacity in."""
    deployed = ports.settings.regions
    unknown = [r for r in request.regions or [] if r not in deployed]
    if unknown:
        raise RequestRefused(
            "regions", f"{', '.join(unknown)} is not a capacity region of this deployment ({', '.join(deployed)})"
        )
    if request.regions:
        wanted, why = set(request.regions), "not in the request's regions"
    elif ports.settings.default_regions:
        wanted, why = set(ports.settings.default_regions), "not in the deployment's default_regions (send regions)"
    else:
        wanted, why = {ports.settings.home}, "not the home region, the default (send regions to use it)"
    return [r for r in deployed if r in wanted], {r: why for r in deployed if r not in wanted}


def _snapshot(
    ports: Ports, instance_types: list[str], remembered: dict[str, UnavailableOffering]
) -> AvailabilitySnapshot:
    """What the region's zones offer now, and the memory of unavailable offerings."""
    snapshot = ports.availability.snapshot(instance_types, set(remembered))
    snapshot.remembered = remembered
    return snapshot


def _signals(
    request: JobRequest,
    ports: Ports,
    gpu_types: dict[str, GpuType],
    snapshot: AvailabilitySnapshot,
    region: str,
) -> Signals:
    """What the plan weighs in one region, each signal read once: its zones' offerings and the memory of unavailable
    ones, on-demand prices, vCPU quotas, spot prices, and placement scores for the spot types the job would try."""
    needs = signal_needs(request, gpu_types)
    market = MarketSignals(max_vcpus=ports.settings.max_vcpus)
    none: list[Reservation] = []
    reservations = _read(market, MarketSignal.RESERVATIONS, ports.reservations.reservations, none)
    market.quotas = {
        code: _read(market, MarketSignal.VCPU_QUOTAS, partial(ports.quotas.vcpu_quota, code), None, subject=code)
        for code in needs.quota_codes
    }
    # Read whatever the capacity types: a spot type without one is a type of unknown price (band.py), and a
    # reservation's rate is its type's on-demand price.
    priced = sorted(set(needs.fitting) | {r.instance_type for r in reservations})
    on_demand = {}
    if priced:
        price_list = ports.prices.price_list_unavailable()
        if price_list is not None:
            _note_gap(market, MarketSignal.ON_DEMAND_PRICES, price_list)
        quotes = {t: ports.prices.on_demand(t) for t in priced}
        on_demand = {t: quote for t, quote in quotes.items() if quote is not None}
    if CapacityType.SPOT in needs.capacities and needs.fitting:
        zones = [z for z in snapshot.zones if not request.zones or z in request.zones]
        read_spot = partial(ports.prices.spot, needs.fitting, zones)
        market.spot_prices = _read(market, MarketSignal.SPOT_PRICES, read_spot, {})
    signals = Signals(
        catalog=gpu_types,
        availability=snapshot,
        on_demand=on_demand,
        market=market,
        arm64_ami=bool(ports.settings.arm64_gpu_ami_id),
        region=region,
        reservations=reservations,
        now=now_iso(),
    )
    scored = placement_score_types(request, signals)
    if scored:
        # Asked once, for a set of the spot offerings the job would try (AWS scores a set of types together).
        read_scores = partial(ports.availability.placement_scores, sorted(scored))
        market.placement_scores = _read(market, MarketSignal.PLACEMENT_SCORES, read_scores, {})
    return signals


def _check_reservation(request: JobRequest, regions: list[Signals]) -> None:
    """RequestRefused when the request names a reservation none of its regions holds (or none could say)."""
    if not request.reservation:
        return
    held = {r.reservation_id for signals in regions for r in signals.reservations}
    if request.reservation in held:
        return
    gaps = [g for signals in regions for g in signals.market.unavailable if g.signal == MarketSignal.RESERVATIONS]
    why = f"reservations could not be read ({gaps[0].operation}: {gaps[0].code})" if gaps else "no such reservation"
    where = ", ".join(str(signals.region) for signals in regions)
    listed = ", ".join(sorted(held)) or "none"
    raise RequestRefused("reservation", f"{request.reservation}: {why} among the account's in {where} (held: {listed})")


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
    """POST /jobs: the plan a job would start with. NoCandidate (a 400, nothing started) when it is empty, or when
    its first choice lies beyond the price band of the cheaper types that fit but are blocked."""
    found, refused = _checked(request, ports)
    if refused is not None:
        raise refused
    return found


def checked_plan(request: JobRequest, ports: Ports) -> Plan:
    """POST /plan: the plan, with the refusal POST /jobs answers the same request with (`refusal`), by the same check
    as check_plannable, so that a plan and a submit never disagree; and a warning naming the capacity regions the
    request may not use that could serve it."""
    found, refused = _checked(request, ports)
    elsewhere = _elsewhere(request, ports)
    if elsewhere:
        found = found.model_copy(update={"warnings": [*found.warnings, elsewhere]})
    if refused is None:
        return found
    said = PlanRefusal(field=refused.field, message=f"{refused.headline}: {refused.message}")
    return found.model_copy(update={"refusal": said})


def _elsewhere(request: JobRequest, ports: Ports) -> str | None:
    """The capacity regions the request may not use that could serve it, and how to allow them (None: none)."""
    allowed, _ = request_regions(request, ports)
    return other_regions_words(request, allowed, ports.settings.regions, partial(plan_request, ports=ports))


def _checked(request: JobRequest, ports: Ports) -> tuple[Plan, NoCandidate | None]:
    """The plan, and why POST /jobs refuses it (None when a job would start with it)."""
    found = plan_request(request, ports)
    return found, refusal(request, found, ports.settings.region)


def select_gpu_type(payload: SelectInput, ports: Ports) -> Selection:
    """SelectGpuType: the ranked offerings the workflow will try in order, at most `max_attempts`."""
    ports.jobs.advance(payload.job_id, JobStatus.SELECTING, attempt=0)
    ranked = plan_request(payload.request, ports)
    # Kept for the job's error, should it fail: where else it could have run, and how to allow it.
    elsewhere = _elsewhere(payload.request, ports)
    if not ranked.candidates:
        also = f" | {elsewhere}" if elsewhere else ""
        raise NoGpuTypeAvailable(f"no GPU instance type fits the request ({rejections_summary(ranked)}){also}")
    if ranked.outside_band is not None and ranked.outside_band.refused:
        # Submitted within its band, the cheaper types were blocked since: the job never runs at a price it refused.
        raise NoGpuTypeAvailable(f"no GPU offering within price_band can start ({beyond_band(ranked)})")
    bound = min(payload.request.max_attempts, MAX_WORKFLOW_CANDIDATES)
    return Selection(candidates=ranked.candidates[:bound], index=0, catalog=ports.catalog.source, elsewhere=elsewhere)
