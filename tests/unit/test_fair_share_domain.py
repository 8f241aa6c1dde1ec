"""Teams share a pool by weight, the pure part: each team's weightFactor in the deployment's fair-share policy, the
policy's ARN beside a pool's, and which share's job starts next."""

from __future__ import annotations

import pytest

from functions.shared.domain.pools.queues import scheduling_policy_arn
from functions.shared.domain.teams.config import TeamsConfig
from functions.shared.domain.teams.shares import (
    MAX_WEIGHT_FACTOR,
    MIN_WEIGHT_FACTOR,
    fairshare_policy,
    next_share,
    share_of,
    weight_factor,
    weights_of,
)

TEAMS = TeamsConfig.model_validate({"teams": {"vision": {"weight": 3}, "nlp": {}, "lab": {"weight": 0.5}}})


def test_a_heavier_team_gets_a_lower_weight_factor_in_inverse_proportion() -> None:
    # Given teams of weights 3, 1 (the default) and 0.5
    # When the deployment's policy is built
    policy = fairshare_policy(TEAMS)
    # Then each share's weightFactor is 1 / weight (Batch: a lower factor is a larger share), to Batch's 4 decimals
    factors = {s["shareIdentifier"]: s["weightFactor"] for s in policy["shareDistribution"]}
    assert factors == {"vision": 0.3333, "nlp": 1.0, "lab": 2.0}
    # And the weights read back from the policy are the teams' own, within the rounding
    assert weights_of(policy) == pytest.approx({"vision": 3, "nlp": 1, "lab": 0.5}, rel=1e-3)
    # And only current usage counts, nothing held back for idle shares
    assert (policy["shareDecaySeconds"], policy["computeReservation"]) == (0, 0)


def test_a_weight_factor_stays_within_the_range_batch_takes() -> None:
    # Given the extremes a team's weight may take (0 < weight <= 1000)
    # Then the factor is clamped into 0.0001..999.9999
    assert weight_factor(1000) == 0.001
    assert weight_factor(0.0001) == MAX_WEIGHT_FACTOR
    assert weight_factor(100_000) == MIN_WEIGHT_FACTOR


def test_a_job_without_a_team_shares_as_the_default_team() -> None:
    assert share_of(None) == "default"
    assert share_of("vision") == "vision"


def test_the_policy_is_in_the_region_and_account_of_the_pool() -> None:
    environment = "arn:aws:batch:eu-west-1:123456789012:compute-environment/gpupilot-od-x8664-g5-xlarge-ab12"
    assert scheduling_policy_arn(environment, "gpupilot-fair-share") == (
        "arn:aws:batch:eu-west-1:123456789012:scheduling-policy/gpupilot-fair-share"
    )


def test_the_next_job_is_the_share_whose_usage_is_least_for_its_weight() -> None:
    weights = {"heavy": 3.0, "light": 1.0}
    # Given nothing runs: the share of the oldest waiting job goes first
    assert next_share(["light", "heavy"], {}, weights) == "light"
    # Given light holds 4 vCPUs (4 per unit of weight) and heavy 8 (2.67): heavy goes next
    assert next_share(["light", "heavy"], {"light": 4, "heavy": 8}, weights) == "heavy"
    # Given heavy holds 12 (4 per unit) and light 4: a tie, to the oldest waiting job
    assert next_share(["light", "heavy"], {"light": 4, "heavy": 12}, weights) == "light"
    # Given heavy holds 16: light
    assert next_share(["heavy", "light"], {"light": 4, "heavy": 16}, weights) == "light"
    # Given a share the policy does not list: it weighs 1
    assert next_share(["heavy", "other"], {"heavy": 8, "other": 4}, weights) == "heavy"
    # Given nobody waits: nobody
    assert next_share([], {"heavy": 4}, weights) is None


def test_with_weights_three_to_one_four_slots_freed_go_three_to_the_heavier_team() -> None:
    # Given four slots of 4 vCPUs freed one by one, light's jobs older than heavy's, both with jobs waiting
    weights, usage, started = {"heavy": 3.0, "light": 1.0}, {"heavy": 0.0, "light": 0.0}, []
    for _ in range(4):
        share = next_share(["light", "heavy"], usage, weights)
        assert share is not None
        usage[share] += 4
        started.append(share)
    # Then three of the four go to the team of weight 3, and the lighter team is not starved
    assert started.count("heavy") == 3 and started.count("light") == 1


def test_a_pool_that_shares_by_weight_is_another_pool_than_a_first_in_first_out_one() -> None:
    from functions.shared.domain.core.settings import Settings
    from functions.shared.domain.core.vocabulary import Arch
    from functions.shared.domain.pools.specs import pool_for, versioned_pool
    from tests.unit.builders import candidate

    # Given the same candidate's pool in a deployment without teams, and in one whose teams share by weight
    base = pool_for(candidate("g5.xlarge"), Arch.X86_64, "gpupilot")
    fifo = Settings(table_name="gpupilot", subnets=["subnet-a"], security_groups=["sg-1"], max_vcpus=64)
    shared = fifo.model_copy(update={"fair_share_policy": "gpupilot-fair-share"})
    # When each is versioned
    fifo_pool, fifo_spec = versioned_pool(base, fifo)
    shared_pool, shared_spec = versioned_pool(base, shared)
    # Then they are two pools (Batch cannot add a policy to a FIFO queue), built alike, and the FIFO one keeps the
    # name it had before teams existed
    assert fifo_pool.name != shared_pool.name and fifo_pool.key == shared_pool.key
    assert fifo_spec["computeResources"] | {"tags": {}} == shared_spec["computeResources"] | {"tags": {}}
    assert fifo_pool.name == versioned_pool(base, fifo.model_copy(update={"fair_share_policy": ""}))[0].name
