"""Reserved capacity in the use cases: a reservation's pool, the wait for a block to begin, its idle hours charged by
the sweep, and a Capacity Block bought only when the deployment allows it, the caller confirms, within their limit."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from functions.shared.domain.core.clock import iso, now_iso, parse_iso
from functions.shared.domain.core.errors import NoCandidate, PurchaseDisabled, PurchaseInProgress, RequestRefused
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.jobs.steps import EnsureQueueInput, Selection, Timeouts
from functions.shared.domain.reservations.offerings import BlockOffering
from functions.shared.domain.reservations.reservation import FEE_TAG, PURCHASED_BY_TAG, Reservation
from functions.shared.domain.reservations.views import PurchaseRequest
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import check_plannable, plan_request
from functions.shared.usecases.jobs.queries import explain_job, get_job
from functions.shared.usecases.pools.provision import ensure_job_queue
from functions.shared.usecases.reservations.account import (
    block_offerings,
    list_reservations,
    purchase_block,
    record_reservation_waste,
)
from tests.fakes import fake_ports
from tests.fakes.ports import FakeReservations
from tests.unit.usecases.conftest import JOB_ID, create_job

TIMEOUTS = Timeouts(stuck_after_seconds=900, finish_after_seconds=3600, provision_timeout_seconds=600)
CR = "cr-0123456789abcdef0"
OFFERING = BlockOffering(
    offering_id="cb-0123456789abcdef0", instance_type="g5.xlarge", zone="us-east-1a", count=2,
    starts_at="2026-12-01T11:30:00Z", ends_at="2026-12-04T11:30:00Z", hours=72, upfront_usd=1500.0,
)  # fmt: skip


def held(**overrides: Any) -> Reservation:
    """A reservation of 2 g5.xlarge in us-east-1a, active since an hour ago, for a day."""
    now = parse_iso(now_iso())
    fields: dict[str, Any] = {
        "reservation_id": CR, "instance_type": "g5.xlarge", "zone": "us-east-1a", "state": "active", "total": 2,
        "available": 2, "starts_at": iso(now - timedelta(hours=1)), "ends_at": iso(now + timedelta(days=1)),
    }  # fmt: skip
    return Reservation(**(fields | overrides))


def ports_with(*reservations: Reservation, **settings: Any) -> Ports:
    """Fake ports holding the reservations and OFFERING; the stack's launch template at version 3."""
    ports = fake_ports(reservations=FakeReservations(list(reservations), [OFFERING]))
    ports.availability.template_versions[ports.settings.launch_template_name] = 3
    return ports if not settings else replace(ports, settings=ports.settings.model_copy(update=settings))


def ensure_first(ports: Ports, **request: Any) -> Any:
    """EnsureJobQueue for the first candidate of a new job with `request`."""
    parsed = create_job(ports, **request)
    selection = Selection(candidates=plan_request(parsed, ports).candidates[:6], index=0)
    payload = EnsureQueueInput(job_id=JOB_ID, request=parsed, selection=selection, timeouts=TIMEOUTS)
    return ensure_job_queue(payload, ports)


def test_a_reservations_pool_is_built_on_a_launch_template_that_targets_it_and_sized_to_it() -> None:
    # Given an active reservation of 2 g5.xlarge
    ports = ports_with(held())

    # When a job asking for it gets its pool
    status = ensure_first(ports, reservation=CR)

    # Then the pool is named after the reservation, launches from a copy of the stack's template that targets it,
    # in its zone, and holds no more than the reservation does
    environment = ports.pools.environments[status.compute_environment]
    resources = environment["computeResources"]
    [template] = ports.reservations.templates
    assert CR in status.compute_environment
    assert template == f"gpupilot-gpu-{CR}-v3"
    assert resources["launchTemplate"] == {"launchTemplateName": template, "version": "1"}
    assert ports.reservations.templates[template]["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": CR}
    }
    assert resources["maxvCpus"] == 2 * 4
    assert resources["tags"]["gpupilot:reservation"] == CR


