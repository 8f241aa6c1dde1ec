"""`make catalog` and `make prices`: the bundled snapshots, rebuilt from the AWS APIs, dated and sourced
(here against moto, whose DescribeInstanceTypes carries GpuInfo, and the local cloud's Price List)."""

from __future__ import annotations

import json

import boto3
from moto import mock_aws

from functions.shared.adapters.ec2 import load_snapshot
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


def test_the_prices_are_rebuilt_from_the_price_list_with_their_date_and_region(tmp_path):
    output = tmp_path / "prices.json"
    with mock_aws(), adapted_moto():
        main(["prices", "--region", "us-east-1", "--output", str(output)])
        direct = boto3.client("pricing", region_name="us-east-1")
        assert direct.get_products(ServiceCode="AmazonEC2", MaxResults=1)["FormatVersion"] == "aws_v1"
    written = json.loads(output.read_text())
    assert (written["region"], written["currency"]) == ("us-east-1", "USD")
    assert written["prices"]["g5.xlarge"] == 1.006 and "GetProducts" in written["source"]
