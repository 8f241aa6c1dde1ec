"""What a job's container tells the agent about the job: the variables GPU Pilot's job definition sets (the control
plane writes the same names: functions/shared/domain/jobs/host_agent.py) and those Batch and ECS set."""

from __future__ import annotations

from dataclasses import dataclass

JOB_ID = "GPUPILOT_JOB_ID"
ATTEMPT = "GPUPILOT_ATTEMPT"
HOME_REGION = "GPUPILOT_HOME_REGION"
CHECKPOINT_DIR = "GPUPILOT_CHECKPOINT_DIR"
CHECKPOINT_BUCKET = "GPUPILOT_CHECKPOINT_BUCKET"
CHECKPOINT_SIGNAL = "GPUPILOT_CHECKPOINT_SIGNAL"
CHECKPOINT_GRACE_SECONDS = "GPUPILOT_CHECKPOINT_GRACE_SECONDS"
CHECKPOINT_EVERY_SECONDS = "GPUPILOT_CHECKPOINT_EVERY_SECONDS"
IDLE_AFTER_SECONDS = "GPUPILOT_IDLE_AFTER_SECONDS"
# Set by Batch in every job's container, and by the ECS agent to the GPUs it gave the container (their UUIDs).
BATCH_JOB_ID, BATCH_QUEUE, VISIBLE_DEVICES = "AWS_BATCH_JOB_ID", "AWS_BATCH_JQ_NAME", "NVIDIA_VISIBLE_DEVICES"


@dataclass(frozen=True)
class Checkpointing:
    """The job's checkpoint directory (its path in the container) and how the agent keeps it."""

    directory: str
    bucket: str
    signal: str = "SIGTERM"
    grace_seconds: float = 90.0
    every_seconds: float | None = None


@dataclass(frozen=True)
class JobConfig:
    job_id: str
    attempt: int
    batch_job_id: str
    pool: str
    home_region: str
    # The GPUs ECS gave the container, by UUID or index (None: every GPU of the host).
    devices: list[str] | None
    checkpoint: Checkpointing | None = None
    idle_after_seconds: float | None = None

    @classmethod
    def from_env(cls, env: dict[str, str], default_region: str) -> JobConfig | None:
        """The job of a container's environment; None for a container that is not a GPU Pilot job's."""
        if not env.get(JOB_ID):
            return None
        checkpoint = None
        if env.get(CHECKPOINT_DIR) and env.get(CHECKPOINT_BUCKET):
            checkpoint = Checkpointing(
                env[CHECKPOINT_DIR],
                env[CHECKPOINT_BUCKET],
                env.get(CHECKPOINT_SIGNAL) or "SIGTERM",
                _number(env, CHECKPOINT_GRACE_SECONDS) or 90.0,
                _number(env, CHECKPOINT_EVERY_SECONDS),
            )
        visible = (env.get(VISIBLE_DEVICES) or "all").strip()
        devices = None if visible == "all" else [d for d in visible.split(",") if d not in ("", "none", "void")]
        return cls(env[JOB_ID], int(_number(env, ATTEMPT) or 1), env.get(BATCH_JOB_ID, ""), env.get(BATCH_QUEUE, ""),
                   env.get(HOME_REGION) or default_region, devices, checkpoint,
                   _number(env, IDLE_AFTER_SECONDS))  # fmt: skip


def _number(env: dict[str, str], name: str) -> float | None:
    try:
        return float(env[name]) if env.get(name) else None
    except ValueError:
        return None
