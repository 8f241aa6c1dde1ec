"""The reserved-capacity adapters on moto, adapted as the local cloud adapts it: the account's reservations as EC2
describes them, the Capacity Blocks on offer and their purchase, and the offerings GPU Pilot listed (bought once)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from functions.shared.adapters.offering_store import DynamoListedOfferings
from functions.shared.adapters.reservations import Ec2Reservations
from functions.shared.domain.reservations.reservation import FEE_TAG
from gpupilot.localcloud.moto_adaptations import adapted_moto
from gpupilot.localcloud.reservations import ReservationBook
from gpupilot.localcloud.world import World
from tests.integration.conftest import MOTO_CONFIG

WORLD = World.model_validate(
    {
        "capacity_reservations": [
            {"instance_type": "g5.xlarge", "zone": "us-east-1a", "count": 2},
            {"instance_type": "p5.48xlarge", "zone": "us-east-1b", "count": 4, "starts_in_seconds": 86400,
             "hours": 72, "capacity_block": True, "upfront_usd": 94000},
        ],
        "capacity_block_offerings": [{"instance_type": "p5.48xlarge", "count": 2, "hours": 24, "upfront_usd": 31000}],
    }
)  # fmt: skip


@pytest.fixture
def ec2_reservations() -> Iterator[Ec2Reservations]:
    with mock_aws(config=MOTO_CONFIG), adapted_moto(reservations=ReservationBook(WORLD)):
        yield Ec2Reservations(boto3.client("ec2", region_name="us-east-1"))


def test_the_accounts_reservations_are_read_with_their_room_window_and_a_blocks_fee(ec2_reservations) -> None:
    # When the account's reservations are read
    held = {r.instance_type: r for r in ec2_reservations.reservations()}

    # Then the ODCR is active with 2 free, and the block scheduled, its size and fee read from its tags
    odcr, block = held["g5.xlarge"], held["p5.48xlarge"]
    assert (odcr.state, odcr.total, odcr.available, odcr.capacity_block, odcr.match) == ("active", 2, 2, False, "open")
    assert (block.state, block.total, block.available, block.capacity_block) == ("scheduled", 4, 0, True)
    assert (block.match, block.upfront_usd, block.hours) == ("targeted", 94000.0, 72.0)
    # And each says its platform and tenancy, and whose bill its unused capacity is on (its owner's)
    assert (odcr.platform, odcr.tenancy, odcr.billed_to) == ("Linux/UNIX", "default", "123456789012")


def test_one_reservation_is_read_by_id_and_an_unknown_one_is_none(ec2_reservations) -> None:
    [first, *_] = ec2_reservations.reservations()

    assert ec2_reservations.reservation(first.reservation_id) == first
    assert ec2_reservations.reservation("cr-0000000000000000f") is None


def test_a_block_offering_is_listed_and_bought_tagged_with_its_fee(ec2_reservations) -> None:
    # When the offerings of one day of 2 p5.48xlarge are listed, and the one found is bought
    [offering] = ec2_reservations.block_offerings("p5.48xlarge", 2, 1)
    bought = ec2_reservations.purchase_block(offering.offering_id, {FEE_TAG: "31000"})

    # Then its fee is the offering's, and the purchase is a Capacity Block the account now holds
    assert (offering.upfront_usd, offering.hours, offering.count) == (31000.0, 24.0, 2)
    assert (bought.capacity_block, bought.upfront_usd) == (True, 31000.0)
    assert bought.reservation_id in {r.reservation_id for r in ec2_reservations.reservations()}


def test_a_listed_offering_is_claimed_for_purchase_once(deployment) -> None:
    from functions.shared.domain.reservations.offerings import BlockOffering

    # Given an offering GPU Pilot listed
    listed = DynamoListedOfferings(deployment.table_name)
    offering = BlockOffering(offering_id="cb-0123456789abcdef0", instance_type="p5.48xlarge", zone="us-east-1a",
                             count=2, starts_at="2026-12-01T11:30:00Z", ends_at="2026-12-02T11:30:00Z", hours=24,
                             upfront_usd=31000.0)  # fmt: skip
    listed.remember_offerings([offering])

    # When two purchases claim it
    first, second = listed.claim_purchase(offering.offering_id, "t1"), listed.claim_purchase(offering.offering_id, "t2")
    # And it is listed again meanwhile
    listed.remember_offerings([offering])

    # Then only the first claim holds (a conditional write), and the listing did not clear it
    assert (first, second) == (True, False)
    assert listed.listed_offering(offering.offering_id) == offering
    assert listed.claim_purchase(offering.offering_id, "t3") is False
    assert listed.listed_offering("cb-unknown") is None
