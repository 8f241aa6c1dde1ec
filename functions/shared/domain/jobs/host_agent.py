"""What a job's container tells the host agent, and the command wrapper that holds the program until the agent has
restored its checkpoint directory. The names are the agent's (host_agent/config.py); the wrapper is plain POSIX `sh`,
all the agent assumes of an image."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.requests.host_agent import CheckpointPolicy
from functions.shared.domain.requests.job_request import JobRequest

JOB_ID = "GPUPILOT_JOB_ID"
ATTEMPT = "GPUPILOT_ATTEMPT"
HOME_REGION = "GPUPILOT_HOME_REGION"
CHECKPOINT_DIR = "GPUPILOT_CHECKPOINT_DIR"
CHECKPOINT_BUCKET = "GPUPILOT_CHECKPOINT_BUCKET"
CHECKPOINT_SIGNAL = "GPUPILOT_CHECKPOINT_SIGNAL"
CHECKPOINT_GRACE_SECONDS = "GPUPILOT_CHECKPOINT_GRACE_SECONDS"
CHECKPOINT_EVERY_SECONDS = "GPUPILOT_CHECKPOINT_EVERY_SECONDS"
IDLE_AFTER_SECONDS = "GPUPILOT_IDLE_AFTER_SECONDS"
RESUMED = "GPUPILOT_RESUMED"

# Where the directory is in the container, and on the host (the agent finds it from the container's bind mount).
CONTAINER_DIRECTORY = "/gpupilot/checkpoint"
HOST_DIRECTORY = "/var/lib/gpupilot/checkpoints"
VOLUME = "gpupilot-checkpoint"
# How long the wrapper waits for the agent to restore the directory before the program starts without it: a restore
# is one S3 listing and the files' downloads; a host whose agent is not running must not hold the job for ever.
RESTORE_WAIT_SECONDS = 900
WRAPPER_NAME = "gpupilot-checkpoint"
WRAPPER = (
    f'd="${CHECKPOINT_DIR}/.gpupilot"; i=0; '
    f'while [ ! -e "$d/ready" ] && [ "$i" -lt {RESTORE_WAIT_SECONDS} ]; do sleep 1; i=$((i+1)); done; '
    '[ -e "$d/ready" ] || echo "gpupilot: the host agent did not prepare the checkpoint directory: starting without '
    'it" >&2; '
    f'if [ -e "$d/resumed" ]; then {RESUMED}=1; export {RESUMED}; fi; exec "$@"'
)


def checkpoint_policy(request: JobRequest) -> CheckpointPolicy | None:
    return request.checkpoint


def agent_environment(job_id: str, attempt: int, request: JobRequest, bucket: str, home_region: str) -> dict[str, str]:
    """The variables that make a container one of GPU Pilot's jobs to the agent (its samples and reports), and, for
    a checkpointing job, where its directory is kept and how."""
    environment = {JOB_ID: job_id, ATTEMPT: str(attempt), HOME_REGION: home_region}
    policy = checkpoint_policy(request)
    if policy is not None:
        environment |= {
            CHECKPOINT_DIR: CONTAINER_DIRECTORY,
            CHECKPOINT_BUCKET: bucket,
            CHECKPOINT_SIGNAL: policy.signal.value,
            CHECKPOINT_GRACE_SECONDS: str(policy.grace_seconds),
        }
        if policy.every_minutes is not None:
            environment[CHECKPOINT_EVERY_SECONDS] = str(policy.every_minutes * 60)
    if request.idle_policy is not None:
        environment[IDLE_AFTER_SECONDS] = str(request.idle_policy.after_minutes * 60)
    return environment


def checkpoint_volume(job_id: str) -> dict[str, Any]:
    """`volumes` and `mountPoints` of a checkpointing job: a host directory of its own, which the agent restores into
    and uploads from."""
    return {
        "volumes": [{"name": VOLUME, "host": {"sourcePath": f"{HOST_DIRECTORY}/{job_id}"}}],
        "mountPoints": [{"sourceVolume": VOLUME, "containerPath": CONTAINER_DIRECTORY, "readOnly": False}],
    }


def wrapped(command: list[str]) -> list[str]:
    """The command held until the directory is ready (GPUPILOT_RESUMED=1 when a checkpoint was restored into it)."""
    return ["sh", "-c", WRAPPER, WRAPPER_NAME, *command]
