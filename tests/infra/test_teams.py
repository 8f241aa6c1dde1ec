"""Teams in the template: each capped team's GPU cap is a Batch consumable resource of max_gpus units in every
capacity region; the teams share pools through one fair-share scheduling policy per region; the api (and the sweep)
read the teams; only the functions that read a cap may, and only GPU Pilot's caps; a deployment without teams has none
of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from app import build_app, load_context
from functions.shared import constants as c
from functions.shared.domain.teams.config import TeamsConfig
from stacks.settings import DeploySettings
from tests.infra.conftest import Synthesized

TEAMS = {
    "admins": ["arn:aws:iam::*:role/platform-admin"],
    "teams": {
        "vision": {"members": ["arn:aws:iam::*:role/vision-*"], "budget_usd_per_day": 200, "max_gpus": 16},
        "nlp": {"members": ["arn:aws:iam::*:role/nlp-*"], "weight": 4},
    },
}
CAP_ACTIONS = {"batch:DescribeConsumableResource", "batch:ListJobsByConsumableResource"}


def actions(statement: dict[str, Any]) -> set[str]:
    listed = statement["Action"]
    return set(listed if isinstance(listed, list) else [listed])


@pytest.fixture(scope="module")
def with_teams(tmp_path_factory: pytest.TempPathFactory) -> tuple[Synthesized, dict[str, Any]]:
    root = tmp_path_factory.mktemp("teams")
    context = load_context() | {
        "teams": TEAMS,
        "regions": ["us-east-1", "us-west-2"],
        "region_zones": {"us-west-2": ["us-west-2a", "us-west-2b"]},
    }
    app, stack = build_app(context, outdir=root / "cdk.out", lambda_build_dir=root / "lambda")
    app.synth()
    raw = Template.from_stack(stack).to_json()
    region = json.loads((root / "cdk.out" / f"{c.REGION_STACK_PREFIX}us-west-2.template.json").read_text())
    return Synthesized(app, stack, Template.from_json(raw), raw["Resources"], {}, {}, None), region


def test_a_capped_team_gets_a_consumable_resource_of_its_max_gpus_in_every_region(with_teams) -> None:
    synthesized, region = with_teams
    for resources in (synthesized.resources, region["Resources"]):
        caps = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Batch::ConsumableResource"]
        assert caps == [
            {
                "ConsumableResourceName": "gpupilot-team-vision-gpus",
                "ResourceType": "REPLENISHABLE",
                "TotalQuantity": 16,
            }
        ]


def test_the_api_and_the_sweep_read_the_teams_and_no_other_function_does(with_teams) -> None:
    synthesized, _ = with_teams
    for key, logical in synthesized.function_ids().items():
        variables = synthesized.resources[logical]["Properties"]["Environment"]["Variables"]
        if key in ("api", "health_sweep"):
            assert TeamsConfig.model_validate_json(variables[c.ENV_TEAMS]).teams["vision"].max_gpus == 16
        else:
            assert c.ENV_TEAMS not in variables, key


def test_only_the_functions_that_read_a_cap_may_and_only_gpu_pilot_s_caps(with_teams) -> None:
    synthesized, _ = with_teams
    readers = {}
    for key in synthesized.function_ids():
        granted = [s for s in synthesized.function_statements(key) if actions(s) & CAP_ACTIONS]
        if granted:
            readers[key] = granted
    assert set(readers) == {"api", "submit_job", "diagnose"}
    for statements in readers.values():
        for statement in statements:
            resources = json.dumps(statement["Resource"])
            assert ":consumable-resource/gpupilot-team-*" in resources and ":us-west-2:" in resources
    # A capped team's job definition names its cap: registering it is authorized on the consumable resource too.
    registers = [
        s for s in synthesized.function_statements("submit_job") if "batch:RegisterJobDefinition" in actions(s)
    ]
    assert any(":consumable-resource/gpupilot-team-*" in json.dumps(s["Resource"]) for s in registers)


def test_a_deployment_without_teams_has_no_cap_no_cap_grant_and_no_teams_variable(synthesized: Synthesized) -> None:
    assert synthesized.of_type("AWS::Batch::ConsumableResource") == {}
    for key, logical in synthesized.function_ids().items():
        assert not any(actions(s) & CAP_ACTIONS for s in synthesized.function_statements(key)), key
        assert c.ENV_TEAMS not in synthesized.resources[logical]["Properties"]["Environment"]["Variables"]


def test_teams_share_pools_by_weight_through_one_scheduling_policy_in_every_region(with_teams) -> None:
    synthesized, region = with_teams
    # Given teams of weights 1 (vision, the default) and 4 (nlp)
    # Then each region has the policy, each team's weightFactor 1 / its weight
    for resources in (synthesized.resources, region["Resources"]):
        policies = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Batch::SchedulingPolicy"]
        assert policies == [
            {
                "Name": "gpupilot-fair-share",
                "FairsharePolicy": {
                    "ComputeReservation": 0,
                    "ShareDecaySeconds": 0,
                    "ShareDistribution": [
                        {"ShareIdentifier": "nlp", "WeightFactor": 0.25},
                        {"ShareIdentifier": "vision", "WeightFactor": 1},
                    ],
                },
            }
        ]
    # And only the functions that create pools and submit jobs are told its name
    for key, logical in synthesized.function_ids().items():
        variables = synthesized.resources[logical]["Properties"]["Environment"]["Variables"]
        if key in ("ensure_queue", "submit_job"):
            assert variables[c.ENV_FAIR_SHARE_POLICY] == "gpupilot-fair-share"
        else:
            assert c.ENV_FAIR_SHARE_POLICY not in variables, key


def test_a_pool_s_queue_may_name_the_policy_and_a_job_is_submitted_only_under_a_team_s_share(with_teams) -> None:
    synthesized, _ = with_teams
    creates = [s for s in synthesized.function_statements("ensure_queue") if "batch:CreateJobQueue" in actions(s)]
    resources = json.dumps([s["Resource"] for s in creates])
    assert ":scheduling-policy/gpupilot-fair-share" in resources and ":us-west-2:" in resources
    submits = [s for s in synthesized.function_statements("submit_job") if "batch:SubmitJob" in actions(s)]
    assert [s.get("Condition") for s in submits] == [
        {"StringEquals": {"batch:ShareIdentifier": ["default", "nlp", "vision"]}}
    ]


def test_a_deployment_without_teams_keeps_first_in_first_out_pools(synthesized: Synthesized) -> None:
    assert synthesized.of_type("AWS::Batch::SchedulingPolicy") == {}
    for logical in synthesized.function_ids().values():
        assert c.ENV_FAIR_SHARE_POLICY not in synthesized.resources[logical]["Properties"]["Environment"]["Variables"]
    submits = [s for s in synthesized.function_statements("submit_job") if "batch:SubmitJob" in actions(s)]
    assert submits and all("Condition" not in s for s in submits)
    creates = [s for s in synthesized.function_statements("ensure_queue") if "batch:CreateJobQueue" in actions(s)]
    assert "scheduling-policy" not in json.dumps(creates)


def test_a_teams_context_mistake_fails_synth_naming_the_key() -> None:
    context = load_context() | {"teams": {"teams": {"vision": {"max_gpus": -1}}}}
    with pytest.raises(ValueError, match=r"context 'teams\.teams\.vision\.max_gpus'"):
        DeploySettings.from_context(context)


def test_the_replaced_purchase_switch_is_refused_naming_its_successor() -> None:
    with pytest.raises(ValueError, match="max_capacity_block_upfront_usd"):
        DeploySettings.from_context(load_context() | {"allow_capacity_block_purchase": True})


def test_a_ceiling_that_is_not_dollars_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_capacity_block_upfront_usd"):
        DeploySettings.from_context(load_context() | {"max_capacity_block_upfront_usd": "lots"})
