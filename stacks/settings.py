"""Deployment settings: what varies per account comes from CDK context, fixed sizes live here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_logs as logs

from functions.shared.constants import SERVICE_NAME

# Batch resources, job definitions and launch templates all start with this prefix, so IAM can be
# scoped to what the control plane created without knowing the names in advance.
RESOURCE_PREFIX = SERVICE_NAME
LAUNCH_TEMPLATE_NAME = f"{RESOURCE_PREFIX}-gpu"

# GPU AMIs plus CUDA images fill a 30 GiB default root volume quickly.
ROOT_VOLUME_GIB = 100
ROOT_DEVICE_NAME = "/dev/xvda"
# Containers sit one network hop behind the instance: a hop limit of 1 would hide IMDS from them.
IMDS_HOP_LIMIT = 2

LOG_RETENTION = logs.RetentionDays.ONE_MONTH
POWERTOOLS_LAYER_ARN = "arn:aws:lambda:{region}:017000801446:layer:AWSLambdaPowertoolsPythonV3-python311-x86_64:27"

API_STAGE_NAME = "v1"
API_THROTTLE_RATE = 20  # requests per second, steady state
API_THROTTLE_BURST = 40

ALARM_PERIOD = Duration.minutes(5)

DEFAULT_MAX_VCPUS_PER_POOL = 256

_ACCOUNT = re.compile(r"^\d{12}$")


@dataclass(frozen=True)
class DeploySettings:
    """The context keys of cdk.json, validated once so constructs can trust them."""

    account: str
    region: str
    zones: tuple[str, ...]
    max_vcpus_per_pool: int = DEFAULT_MAX_VCPUS_PER_POOL
    alarm_email: str | None = None
    arm64_gpu_ami_id: str = ""

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> DeploySettings:
        """Read and check the deployment context; a bad value fails synth with the key's name."""
        account = str(context.get("account", ""))
        region = str(context.get("region", ""))
        zones = tuple(str(zone) for zone in context.get("zones", ()))
        if not _ACCOUNT.match(account):
            raise ValueError(f"context 'account' must be a 12-digit AWS account id, got {account!r}")
        if not region:
            raise ValueError("context 'region' is required")
        if len(zones) < 2:
            raise ValueError("context 'zones' needs at least two availability zones")
        foreign = [zone for zone in zones if not zone.startswith(region)]
        if foreign:
            raise ValueError(f"context 'zones' {foreign} are not in region {region}")
        max_vcpus = int(context.get("max_vcpus_per_pool", DEFAULT_MAX_VCPUS_PER_POOL))
        if max_vcpus <= 0:
            raise ValueError("context 'max_vcpus_per_pool' must be positive")
        alarm_email = context.get("alarm_email") or None
        arm64_ami = str(context.get("arm64_gpu_ami_id") or "")
        if arm64_ami and not re.match(r"^ami-[0-9a-f]{8,17}$", arm64_ami):
            raise ValueError(f"context 'arm64_gpu_ami_id' must be an AMI id, got {arm64_ami!r}")
        return cls(
            account=account,
            region=region,
            zones=zones,
            max_vcpus_per_pool=max_vcpus,
            alarm_email=str(alarm_email) if alarm_email else None,
            arm64_gpu_ami_id=arm64_ami,
        )
