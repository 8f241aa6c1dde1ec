"""What the world file makes of the embedded moto: the market, offerings, quotas and lifecycles each region's
services present, and the adaptations that make moto behave as AWS does for the product."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from gpupilot.localcloud.clock import LocalClock
from gpupilot.localcloud.dispatch import HandlerDispatcher
from gpupilot.localcloud.moto_adaptations import (
    ComputeEnvironmentLifecycle,
    ConsumableBook,
    RegionWorldView,
    SpotMarket,
    WorkflowClock,
    adapted_moto,
)
from gpupilot.localcloud.reservations import ReservationBook
from gpupilot.localcloud.timeline import LOCAL_CE_CREATE_SECONDS, LOCAL_DELETE_SECONDS, LOCAL_DELETED_SECONDS
from gpupilot.localcloud.world import World


def spot_market(world: World) -> SpotMarket:
    """The spot market of the world's region, from its `spot` section."""
    return SpotMarket(
        offered=world.offered_zones,
        region=world.region,
        hourly_usd={t: s.hourly_usd for t, s in world.spot.items() if s.hourly_usd is not None},
        placement_score={t: 1 if s.capacity == "none" else s.placement_score for t, s in world.spot.items()},
    )


def offerings(world: World) -> dict[str, list[str]]:
    """Every NVIDIA type in the zones of the world's region that offer it."""
    from functions.shared.adapters.ec2 import load_snapshot

    return {instance_type: world.offered_zones(instance_type) for instance_type in load_snapshot()}


def compute_environment_lifecycle(world: World, clock: LocalClock) -> ComputeEnvironmentLifecycle:
    """How long each region's compute environments are CREATING and DELETING, and which the world makes INVALID."""
    others = {region: world.in_region(region) for region in world.regions}
    return ComputeEnvironmentLifecycle(
        create_seconds=LOCAL_CE_CREATE_SECONDS,
        invalid_reason=world.compute_environment_invalid,
        invalid_reason_in={region: other.compute_environment_invalid for region, other in others.items()},
        creating_seconds=world.compute_environment_creating,
        creating_seconds_in={region: other.compute_environment_creating for region, other in others.items()},
        delete_seconds=LOCAL_DELETE_SECONDS,
        deleted_seconds=LOCAL_DELETED_SECONDS,
        clock=clock.monotonic,
    )


def moto_shaped_by(
    world: World,
    *,
    dispatcher: HandlerDispatcher,
    on_job_submitted: Callable[[Any], None],
    lifecycle: ComputeEnvironmentLifecycle,
    speedup: float,
    clock: LocalClock,
    reservations: ReservationBook,
    console_of: Callable[[str], str | None],
    consumables: ConsumableBook,
) -> AbstractContextManager[Any]:
    """moto adapted to the world: its regions' zones, offerings, quotas and spot markets, the fleet behind Batch."""
    others = {region: world.in_region(region) for region in world.regions}
    return adapted_moto(
        dispatcher=dispatcher,
        on_job_submitted=on_job_submitted,
        lifecycle=lifecycle,
        offerings=(world.region, world.zones, offerings(world)),
        quotas=world.quotas,
        spot_market=spot_market(world),
        # The workflow's Wait states and timeouts pass in simulated time, as the jobs do.
        workflow_clock=WorkflowClock(speedup, clock=clock),
        regions={
            region: RegionWorldView(other.zones, offerings(other), other.quotas, spot_market(other))
            for region, other in others.items()
        },
        reservations=reservations,
        console_of=console_of,
        unsold={region: world.in_region(region).unsold() for region in world.all_regions},
        consumables=consumables,
    )
