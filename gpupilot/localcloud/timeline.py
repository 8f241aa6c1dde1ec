"""The local cloud's timeline: how long its compute environments and queues take, and the shorter settings the
functions are told so that a job's pool, fleet and workflow pass in seconds (or, `deployed`, the template's own)."""

from __future__ import annotations

# The local timeline: a compute environment is CREATING for this long, and the workflow polls a new pool
# this often (production: Batch takes tens of seconds, GpuJob polls every 10 s), giving up on it after a minute
# (production: half an hour). Both are real seconds, whatever the speedup (timeline_overrides), so a new pool
# always takes the workflow one WaitForJobQueue round. A deleted queue or compute environment is DELETING for a
# second, then shown DELETED for half a minute, its name taken meanwhile (production: minutes, and longer).
LOCAL_CE_CREATE_SECONDS = 0.5
LOCAL_QUEUE_POLL_SECONDS = "1"
LOCAL_PROVISION_TIMEOUT_SECONDS = "60"
LOCAL_DELETE_SECONDS = 1.0
LOCAL_DELETED_SECONDS = 30.0
# An instance not registered 2 s after launch never will be, here; a job with no instance after 3 s gets none.
_FLEET_CLOCK = {"GPUPILOT_REGISTRATION_GRACE_SECONDS": "2", "GPUPILOT_LAUNCH_GRACE_SECONDS": "3"}
# A workflow goes from claiming its pool to SubmitJob within a second here: a pool claimed 2 s ago can retire.
_POOL_CLOCK = {"GPUPILOT_POOL_CLAIM_GRACE_SECONDS": "2"}
# What the functions are told, by `timings`: "local" (the default) shortens the deployment's settings to the local
# timeline's seconds above; "deployed" leaves each function the values the synthesized template gives it (the ones a
# deployment runs with: 10 minutes' registration and launch grace, a 10 s pool poll, a 30-minute provisioning
# deadline), which pass as the deployment's do unless the local cloud's clock is advanced (POST /local/clock).
TIMINGS = ("local", "deployed")
TIMELINE_OVERRIDES = {
    "api": {
        "GPUPILOT_QUEUE_POLL_SECONDS": LOCAL_QUEUE_POLL_SECONDS,
        "GPUPILOT_PROVISION_TIMEOUT_SECONDS": LOCAL_PROVISION_TIMEOUT_SECONDS,
    }
    | _FLEET_CLOCK,
    "diagnose": _FLEET_CLOCK,
    "health_sweep": _FLEET_CLOCK | _POOL_CLOCK,
    "ensure_queue": _POOL_CLOCK,
}


def timeline_overrides(key: str, speedup: float = 1.0, timings: str = "local") -> dict[str, str]:
    """The local timeline's settings for function `key` at `speedup` (none with the deployed `timings`). The
    workflow's Wait states pass in simulated time, `speedup` times faster: the pool poll it is told is stretched by
    as much, so that it stays a second of the clock against a compute environment's half second of creation."""
    if timings == "deployed":
        return {}
    overrides = dict(TIMELINE_OVERRIDES.get(key, {}))
    if "GPUPILOT_QUEUE_POLL_SECONDS" in overrides:
        overrides["GPUPILOT_QUEUE_POLL_SECONDS"] = str(max(1, round(float(LOCAL_QUEUE_POLL_SECONDS) * speedup)))
    return overrides
