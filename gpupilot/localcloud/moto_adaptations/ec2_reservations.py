"""EC2's Capacity Reservations and Capacity Blocks, from the world's reservation book.

20. EC2's reserved capacity: moto implements no Capacity Reservation or Capacity Block call
   (moto answers DescribeCapacityReservations, DescribeCapacityBlockOfferings and PurchaseCapacityBlock with
   "not been implemented"). Here they answer from the world's `capacity_reservations` and
   `capacity_block_offerings` (reservations.py), in botocore's shapes: a reservation's state follows its window
   (scheduled, active, expired), its AvailableInstanceCount drops as the fleet launches instances into it, the
   `state`, `instance-type`, `availability-zone` and `instance-match-criteria` filters and MaxResults/NextToken
   paging are honoured, an unknown id is InvalidCapacityReservationId.NotFound, and an offering is bought once
   (a targeted Capacity Block reservation from the offering's start). A reservation carries its InstancePlatform and
   Tenancy. DescribeCapacityBlockOfferings takes durations in whole days, as EC2 does ("You must specify the
   duration in 1-day increments up 14 days, and in 7-day increments up to 182 days": CapacityDurationHours), refusing
   any other with InvalidParameterValue, and answers each offering with its hours and minutes
   (CapacityBlockDurationHours, CapacityBlockDurationMinutes) to a question of the days it begins in.

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from functions.shared.domain.reservations.offerings import block_days_problem
from gpupilot.localcloud.moto_adaptations.patches import Patches
from gpupilot.localcloud.reservations import ReservationBook


def _ec2_action(patches: Patches, name: str, method: Callable[..., Any]) -> None:
    """An EC2 query action on moto's EC2 responder: replaced when moto has it, added (and removed after) when not."""
    from moto.ec2.responses import EC2Response

    if hasattr(EC2Response, name):
        patches.replace(EC2Response, name, method)
    else:
        setattr(EC2Response, name, method)
        patches.on_exit(lambda: delattr(EC2Response, name))


def _ec2_error(code: str, message: str) -> Exception:
    from moto.ec2.exceptions import EC2ClientError

    return EC2ClientError(code, message)


def _page(items: list[dict[str, Any]], token: str | None, max_results: Any) -> tuple[list[dict[str, Any]], str | None]:
    """One page of `items` (MaxResults, default all; NextToken: the index to go on from)."""
    start = int(token) if token and str(token).isdigit() else 0
    size = int(max_results) if max_results else len(items) or 1
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def world_reservations(patches: Patches, book: ReservationBook) -> None:
    """20. DescribeCapacityReservations, DescribeCapacityBlockOfferings and PurchaseCapacityBlock answer from the
    world's reservations and offerings of the call's region."""
    from moto.core.responses import ActionResult

    def describe_capacity_reservations(self: Any) -> ActionResult:
        ids = self._get_param("CapacityReservationIds", []) or []
        found = book.described(self.region, ids)
        missing = sorted(set(ids) - {r["CapacityReservationId"] for r in found})
        if missing:
            raise _ec2_error(
                "InvalidCapacityReservationId.NotFound", f"The capacity reservation ID '{missing[0]}' does not exist"
            )
        filters = self._filters_from_querystring()
        keys = {"state": "State", "instance-type": "InstanceType", "availability-zone": "AvailabilityZone",
                "instance-match-criteria": "InstanceMatchCriteria"}  # fmt: skip
        for name, values in filters.items():
            if name in keys:
                found = [r for r in found if r[keys[name]] in values]
        page, token = _page(found, self._get_param("NextToken"), self._get_param("MaxResults"))
        return ActionResult({"CapacityReservations": page, "NextToken": token})

    def describe_capacity_block_offerings(self: Any) -> ActionResult:
        hours = self._get_param("CapacityDurationHours")
        if hours is None:
            raise _ec2_error("MissingParameter", "The request must contain the parameter CapacityDurationHours")
        days, rest = divmod(int(hours), 24)
        if rest or block_days_problem(days):
            raise _ec2_error(
                "InvalidParameterValue",
                f"The capacity duration {hours} hours is not supported: specify the duration in 1-day increments up to "
                "14 days, and in 7-day increments up to 182 days",
            )
        wanted_type = self._get_param("InstanceType")
        count = self._get_param("InstanceCount")
        offered = [
            o.described()
            for o in book.offered(self.region)
            if (not wanted_type or o.instance_type == wanted_type)
            and (count is None or o.count == int(count))
            and o.days == days
        ]
        page, token = _page(offered, self._get_param("NextToken"), self._get_param("MaxResults"))
        return ActionResult({"CapacityBlockOfferings": page, "NextToken": token})

    def purchase_capacity_block(self: Any) -> ActionResult:
        offering_id = self._get_param("CapacityBlockOfferingId")
        specs = self._get_param("TagSpecifications", []) or []
        tags = {t["Key"]: t.get("Value", "") for spec in specs for t in spec.get("Tags") or []}
        bought = book.purchase(offering_id, tags, self.region)
        if bought is None:
            raise _ec2_error("InvalidParameterValue", f"The Capacity Block offering {offering_id} is not available")
        described = bought.described(book.now())
        return ActionResult({"CapacityReservation": described, "CapacityReservations": [described]})

    _ec2_action(patches, "describe_capacity_reservations", describe_capacity_reservations)
    _ec2_action(patches, "describe_capacity_block_offerings", describe_capacity_block_offerings)
    _ec2_action(patches, "purchase_capacity_block", purchase_capacity_block)
