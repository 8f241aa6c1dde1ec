"""What each attempt cost, whatever its end (succeeded, failed, cancelled, fallen back): priced once, when
Batch says it ended, at its capacity type's price (on-demand from the Price List, spot from spot price
history in its zones; in a reservation, the reservation's rate: a Capacity Block's fee over its instance-hours, an
ODCR's on-demand rate) for its runtime, by the share of the instance it held. A price AWS will not give now leaves
the attempt unpriced (a later writer may price it), never fails the step that asked. The share of its instance
that no attempt held is waste (domain/cost/shares.py), noted before the cost so that a writer that fails between the
two leaves the attempt to the next writer."""

from __future__ import annotations

from functions.shared.domain.capacity.fit import resources_on
from functions.shared.domain.core.errors import SignalUnavailable
from functions.shared.domain.core.money import PriceQuote, cheapest
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.cost.attempts import Cost, attempt_cost, gpu_share, instance_share
from functions.shared.domain.cost.shares import SharedInstance, occupant
from functions.shared.domain.fleet.batch import ContainerInstanceState
from functions.shared.domain.jobs.records import AttemptRecord, JobRecord
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.reservations.reservation import hourly_rate
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.teams.budgets import settle


def hourly_quotes(instance_types: list[str], spot: bool, zones: list[str], ports: Ports) -> dict[str, PriceQuote]:
    """Each type's hourly price: on-demand, or the lowest latest spot price among the zones (unpriced: absent)."""
    if not spot:
        found = {t: ports.prices.on_demand(t) for t in instance_types}
        return {t: quote for t, quote in found.items() if quote is not None}
    try:
        by_type = ports.prices.spot(instance_types, zones) if instance_types else {}
    except SignalUnavailable as error:
        logger.warning("spot prices unavailable: left unpriced", extra={"error": str(error)})
        return {}
    lowest = {t: cheapest(by_zone.values()) for t, by_zone in by_type.items()}
    return {t: quote for t, quote in lowest.items() if quote is not None}


def quote_for(attempt: AttemptRecord, ports: Ports, host: ContainerInstanceState | None = None) -> PriceQuote | None:
    """The attempt's hourly price: on-demand; spot averaged over its runtime (else the latest) in the zone it ran
    in (its container instance's, `host`), else the cheapest of its zones; in a reservation, the reservation's rate."""
    if attempt.reserved is not None:
        return hourly_rate(attempt.reserved, ports.prices.on_demand(attempt.instance_type))
    spot = attempt.capacity == CapacityType.SPOT
    zones = [host.zone] if spot and host is not None and host.zone else attempt.zones
    if spot and attempt.started_at and attempt.stopped_at:
        try:
            over = ports.prices.spot_over(attempt.instance_type, zones, attempt.started_at, attempt.stopped_at)
        except SignalUnavailable as error:
            logger.warning("spot price history unavailable: left unpriced", extra={"error": str(error)})
            return None
        if over is not None:
            return over
    return hourly_quotes([attempt.instance_type], spot, zones, ports).get(attempt.instance_type)


def price_attempt(
    request: JobRequest,
    attempt: AttemptRecord,
    runtime_seconds: float | None,
    ports: Ports,
    host: ContainerInstanceState | None = None,
) -> Cost | None:
    """The attempt's cost (zero if it never ran), or None when no price is known for it; `host`: the container
    instance it ran on."""
    quote = quote_for(attempt, ports, host)
    if quote is None:
        return None
    gpu = ports.in_region(attempt.region).catalog.gpu_types().get(attempt.instance_type)
    if gpu is None:
        share = gpu_share(request.gpus, attempt.instance_gpus), "gpus"
    else:
        held = resources_on(request, gpu.gpus, gpu.vcpus, gpu.memory_gib)
        share = instance_share(
            {"gpus": request.gpus, "vcpus": held["VCPU"], "memory": held["MEMORY"] / 1024},
            {"gpus": gpu.gpus, "vcpus": gpu.vcpus, "memory": gpu.memory_gib},
        )
    return attempt_cost(quote, runtime_seconds or 0.0, share=share)


def unpriced_cost(record: JobRecord, number: int, ports: Ports) -> Cost | None:
    """What an ended attempt of the record cost, if it has no cost yet (None: priced already, or no price known)."""
    attempt = record.attempts.get(number)
    if attempt is None or attempt.cost is not None:
        return None
    return price_attempt(record.request, attempt, attempt.runtime_seconds, ports)


def record_attempt_cost(job_id: str, number: int, ports: Ports, record: JobRecord | None = None) -> Cost | None:
    """Price an ended attempt once (the first writer wins: events, the sweep and RecordCost may all try).
    `record`: the job as the caller's own write returned it, so it is not read again."""
    record = record or ports.jobs.get_job(job_id)
    attempt = record.attempts.get(number)
    if attempt is None:
        return None
    if attempt.cost is not None:
        return attempt.cost
    # Its host and its spot prices are in the region it ran in.
    regional = ports.in_region(attempt.region)
    host = regional.fleet.container_instance(attempt.container_instance_arn) if attempt.container_instance_arn else None
    cost = price_attempt(record.request, attempt, attempt.runtime_seconds, regional, host)
    if cost is not None:
        note_share(f"{job_id}#{number}", attempt, cost, host, regional)
        ports.jobs.update_attempt(job_id, number, {}, if_missing={"cost": cost})
        if record.commitment is not None:
            # An attempt priced after its job ended (a cancelled job's): what it cost is spent of the team's budget.
            settle(job_id, ports)
    return cost


def note_share(key: str, attempt: AttemptRecord, cost: Cost, host: ContainerInstanceState | None, ports: Ports) -> None:
    """Add the attempt to the ledger of the instance it ran on (the share of it no attempt held is waste). Not
    when ECS no longer describes the instance: its unused share then goes uncounted, never counted twice."""
    if host is None or not host.ec2_instance_id or not attempt.stopped_at or cost.runtime_seconds <= 0:
        return
    ledger = SharedInstance(
        instance_id=host.ec2_instance_id,
        pool=attempt.job_queue,
        instance_type=attempt.instance_type,
        day=(host.registered_at or attempt.stopped_at)[:10],
        pricing=cost.pricing,
    )
    ran = occupant(attempt.stopped_at, cost.runtime_seconds, cost.gpu_share, cost.hourly_usd)
    if ports.waste.record_share(ledger, key, ran) is None:
        logger.info("unused share not restated", extra={"attempt": key, "instance_id": host.ec2_instance_id})