def test_a_job_for_a_block_not_begun_waits_until_its_start_with_the_reason_in_status_and_explain() -> None:
    # Given a Capacity Block that begins in an hour
    starts = iso(parse_iso(now_iso()) + timedelta(hours=1))
    ports = ports_with(held(capacity_block=True, match="targeted", state="scheduled", available=0, starts_at=starts))

    # When a job naming it reaches EnsureJobQueue
    status = ensure_first(ports, reservation=CR, timeout_minutes=30)

    # Then no pool is made yet: the workflow waits until the block's start, and the job says why
    assert ports.pools.environments == {}
    assert status.wait_until is not None
    assert 0 <= (parse_iso(status.wait_until) - parse_iso(starts)).total_seconds() < 1
    job = get_job(JOB_ID, ports)
    reason = f"waiting for Capacity Block {CR} starting at {parse_iso(starts):%Y-%m-%d %H:%M} UTC"
    assert job.status == JobStatus.PROVISIONING
    assert job.timeline[-1].reason == reason
    explanation = explain_job(JOB_ID, ports).explanation
    assert explanation is not None and explanation.reason == reason


def test_a_block_the_job_no_longer_fits_when_its_attempt_begins_is_left_and_the_job_falls_back() -> None:
    # Given a Capacity Block with hours left when the job was planned (a 60-minute job fits, each of Batch's 3 tries)
    now = parse_iso(now_iso())
    block = held(capacity_block=True, match="targeted", ends_at=iso(now + timedelta(hours=5)))
    ports = ports_with(block)
    parsed = create_job(ports, reservation=CR, reservation_fallback=True, timeout_minutes=60)
    selection = Selection(candidates=plan_request(parsed, ports).candidates[:6], index=0)
    assert selection.candidates[0].reservation == CR and len(selection.candidates) > 1

    # When the attempt on it begins after earlier candidates took the time: 80 minutes left, EC2 taking its
    # instances back 30 minutes before the end
    ports.reservations.held[CR] = block.model_copy(update={"ends_at": iso(now + timedelta(minutes=80))})
    payload = EnsureQueueInput(job_id=JOB_ID, request=parsed, selection=selection, timeouts=TIMEOUTS)
    status = ensure_job_queue(payload, ports)

    # Then no pool is made on it, the attempt says why, and the workflow goes on to the next candidate
    assert ports.pools.environments == {} and status.remedy == "fall_back" and status.next_index == 1
    assert status.diagnosis is not None and status.diagnosis.category == "INSUFFICIENT_CAPACITY"
    assert "does not fit in the 50 min left on Capacity Block" in status.diagnosis.reason
    [attempt] = get_job(JOB_ID, ports).attempts
    assert attempt.status == "NOT_SUBMITTED" and attempt.reservation == CR


def test_capacity_reserved_with_no_matching_reservation_is_refused_naming_capacity() -> None:
    ports = ports_with()
    request = create_job(ports, capacity="reserved")

    with pytest.raises(NoCandidate) as refused:
        check_plannable(request, ports)
    assert refused.value.field == "capacity"


def test_a_job_asking_only_for_reserved_capacity_is_planned_at_the_reservation_s_rate_adding_nothing() -> None:
    # Given an open ODCR of g5.xlarge (on-demand $1.006/h in the fakes' price list), and a request for reserved
    # capacity only (no on-demand offering of its own to price)
    ports = ports_with(held())
    request = create_job(ports, capacity="reserved")

    # When it is planned
    [candidate] = plan_request(request, ports).candidates

    # Then its candidate costs the account the reservation's rate, adds nothing to the bill, and is billed reserved
    assert (candidate.reservation, candidate.capacity_type) == (CR, "reserved")
    assert (candidate.hourly_usd, candidate.marginal_hourly_usd) == (1.006, 0.0)


