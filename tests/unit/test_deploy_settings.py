"""The deployment's capacity regions, from the CDK context: `regions` (home first), `region_zones` (each other
region's zones) and `default_regions`; a bad value fails synth naming its key. The default stays home-only."""

from __future__ import annotations

from typing import Any

import pytest

from app import load_context
from stacks.settings import DEFAULT_CHECKPOINT_RETENTION_DAYS, DeploySettings

HOME_ONLY: dict[str, Any] = {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]}


def settings(**context: Any) -> DeploySettings:
    return DeploySettings.from_context(HOME_ONLY | context)


def test_the_shipped_context_deploys_the_home_region_only():
    # Given cdk.json as shipped / Then there is no capacity region besides home, and no default regions
    shipped = DeploySettings.from_context(load_context())
    assert (shipped.capacity_regions, shipped.default_regions) == ({}, ())
    assert shipped.regions == (shipped.region,)


def test_capacity_regions_come_with_their_zones_home_first():
    # Given home and us-west-2 with two of its zones, us-west-2 a default region
    found = settings(
        regions=["us-east-1", "us-west-2"],
        region_zones={"us-west-2": ["us-west-2a", "us-west-2c"]},
        default_regions=["us-east-1", "us-west-2"],
    )
    # Then
    assert found.capacity_regions == {"us-west-2": ("us-west-2a", "us-west-2c")}
    assert found.regions == ("us-east-1", "us-west-2")
    assert found.default_regions == ("us-east-1", "us-west-2")


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"regions": ["us-west-2", "us-east-1"]}, r"context 'regions' must list the home region us-east-1 first"),
        ({"regions": ["us-east-1", "mars-north-1"]}, r"context 'regions' \['mars-north-1'\] are not AWS regions"),
        ({"regions": ["us-east-1", "us-west-2"]}, r"context 'region_zones.us-west-2' needs at least two"),
        (
            {"regions": ["us-east-1", "us-west-2"], "region_zones": {"us-west-2": ["us-west-2a", "eu-west-1b"]}},
            r"context 'region_zones.us-west-2' \['eu-west-1b'\] are not zones of region us-west-2",
        ),
        ({"default_regions": ["us-west-2"]}, r"context 'default_regions' \['us-west-2'\] are not in context 'regions'"),
    ],
)
def test_a_bad_regions_context_fails_synth_naming_its_key(context: dict[str, Any], message: str):
    with pytest.raises(ValueError, match=message):
        settings(**context)


def test_the_shipped_context_deploys_into_another_region_by_changing_region_and_zones_alone():
    # Given cdk.json as shipped, with only the region and its zones changed
    moved = DeploySettings.from_context(load_context() | {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]})
    # Then that region is home, and the only capacity region
    assert moved.regions == ("eu-west-1",)


@pytest.mark.parametrize(("given", "days"), [(None, DEFAULT_CHECKPOINT_RETENTION_DAYS), (7, 7), ("30", 30)])
def test_checkpoints_expire_after_the_days_the_context_sets_or_a_default(given: Any, days: int):
    context = {} if given is None else {"checkpoint_retention_days": given}
    assert settings(**context).checkpoint_retention_days == days


@pytest.mark.parametrize("given", [0, -3, "a week", True, 1.5])
def test_a_checkpoint_retention_that_is_not_a_number_of_days_fails_synth_naming_its_key(given: Any):
    with pytest.raises(ValueError, match=r"context 'checkpoint_retention_days' must be a number of days"):
        settings(checkpoint_retention_days=given)
