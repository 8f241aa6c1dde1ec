"""Buying a Capacity Block is a grant only a deployment that sets a ceiling on it has: without the context
max_capacity_block_upfront_usd the api function cannot buy, with it the grant is held to purchases tagged as GPU
Pilot's and the api is told the ceiling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app import build_app, load_context
from functions.shared import constants as c
from functions.shared.domain.reservations.reservation import PURCHASED_BY_TAG
from tests.infra.conftest import Synthesized


def purchase_statements(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def actions(statement: dict[str, Any]) -> list[str]:
        listed = statement["Action"]
        return listed if isinstance(listed, list) else [listed]

    return [s for s in statements if "ec2:PurchaseCapacityBlock" in actions(s)]


def api_environment(synthesized_resources: dict[str, Any], function_id: str) -> dict[str, str]:
    return dict(synthesized_resources[function_id]["Properties"]["Environment"]["Variables"])


def test_without_a_ceiling_no_function_may_buy_a_capacity_block(synthesized: Synthesized) -> None:
    # Given the default context (no max_capacity_block_upfront_usd)
    # Then no function's role grants ec2:PurchaseCapacityBlock, and the api is not told purchases are allowed
    for key in synthesized.function_ids():
        assert purchase_statements(synthesized.function_statements(key)) == [], key
    api = api_environment(synthesized.resources, synthesized.function_ids()["api"])
    assert c.ENV_MAX_CAPACITY_BLOCK_UPFRONT_USD not in api


def test_with_a_ceiling_the_api_may_buy_a_capacity_block_tagged_as_gpu_pilots(tmp_path: Path) -> None:
    from aws_cdk.assertions import Template

    from tests.infra.conftest import Synthesized as Shape

    # Given a deployment whose ceiling is $5,000 a block, with a capacity region beside home
    context = load_context() | {
        "max_capacity_block_upfront_usd": 5000,
        "regions": ["us-east-1", "us-west-2"],
        "region_zones": {"us-west-2": ["us-west-2a", "us-west-2b"]},
    }
    app, stack = build_app(context, outdir=tmp_path / "cdk.out", lambda_build_dir=tmp_path / "lambda")
    app.synth()
    raw = Template.from_stack(stack).to_json()
    synthesized = Shape(app, stack, Template.from_json(raw), raw["Resources"], {}, {}, None)

    # Then only the api's role may buy, on a new capacity reservation tagged as GPU Pilot's purchase
    [grant] = purchase_statements(synthesized.function_statements("api"))
    assert grant["Condition"] == {"StringEquals": {f"aws:RequestTag/{PURCHASED_BY_TAG}": "gpupilot"}}
    assert ":capacity-reservation/*" in str(grant["Resource"])
    # And in the capacity region too, where its Capacity Blocks are listed and bought
    assert ":us-west-2:" in json.dumps(grant["Resource"])
    others = [key for key in synthesized.function_ids() if key != "api"]
    assert all(purchase_statements(synthesized.function_statements(key)) == [] for key in others)
    api = api_environment(synthesized.resources, synthesized.function_ids()["api"])
    assert api[c.ENV_MAX_CAPACITY_BLOCK_UPFRONT_USD] == "5000"