def test_the_sweep_charges_a_reservations_free_instances_since_the_sweep_before() -> None:
    # Given an active reservation with 2 free instances billed at $1.006 an hour, swept an hour ago
    ports = ports_with(held())
    at = now_iso()
    since = iso(parse_iso(at) - timedelta(hours=1))

    # When the sweep charges its idle hours
    usd = record_reservation_waste(lambda: since, at, ports)

    # Then two idle instance-hours at the on-demand rate are waste, charged to the reservation
    assert usd == pytest.approx(2 * 1.006, abs=0.01)
    assert {(e.reason, e.instance_id) for e in ports.waste.entries.values()} == {("reservation_idle", CR)}


def test_a_purchase_is_refused_unless_the_deployment_allows_it() -> None:
    ports = ports_with()

    with pytest.raises(PurchaseDisabled):
        purchase_block(PurchaseRequest(offering_id=OFFERING.offering_id, max_upfront_usd=2000.0, confirm=True), ports)
    assert ports.reservations.purchased == []


def test_a_purchase_is_refused_without_confirm() -> None:
    ports = ports_with(max_capacity_block_upfront_usd=5000.0)
    block_offerings("g5.xlarge", 2, 3, ports)

    with pytest.raises(RequestRefused) as refused:
        purchase_block(PurchaseRequest(offering_id=OFFERING.offering_id, max_upfront_usd=2000.0), ports)
    assert refused.value.field == "confirm" and ports.reservations.purchased == []


def test_a_purchase_above_the_deployment_ceiling_is_refused_whatever_the_caller_allows() -> None:
    # Given a deployment whose ceiling is below the offering's fee ($1,500), and the offering listed
    ports = ports_with(max_capacity_block_upfront_usd=1000.0)
    block_offerings("g5.xlarge", 2, 3, ports)

    # When a caller allowing far more buys it / Then it is refused on max_upfront_usd, naming the ceiling
    with pytest.raises(RequestRefused) as refused:
        purchase_block(PurchaseRequest(offering_id=OFFERING.offering_id, max_upfront_usd=99999.0, confirm=True), ports)
    assert refused.value.field == "max_upfront_usd" and "max_capacity_block_upfront_usd" in refused.value.message
    assert ports.reservations.purchased == []


def test_a_purchase_above_max_upfront_usd_is_refused() -> None:
    ports = ports_with(max_capacity_block_upfront_usd=5000.0)
    block_offerings("g5.xlarge", 2, 3, ports)

    with pytest.raises(RequestRefused) as refused:
        purchase_block(PurchaseRequest(offering_id=OFFERING.offering_id, max_upfront_usd=1499.0, confirm=True), ports)
    assert refused.value.field == "max_upfront_usd" and ports.reservations.purchased == []


def test_a_listed_offering_within_the_limit_is_bought_once_and_tagged_with_its_fee() -> None:
    # Given a deployment that allows purchases, and the offering listed
    ports = ports_with(max_capacity_block_upfront_usd=5000.0)
    block_offerings("g5.xlarge", 2, 3, ports)
    request = PurchaseRequest(offering_id=OFFERING.offering_id, max_upfront_usd=1500.0, confirm=True)

    # When it is bought, then bought again
    bought = purchase_block(request, ports)
    with pytest.raises(PurchaseInProgress):
        purchase_block(request, ports)

    # Then EC2 was asked once, with the fee and GPU Pilot's purchase tagged on the reservation
    assert ports.reservations.purchased == [(OFFERING.offering_id, {FEE_TAG: "1500", PURCHASED_BY_TAG: "gpupilot"})]
    assert (bought.capacity_block, bought.upfront_usd) == (True, 1500.0)


def test_the_account_s_reservations_are_listed_from_every_capacity_region_each_with_its_region() -> None:
    from tests.fakes.ports import with_regions

    # Given a deployment with us-west-2, a reservation held at home and another held there
    west = "us-west-2"
    ports = with_regions(
        ports_with(held()),
        {west: {"reservations": FakeReservations([held(reservation_id="cr-0123456789abcdef1", zone=f"{west}a")])}},
    )

    # When the account's reservations are listed
    listed = list_reservations(ports)

    # Then both are, each named with the region that holds it
    regions = {view.reservation_id: view.region for view in listed.reservations}
    assert regions == {CR: ports.settings.region, "cr-0123456789abcdef1": west}


