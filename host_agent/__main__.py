"""`python3 /opt/gpupilot/agent.pyz run`: the service the user data starts. It steps the agent every second and keeps
what it sees in /var/lib/gpupilot/agent/state.json, which is how an operator checks it on a host (docs/host-agent.md):
whether the instance metadata, Docker and nvidia-smi answered, the jobs it tracks, its last report and error.
GPUPILOT_AGENT_* variables point it elsewhere (its tests: a fake metadata service, fake docker and nvidia-smi)."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time

from host_agent import VERSION
from host_agent.aws import AwsClient, RoleCredentials, environment_credentials
from host_agent.core import Agent, Timing
from host_agent.host import DockerContainers, Imds, NvidiaSmi
from host_agent.report import iso


def main(argv: list[str] | None = None) -> int:
    command = (argv if argv is not None else sys.argv[1:]) or ["run"]
    if command[0] != "run":
        print(f"gpupilot host agent {VERSION}: usage: python3 agent.pyz run", file=sys.stderr)
        return 0 if command[0] in ("--version", "--help") else 2
    setting = os.environ.get
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    imds = Imds(setting("GPUPILOT_AGENT_IMDS", "http://169.254.169.254"))
    found = environment_credentials()
    cloud = AwsClient((lambda: found) if found else RoleCredentials(imds.get), setting("AWS_ENDPOINT_URL"),
                      owner=imds.account())  # fmt: skip
    pace = float(setting("GPUPILOT_AGENT_PACE", "1"))  # how many times faster than a host's (its tests)
    timing = Timing(2 / pace, 5 / pace, 10 / pace, 60 / pace)
    agent = Agent(imds, DockerContainers(setting("GPUPILOT_AGENT_DOCKER", "docker")),
                  NvidiaSmi(setting("GPUPILOT_AGENT_NVIDIA_SMI", "nvidia-smi")), cloud, time.time, timing,
                  owned_root=setting("GPUPILOT_AGENT_ROOT", "/var/lib/gpupilot/checkpoints"))  # fmt: skip
    state = setting("GPUPILOT_AGENT_STATE", "/var/lib/gpupilot/agent/state.json")
    steps, limit = 0, int(setting("GPUPILOT_AGENT_STEPS", "0"))
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda number, _: stopping.append(number))
    logging.info("gpupilot host agent %s started", VERSION)
    while not stopping and not (limit and steps >= limit):
        try:
            agent.step()
        except Exception:  # logged; the next step tries again
            logging.exception("step failed")
        if steps % 10 == 0 or limit:
            write_state(agent, state)
        steps += 1
        time.sleep(float(setting("GPUPILOT_AGENT_INTERVAL", "1")))
    return 0


def write_state(agent: Agent, path: str) -> None:
    jobs = [{"job_id": t.config.job_id, "attempt": t.config.attempt, "checkpoint_directory": t.root,
             "resumed_from": t.resumed_from, "last_upload": iso(t.uploaded_at),
             "gpu_utilization": t.utilization.summary()} for t in agent.tracked.values()]  # fmt: skip
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as written:
            json.dump({"version": VERSION, "at": iso(time.time()), **agent.health, "jobs": jobs}, written, indent=1)
        os.replace(path + ".tmp", path)
    except OSError:
        logging.exception("%s not written", path)


if __name__ == "__main__":
    sys.exit(main())
