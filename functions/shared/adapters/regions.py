"""Capacity regions: the network a pool needs there (subnets, security group, instance profile, launch template),
as that region's stack publishes it in an SSM parameter of its own region.

The ids exist only once the region's stack is deployed, in that region: the home stack cannot name them (no
cross-region references), so the functions that build pools read them there, once per process.

IAM: ssm:GetParameter on the parameter's ARN in each capacity region.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from functions.shared.adapters.clients import client
from functions.shared.domain.core.settings import RegionNetwork

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("ssm:GetParameter",)

_lock = threading.Lock()
_networks: dict[tuple[str, str], RegionNetwork] = {}


def region_network(region: str, parameter: str, ssm: Any | None = None) -> RegionNetwork:
    """The network capacity region `region`'s stack wrote to `parameter` (read once per process and region)."""
    with _lock:
        found = _networks.get((region, parameter))
    if found is not None:
        return found
    value = (ssm or client("ssm", region)).get_parameter(Name=parameter)["Parameter"]["Value"]
    found = RegionNetwork.model_validate(json.loads(value))
    with _lock:
        _networks[(region, parameter)] = found
    return found


def forget_networks() -> None:
    """Forget what was read (tests and the local cloud deploy anew)."""
    with _lock:
        _networks.clear()
