"""`make catalog` and `make prices`: the bundled snapshots, rebuilt from the AWS APIs, dated and sourced
(here against moto, whose DescribeInstanceTypes carries GpuInfo, and the local cloud's Price List)."""

from __future__ import annotations

import json

import boto3
from moto import mock_aws

from functions.shared.adapters.ec2 import load_snapshot
from functions.shared.adapters.prices import snapshot_regions
from gpupilot.localcloud.moto_adaptations import adapted_moto
from gpupilot.snapshots import main


def test_the_catalog_is_rebuilt_from_describe_instance_types_with_its_date_and_source(tmp_path):
    output = tmp_path / "catalog.json"
    with mock_aws():
        main(["catalog", "--region", "us-east-1", "--output", str(output)])
    written = json.loads(output.read_text())
    assert written["as_of"] and "DescribeInstanceTypes in us-east-1" in written["source"]
    types = {item["instance_type"]: item for item in written["instance_types"]}
    assert types["g5.xlarge"]["gpu_model"] == "A10G" and "g4ad.xlarge" not in types
    assert set(types) == set(load_snapshot())  # the bundled one was made the same way


def test_the_prices_are_rebuilt_per_region_from_the_price_list_with_their_date_and_region(tmp_path, capsys):
    # Given the Price List (the local cloud's: prices for the regions GPU Pilot bundles, none for others)
    with mock_aws(), adapted_moto():
        # When `make prices` asks for two regions
        status = main(["prices", "--region", "us-east-1", "--region", "eu-west-3", "--into", str(tmp_path)])
        direct = boto3.client("pricing", region_name="us-east-1")
        assert direct.get_products(ServiceCode="AmazonEC2", MaxResults=1)["FormatVersion"] == "aws_v1"
    # Then each region with prices has its own dated, sourced file
    written = json.loads((tmp_path / "us-east-1.json").read_text())
    assert (written["region"], written["currency"]) == ("us-east-1", "USD")
    assert written["prices"]["g5.xlarge"] == 1.006 and "GetProducts" in written["source"] and written["as_of"]
    # And a region the Price List has no GPU price for is reported, not written, and the run says so
    assert not (tmp_path / "eu-west-3.json").exists()
    assert "no GPU prices for eu-west-3" in capsys.readouterr().out
    assert status == 1


def test_the_local_price_list_answers_each_region_from_its_own_snapshot():
    with mock_aws(), adapted_moto():
        pricing = boto3.client("pricing", region_name="us-east-1")

        def regions_of(filters: list[dict[str, str]]) -> set[str]:
            products = pricing.get_products(ServiceCode="AmazonEC2", Filters=filters)["PriceList"]
            return {json.loads(p)["product"]["attributes"]["regionCode"] for p in products}

        assert regions_of([{"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"}]) == {"us-east-1"}
        assert regions_of([{"Type": "TERM_MATCH", "Field": "regionCode", "Value": "eu-west-3"}]) == set()
        assert regions_of([{"Type": "TERM_MATCH", "Field": "instanceType", "Value": "g5.xlarge"}]) == set(
            snapshot_regions()
        )
