"""Amazon EC2's reserved capacity: the account's Capacity Reservations and Capacity Blocks
(DescribeCapacityReservations), the Capacity Blocks it may buy (DescribeCapacityBlockOfferings, PurchaseCapacityBlock),
and the launch templates that target a reservation (copies of the stack's, made with CreateLaunchTemplate).

IAM: DescribeCapacityReservations, DescribeCapacityBlockOfferings, DescribeLaunchTemplates and
DescribeLaunchTemplateVersions have no resource types (granted on `*`); CreateLaunchTemplate is authorized on the new
launch template, with the tags it is created with (aws:RequestTag), and tagging at creation also needs ec2:CreateTags;
PurchaseCapacityBlock is authorized on the capacity reservation it makes (granted only when the deployment allows it).
"""

from __future__ import annotations

import re
from typing import Any

from botocore.exceptions import ClientError

from functions.shared.adapters.base import AWS_ERRORS, ClientAdapter, TtlCache, signal_unavailable
from functions.shared.adapters.clients import client
from functions.shared.domain.core.errors import RequestRefused
from functions.shared.domain.reservations.offerings import BlockOffering, offering_of
from functions.shared.domain.reservations.reservation import (
    ACTIVE,
    LINUX,
    PURCHASED_BY_TAG,
    RESERVATION_TAG,
    SCHEDULED,
    Reservation,
    reservation_launch_data,
    reservation_launch_template,
    reservation_of,
)

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = (
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeCapacityBlockOfferings",
    "ec2:PurchaseCapacityBlock",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateTags",
)
# The condition keys that hold these calls to what GPU Pilot needs (the IAM drift check proves each refuses a call
# that presents another value): EC2 assigns the new resources' ids, so their tags mark GPU Pilot's, and tagging is
# allowed only as part of the call that creates (never on an existing resource).
IAM_CONDITIONS = {
    "ec2:CreateLaunchTemplate": (f"aws:RequestTag/{RESERVATION_TAG}",),
    "ec2:PurchaseCapacityBlock": (f"aws:RequestTag/{PURCHASED_BY_TAG}",),
    "ec2:CreateTags": ("ec2:CreateAction",),
}
# The plan and the sweep read the same reservations within a minute of each other; a launch into one is seen by the
# next read after that (EC2 itself may take minutes to show a new reservation active).
RESERVATIONS_TTL_SECONDS = 60
# The states GPU Pilot may use or wait for (a block being paid for is listed too): the others are over.
LIVE_STATES = (ACTIVE, SCHEDULED, "payment-pending")
# Capacity Blocks run Linux here: the Batch NVIDIA AMIs are Amazon Linux.
INSTANCE_PLATFORM = LINUX
# DescribeCapacityBlockOfferings refuses a question (a duration, a count, a type it does not sell in blocks) with these.
REFUSED_QUESTIONS = ("InvalidParameterValue", "InvalidParameterCombination", "InvalidParameter", "MissingParameter")


