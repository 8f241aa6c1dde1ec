"""The environment names a job's container carries, spelled once on each side: the control plane sets them
(functions/shared/domain/jobs/host_agent.py) and the host agent, shipped to hosts on its own without the functions'
code, reads them (host_agent/config.py). They must be the same names."""

from __future__ import annotations

from functions.shared.domain.jobs import host_agent as control_plane
from host_agent import config as agent

NAMES = ("JOB_ID", "ATTEMPT", "HOME_REGION", "CHECKPOINT_DIR", "CHECKPOINT_BUCKET", "CHECKPOINT_SIGNAL",
         "CHECKPOINT_GRACE_SECONDS", "CHECKPOINT_EVERY_SECONDS", "IDLE_AFTER_SECONDS")  # fmt: skip


def test_the_agent_reads_every_variable_under_the_name_the_control_plane_sets() -> None:
    # Given both sides' names / Then each is spelled the same
    differ = {name: (getattr(control_plane, name), getattr(agent, name)) for name in NAMES
              if getattr(control_plane, name) != getattr(agent, name)}  # fmt: skip
    assert not differ, f"(control plane, agent): {differ}"
