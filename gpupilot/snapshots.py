"""Refresh the bundled snapshots from a real AWS account: the GPU catalog (EC2 DescribeInstanceTypes) and
the on-demand prices (AWS Price List), each written with its date and source.

    python -m gpupilot.snapshots catalog [--region us-east-1]     # make catalog
    python -m gpupilot.snapshots prices [--region us-east-1]      # make prices

Uses the caller's AWS credentials (read-only calls: ec2:DescribeInstanceTypes, pricing:GetProducts).
GPU Pilot runs offline from these snapshots when EC2 or the Price List cannot be asked.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from functions.shared.adapters.ec2 import GPU_FAMILY_PATTERNS
from functions.shared.adapters.prices import PRICE_LIST_REGION, price_list_products
from functions.shared.domain.catalog import catalog_from_descriptions

DATA = Path(__file__).resolve().parent.parent / "functions" / "shared" / "data"


def catalog_snapshot(ec2: Any, region: str) -> dict[str, Any]:
    """The NVIDIA GPU types EC2 describes in `region`, as the bundled catalog file holds them."""
    pages = ec2.get_paginator("describe_instance_types").paginate(
        Filters=[{"Name": "instance-type", "Values": GPU_FAMILY_PATTERNS}]
    )
    catalog = catalog_from_descriptions([item for page in pages for item in page["InstanceTypes"]])
    return {
        "source": f"Amazon EC2 DescribeInstanceTypes in {region} (GpuInfo, VCpuInfo, MemoryInfo, ProcessorInfo), "
        "reduced by functions.shared.domain.catalog.catalog_from_descriptions (NVIDIA, whole GPUs only)",
        "as_of": datetime.now(UTC).strftime("%Y-%m-%d"),
        "instance_types": [gpu.model_dump(mode="json") for _, gpu in sorted(catalog.items())],
    }


def prices_snapshot(pricing: Any, region: str) -> dict[str, Any]:
    """On-demand Linux prices of every GPU instance in `region`, as the bundled prices file holds them."""
    return {
        "source": f"AWS Price List GetProducts, offer AmazonEC2, {region}, Linux, shared tenancy, no pre-installed "
        "software, capacity status Used, OnDemand terms. Types absent here have no price in this snapshot: "
        "/plan shows them with hourly_usd null, after the priced ones.",
        "region": region,
        "currency": "USD",
        "unit": "per instance-hour",
        "as_of": datetime.now(UTC).strftime("%Y-%m-%d"),
        "prices": dict(sorted(price_list_products(pricing, region).items())),
    }


def write(path: Path, snapshot: dict[str, Any]) -> None:
    path.write_text(json.dumps(snapshot, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    import boto3

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["catalog", "prices"])
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--output", type=Path, help="where to write (default: the bundled file)")
    args = parser.parse_args(argv)
    if args.what == "catalog":
        snapshot = catalog_snapshot(boto3.client("ec2", region_name=args.region), args.region)
        output = args.output or DATA / "gpu_catalog.json"
        count = len(snapshot["instance_types"])
    else:
        snapshot = prices_snapshot(boto3.client("pricing", region_name=PRICE_LIST_REGION), args.region)
        output = args.output or DATA / "prices_on_demand.json"
        count = len(snapshot["prices"])
    write(output, snapshot)
    print(f"wrote {count} entries to {output} ({snapshot['as_of']})")


if __name__ == "__main__":
    main()
