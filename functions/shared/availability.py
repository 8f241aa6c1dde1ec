"""Adapter: read what the region offers (zones of our subnets, instance type offerings per zone)."""

from __future__ import annotations

from typing import Any

from functions.shared.selection import AvailabilitySnapshot


def deployment_zones(ec2: Any, subnets: list[str]) -> list[str]:
    """Zones GPU instances can launch in: those of our subnets, or every zone of the region."""
    if subnets:
        found = ec2.describe_subnets(SubnetIds=subnets)["Subnets"]
        return sorted({s["AvailabilityZone"] for s in found})
    zones = ec2.describe_availability_zones(Filters=[{"Name": "state", "Values": ["available"]}])["AvailabilityZones"]
    return sorted(z["ZoneName"] for z in zones)


def offerings_by_type(ec2: Any, zones: list[str], instance_types: list[str]) -> dict[str, list[str]]:
    """instance type -> zones (among `zones`) whose `DescribeInstanceTypeOfferings` lists it."""
    offered: dict[str, set[str]] = {}
    if not zones or not instance_types:
        return {}
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    pages = paginator.paginate(
        LocationType="availability-zone",
        Filters=[
            {"Name": "location", "Values": zones},
            {"Name": "instance-type", "Values": instance_types},
        ],
    )
    for page in pages:
        for offering in page["InstanceTypeOfferings"]:
            offered.setdefault(offering["InstanceType"], set()).add(offering["Location"])
    return {instance_type: sorted(z) for instance_type, z in offered.items()}


def snapshot(ec2: Any, subnets: list[str], instance_types: list[str], unavailable: set[str]) -> AvailabilitySnapshot:
    """Everything selection needs to know about the region, read now."""
    zones = deployment_zones(ec2, subnets)
    return AvailabilitySnapshot(
        zones=zones, offered=offerings_by_type(ec2, zones, instance_types), unavailable=unavailable
    )
