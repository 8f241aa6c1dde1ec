"""How the simulated fleet behaves and fails: bad hosts, jobs' durations and utilization, lost or duplicated events,
refused and throttled calls."""

from __future__ import annotations

import math
import random
from typing import Literal

from pydantic import Field, field_validator, model_validator

from gpupilot.localcloud.world.base import _Strict

BadHostSymptom = Literal["no_gpu_visible", "cuda_error", "boot_check_fails"]


class BadHostsWorld(_Strict):
    """A share of a type's instances are bad GPU hosts (which ones: the seed, repeatably)."""

    share: float = Field(ge=0, le=1, description="The share of launched instances that are bad (exactly, in each run)")
    symptom: BadHostSymptom = Field(
        description="no_gpu_visible: every container start fails with the NVIDIA runtime's NVML error; cuda_error: "
        "every job exits with the CUDA smoke test's CUDA-error code (14); boot_check_fails: the boot-time GPU check "
        "fails (the console shows it) and the instance registers without GPUs"
    )
    seed: int = Field(default=0, description="Which of the instances are bad")
    hold_seconds: float = Field(
        default=10,
        gt=0,
        description="How long each job a bad host fails holds it (ECS stopping the task, the agent cleaning up, Batch "
        "placing the next), in seconds of the local cloud's clock",
    )

    def is_bad(self, index: int) -> bool:
        """Whether the type's `index`-th launch (from 0) is bad: exactly `share` of every run of launches, at offsets
        the seed chooses."""
        phase = random.Random(self.seed).random()
        return math.floor((index + 1) * self.share + phase) > math.floor(index * self.share + phase)


class JobsWorld(_Strict):
    runtime_seconds: float = Field(default=2, ge=0, description="Simulated runtime of every job")
    exit_code: int = Field(default=0, ge=0, le=255)
    checkpoint_every_seconds: float | None = Field(
        default=None,
        gt=0,
        description="A checkpointing job's program writes its checkpoint this often (simulated seconds), besides "
        "when it is signalled; a resumed attempt runs what is left of runtime_seconds after its last checkpoint",
    )
    gpu_utilization: float | list[tuple[float, float]] = Field(
        default=0.9,
        description="Each job's GPU utilisation, 0-1: one number, or [[seconds, utilisation], ...] steps from the "
        "start of its attempt (simulated seconds)",
    )

    @field_validator("gpu_utilization")
    @classmethod
    def _utilizations(cls, value: float | list[tuple[float, float]]) -> float | list[tuple[float, float]]:
        steps = [(0.0, value)] if isinstance(value, int | float) else value
        if not steps or any(not 0 <= share <= 1 or at < 0 for at, share in steps):
            raise ValueError("a utilisation is between 0 and 1, from a step's second 0 or later")
        return value

    def utilization_at(self, seconds: float) -> float:
        """The utilisation `seconds` into an attempt: the last step begun by then (the first before any)."""
        if isinstance(self.gpu_utilization, int | float):
            return float(self.gpu_utilization)
        steps = sorted(self.gpu_utilization)
        return next((share for at, share in reversed(steps) if at <= seconds), steps[0][1])


class EventFaultsWorld(_Strict):
    drop: float = Field(default=0.0, ge=0, le=1, description="Probability a Batch event is never delivered")
    duplicate: float = Field(default=0.0, ge=0, le=1, description="Probability a Batch event is delivered twice")
    reorder: bool = Field(default=False, description="Some events are held back and delivered after the next")


# The calls a world can make AWS refuse (the market signals selection reads), and the errors AWS refuses them
# with, by error code: the HTTP status it comes with (the services' API references and botocore's models).
REFUSABLE: dict[str, dict[str, int]] = {
    "GetSpotPlacementScores": {
        "UnauthorizedOperation": 403,
        "MaxConfigLimitExceeded": 400,
        "RequestLimitExceeded": 503,
    },
    "DescribeSpotPriceHistory": {"UnauthorizedOperation": 403, "RequestLimitExceeded": 503},
    "GetServiceQuota": {"AccessDeniedException": 400, "TooManyRequestsException": 400, "ServiceException": 500},
    "GetProducts": {"AccessDeniedException": 400, "ThrottlingException": 400, "InternalErrorException": 500},
}


class FaultsWorld(_Strict):
    throttle: dict[Literal["batch", "ec2", "dynamodb", "stepfunctions", "ecs", "lambda", "cloudwatch"], float] = Field(
        default_factory=dict, description="Probability that a handler's call to the service is throttled"
    )
    refuse: dict[str, str] = Field(
        default_factory=dict,
        description="AWS operation -> the error code every handler's call to it is refused with (an organisation's "
        "policy, a daily limit, throttling that outlasts the retries)",
    )
    events: EventFaultsWorld = Field(default_factory=EventFaultsWorld)
    lambda_errors: float = Field(
        default=0.0, ge=0, le=1, description="Probability an invocation fails before the function runs"
    )
    seed: int | None = Field(default=None, description="Seed of the faults' random draws")

    @model_validator(mode="after")
    def _probabilities(self) -> FaultsWorld:
        wrong = sorted(service for service, p in self.throttle.items() if not 0 <= p <= 1)
        if wrong:
            raise ValueError(f"throttle: {', '.join(wrong)} must be probabilities from 0 to 1")
        for operation, code in self.refuse.items():
            if operation not in REFUSABLE:
                raise ValueError(f"refuse: unknown operation {operation!r}; valid: {', '.join(REFUSABLE)}")
            if code not in REFUSABLE[operation]:
                raise ValueError(
                    f"refuse.{operation}: unknown error {code!r}; valid: {', '.join(REFUSABLE[operation])}"
                )
        return self
