"""The world file: what the simulated AWS offers and how its GPU fleet behaves.

It owns five modules, imported one way: base (strict sections, WorldError) < behaviour (bad hosts, jobs, faults) <
capacity (instance types, spot, regions, reservations, identities) < model (the World and its checks) < loading (the
file read and its errors explained).
"""

from gpupilot.localcloud.world.base import WorldError
from gpupilot.localcloud.world.behaviour import REFUSABLE, BadHostsWorld, FaultsWorld, JobsWorld
from gpupilot.localcloud.world.capacity import InstanceTypeWorld, RegionWorld, ReservationWorld, SpotWorld
from gpupilot.localcloud.world.loading import load_world
from gpupilot.localcloud.world.model import World, default_zones

__all__ = [
    "REFUSABLE",
    "BadHostsWorld",
    "FaultsWorld",
    "InstanceTypeWorld",
    "JobsWorld",
    "RegionWorld",
    "ReservationWorld",
    "SpotWorld",
    "World",
    "WorldError",
    "default_zones",
    "load_world",
]