def test_a_capacity_region_whose_reservations_cannot_be_read_is_left_out_of_the_list_with_aws_words() -> None:
    from functions.shared.domain.core.errors import SignalUnavailable
    from tests.fakes.ports import with_regions

    # Given us-west-2, where EC2 throttles DescribeCapacityReservations past the retries
    west = "us-west-2"
    throttled = FakeReservations()
    throttled.unavailable = SignalUnavailable("DescribeCapacityReservations", "RequestLimitExceeded")
    ports = with_regions(ports_with(held()), {west: {"reservations": throttled}})

    # When the account's reservations are listed
    listed = list_reservations(ports)

    # Then home's are, and us-west-2 is left out saying why
    assert [view.reservation_id for view in listed.reservations] == [CR]
    assert listed.left_out == {west: "could not be read (DescribeCapacityReservations: RequestLimitExceeded)"}


def test_the_sweep_charges_only_reservations_gpu_pilot_could_launch_into_billed_to_whom_pays_for_them() -> None:
    # Given an ODCR whose idle hours are billed to another account of the organization, a Windows one, a dedicated
    # one, and one of a type that is not a GPU type
    ports = ports_with(
        held(billed_to="111122223333"),
        held(reservation_id="cr-windows", platform="Windows"),
        held(reservation_id="cr-dedicated", tenancy="dedicated"),
        held(reservation_id="cr-cpu", instance_type="m5.large"),
    )
    at = now_iso()

    # When the sweep charges their idle hours
    record_reservation_waste(lambda: iso(parse_iso(at) - timedelta(hours=1)), at, ports)

    # Then only the first is GPU Pilot's waste, said billed to that account
    charged = {(e.instance_id, e.billed_to) for e in ports.waste.entries.values()}
    assert charged == {(CR, "111122223333")}


def test_offerings_are_listed_in_every_capacity_region_and_one_is_bought_in_its_own() -> None:
    from tests.fakes.ports import with_regions

    # Given an offering at home and another in us-west-2, in a deployment that allows purchases
    west = "us-west-2"
    there = OFFERING.model_copy(update={"offering_id": "cb-0123456789abcdef1", "zone": f"{west}a"})
    home = ports_with(max_capacity_block_upfront_usd=5000.0)
    ports = with_regions(home, {west: {"reservations": FakeReservations([], [there])}})

    # When the offerings are listed, and us-west-2's bought
    listed = block_offerings("g5.xlarge", 2, 3, ports)
    bought = purchase_block(PurchaseRequest(offering_id=there.offering_id, max_upfront_usd=1500.0, confirm=True), ports)

    # Then each is listed with its region and the days asked, and the purchase was made in us-west-2 only
    assert {(o.offering_id, o.region, o.days) for o in listed.offerings} == {
        (OFFERING.offering_id, home.settings.region, 3), (there.offering_id, west, 3)}  # fmt: skip
    assert [o for o, _ in ports.in_region(west).reservations.purchased] == [there.offering_id]
    assert home.reservations.purchased == [] and bought.region == west


def test_an_offering_is_asked_for_again_with_the_days_it_was_listed_for() -> None:
    # Given a block that begins today: 71 h 30 min, offered to a question of 3 days
    short = OFFERING.model_copy(update={"hours": 71.5})
    ports = fake_ports(reservations=FakeReservations([], [short]))
    ports = replace(ports, settings=ports.settings.model_copy(update={"max_capacity_block_upfront_usd": 5000.0}))
    block_offerings("g5.xlarge", 2, 3, ports)

    # When it is bought
    purchase_block(PurchaseRequest(offering_id=short.offering_id, max_upfront_usd=1500.0, confirm=True), ports)

    # Then EC2 was asked again for 3 days (as listed), and the offering bought
    assert ports.reservations.asked_days == [3, 3]
    assert [o for o, _ in ports.reservations.purchased] == [short.offering_id]