class Ec2Reservations(ClientAdapter):
    """Implements ports.Reservations."""

    service = "ec2"
    hint = True  # what a plan reads of them gives up after two attempts, like every market signal

    def __init__(self, ec2: Any | None = None, region: str | None = None) -> None:
        super().__init__(ec2, region)
        self._cache = TtlCache(RESERVATIONS_TTL_SECONDS)

    def reservations(self) -> list[Reservation]:
        cached = self._cache.get("all")
        if cached is not None:
            return list(cached)
        try:
            pages = self._aws.get_paginator("describe_capacity_reservations").paginate(
                Filters=[{"Name": "state", "Values": list(LIVE_STATES)}]
            )
            found = [reservation_of(item) for page in pages for item in page["CapacityReservations"]]
        except AWS_ERRORS as error:
            raise signal_unavailable("DescribeCapacityReservations", error) from error
        self._cache.put("all", found)
        return list(found)

    def reservation(self, reservation_id: str) -> Reservation | None:
        try:
            described = self._standard.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
        except ClientError as error:
            if "NotFound" in error.response.get("Error", {}).get("Code", ""):
                return None
            raise
        items = described.get("CapacityReservations") or []
        return reservation_of(items[0]) if items else None

    def launch_template(self, base: str, base_version: int, reservation: Reservation) -> str:
        name = reservation_launch_template(base, base_version, reservation)
        ec2 = self._standard
        try:
            if ec2.describe_launch_templates(LaunchTemplateNames=[name])["LaunchTemplates"]:
                return name
        except ClientError as error:
            if "NotFound" not in error.response.get("Error", {}).get("Code", ""):
                raise
        versions = ec2.describe_launch_template_versions(LaunchTemplateName=base, Versions=[str(base_version)])
        data = versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]
        request_shape = ec2.meta.service_model.operation_model("CreateLaunchTemplate").input_shape
        try:
            ec2.create_launch_template(
                LaunchTemplateName=name,
                LaunchTemplateData=request_fields(
                    reservation_launch_data(data, reservation), request_shape.members["LaunchTemplateData"]
                ),
                TagSpecifications=[
                    {
                        "ResourceType": "launch-template",
                        "Tags": [{"Key": RESERVATION_TAG, "Value": reservation.reservation_id}],
                    }
                ],
            )
        except ClientError as error:
            # Another workflow made it first: the same data under the same name.
            if "AlreadyExists" not in error.response.get("Error", {}).get("Code", ""):
                raise
        return name

    def block_offerings(self, instance_type: str, count: int, days: int) -> list[BlockOffering]:
        try:
            # "You must specify the duration in 1-day increments up 14 days, and in 7-day increments up to 182 days"
            # (DescribeCapacityBlockOfferings, CapacityDurationHours): whole days, in hours.
            pages = self._standard.get_paginator("describe_capacity_block_offerings").paginate(
                InstanceType=instance_type, InstanceCount=count, CapacityDurationHours=days * 24
            )
            return [offering_of(item, days) for page in pages for item in page.get("CapacityBlockOfferings", [])]
        except ClientError as error:
            details = error.response.get("Error", {})
            if details.get("Code") not in REFUSED_QUESTIONS:
                raise
            message = str(details.get("Message", ""))
            said = re.search(r"(?i)\b(duration|count|instance ?type)\b", message)
            field = {"duration": "days", "count": "count"}.get(said.group(1).lower() if said else "", "instance_type")
            raise RequestRefused(field, f"EC2 refused the question: {message}") from error

    def purchase_block(self, offering_id: str, tags: dict[str, str]) -> Reservation:
        # Bought where it is offered: an offering id is regional.
        once = self._given or client(self.service, self._region, once=True)
        answer = once.purchase_capacity_block(
            CapacityBlockOfferingId=offering_id,
            InstancePlatform=INSTANCE_PLATFORM,
            TagSpecifications=[
                {"ResourceType": "capacity-reservation", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
            ],
        )
        self._cache.put("all", None)
        return reservation_of(answer["CapacityReservation"])

    @property
    def _standard(self) -> Any:
        """A provisioning or API call's client: what it reads is no hint, it takes the standard retries."""
        return self._given or client(self.service, self._region)


def request_fields(data: Any, shape: Any) -> Any:
    """`data` (a DescribeLaunchTemplateVersions answer's) keeping only what CreateLaunchTemplate's request takes
    (`shape`: botocore's model of it). The response carries fields the request refuses, whatever the template holds
    (ResponseLaunchTemplateData against RequestLaunchTemplateData, EC2 API Reference: MetadataOptions.State,
    Operator.Managed and Operator.HiddenByDefault, NetworkInterfaces[].Ipv6Addresses[].IsPrimaryIpv6), and botocore's
    parameter validation refuses an unknown field before the call is sent."""
    if shape.type_name == "structure" and isinstance(data, dict):
        return {k: request_fields(v, shape.members[k]) for k, v in data.items() if k in shape.members}
    if shape.type_name == "list" and isinstance(data, list):
        return [request_fields(item, shape.member) for item in data]
    return data
