"""Settings read once from the environment at cold start, validated by pydantic."""

from __future__ import annotations

import os
from functools import cache

from pydantic import BaseModel, Field

from functions.shared import constants as c


def _csv(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


class Settings(BaseModel):
    """What a handler needs to know about where it runs."""

    table_name: str = Field(description="DynamoDB table holding jobs, offerings memory and findings")
    state_machine_arn: str = Field(default="", description="GpuJob state machine (api only)")
    region: str = Field(default="us-east-1")
    subnets: list[str] = Field(default_factory=list, description="Subnets GPU instances launch into")
    security_groups: list[str] = Field(default_factory=list)
    instance_profile_arn: str = Field(default="")
    launch_template_name: str = Field(default="")
    max_vcpus: int = Field(default=256, gt=0, description="maxvCpus of each pooled compute environment")
    resource_prefix: str = Field(default="gpupilot", description="Prefix of the Batch resources we create")
    batch_service_role_arn: str = Field(default="", description="Empty: Batch's service-linked role")
    arm64_gpu_ami_id: str = Field(default="", description="Custom NVIDIA AMI for Graviton GPU pools (g5g)")


@cache
def settings() -> Settings:
    """The process's settings (cached: the environment does not change within a Lambda)."""
    env = os.environ
    return Settings(
        table_name=env.get(c.ENV_TABLE, "gpupilot"),
        state_machine_arn=env.get(c.ENV_STATE_MACHINE_ARN, ""),
        region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
        subnets=_csv(env.get(c.ENV_SUBNETS)),
        security_groups=_csv(env.get(c.ENV_SECURITY_GROUPS)),
        instance_profile_arn=env.get(c.ENV_INSTANCE_PROFILE_ARN, ""),
        launch_template_name=env.get(c.ENV_LAUNCH_TEMPLATE_NAME, ""),
        max_vcpus=int(env.get(c.ENV_MAX_VCPUS, "256")),
        resource_prefix=env.get(c.ENV_RESOURCE_PREFIX, "gpupilot"),
        batch_service_role_arn=env.get(c.ENV_BATCH_SERVICE_ROLE_ARN, ""),
        arm64_gpu_ami_id=env.get(c.ENV_ARM64_GPU_AMI_ID, ""),
    )
