"""Refresh the bundled snapshots from a real AWS account: the GPU catalog (EC2 DescribeInstanceTypes) and
the on-demand prices (AWS Price List), each written with its date and source.

    python -m gpupilot.snapshots catalog [--region us-east-1]              # make catalog
    python -m gpupilot.snapshots prices [--region R ...]                   # make prices [REGION=R]

Prices are written one file per region, functions/shared/data/prices/<region>.json; without --region, for
each of the main GPU regions (MAIN_GPU_REGIONS). A region the Price List has no GPU price for is reported
and not written: GPU Pilot then has no data for it, rather than an empty file that says it has.

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
from functions.shared.adapters.prices import PRICE_LIST_REGION, SNAPSHOT_DIR, price_list
from functions.shared.domain.capacity.catalog import catalog_from_descriptions

DATA = Path(__file__).resolve().parent.parent / "functions" / "shared" / "data"
# Where AWS offers most of its NVIDIA GPU types: the regions `make prices` snapshots by default.
MAIN_GPU_REGIONS = (
    "us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "eu-north-1", "ap-northeast-1",
    "ap-southeast-2", "ap-south-1",
)  # fmt: skip


def catalog_snapshot(ec2: Any, region: str) -> dict[str, Any]:
    """The NVIDIA GPU types EC2 describes in `region`, as the bundled catalog file holds them."""
    pages = ec2.get_paginator("describe_instance_types").paginate(
        Filters=[{"Name": "instance-type", "Values": GPU_FAMILY_PATTERNS}]
    )
    catalog = catalog_from_descriptions([item for page in pages for item in page["InstanceTypes"]])
    return {
        "source": f"Amazon EC2 DescribeInstanceTypes in {region} (GpuInfo, VCpuInfo, MemoryInfo, ProcessorInfo), "
        "reduced by functions.shared.domain.capacity.catalog.catalog_from_descriptions (NVIDIA, whole GPUs only)",
        "as_of": datetime.now(UTC).strftime("%Y-%m-%d"),
        "instance_types": [gpu.model_dump(mode="json") for _, gpu in sorted(catalog.items())],
    }


def prices_snapshot(pricing: Any, region: str) -> dict[str, Any]:
    """On-demand Linux prices of every GPU instance in `region`, as the bundled prices file holds them, dated by
    the Price List's publication of them."""
    prices, published = price_list(pricing, region)
    return {
        "source": f"AWS Price List GetProducts, offer AmazonEC2, {region}, Linux, shared tenancy, no pre-installed "
        "software, capacity status Used, OnDemand terms. Types absent here have no price in this snapshot: "
        "/plan shows them with hourly_usd null, after the priced ones.",
        "region": region,
        "currency": "USD",
        "unit": "per instance-hour",
        "as_of": published or datetime.now(UTC).strftime("%Y-%m-%d"),
        "prices": dict(sorted(prices.items())),
    }


def write(path: Path, snapshot: dict[str, Any]) -> None:
    path.write_text(json.dumps(snapshot, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    import boto3

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["catalog", "prices"])
    parser.add_argument("--region", action="append", help="catalog: one (default us-east-1); prices: any number")
    parser.add_argument("--output", type=Path, help="catalog: the file to write (default: the bundled one)")
    parser.add_argument("--into", type=Path, default=DATA / SNAPSHOT_DIR, help="prices: the folder of per-region files")
    args = parser.parse_args(argv)
    if args.what == "catalog":
        region = (args.region or ["us-east-1"])[-1]
        snapshot = catalog_snapshot(boto3.client("ec2", region_name=region), region)
        output = args.output or DATA / "gpu_catalog.json"
        write(output, snapshot)
        print(f"wrote {len(snapshot['instance_types'])} GPU types to {output} ({snapshot['as_of']})")
        return 0
    pricing = boto3.client("pricing", region_name=PRICE_LIST_REGION)
    missing = []
    for region in args.region or MAIN_GPU_REGIONS:
        snapshot = prices_snapshot(pricing, region)
        if not snapshot["prices"]:
            missing.append(region)
            print(f"no GPU prices for {region} in the Price List: nothing written")
            continue
        output = args.into / f"{region}.json"
        write(output, snapshot)
        print(f"wrote {len(snapshot['prices'])} prices to {output} ({snapshot['as_of']})")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
