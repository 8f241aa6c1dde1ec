"""Deployment settings: what varies per account comes from CDK context and the caller's credentials,
fixed names and sizes live here."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_logs as logs
from pydantic import ValidationError

from functions.shared.constants import SERVICE_NAME
from functions.shared.domain.teams.config import DEFAULT_TEAM, TeamsConfig

# Batch resources, job definitions and launch templates all start with this prefix, so IAM can be
# scoped to what the control plane created without knowing the names in advance.
RESOURCE_PREFIX = SERVICE_NAME
LAUNCH_TEMPLATE_NAME = f"{RESOURCE_PREFIX}-gpu"
# A checkpoint outlives its job's retries and fallbacks by days, not months: it is the job's state, not its output.
DEFAULT_CHECKPOINT_RETENTION_DAYS = 14
# Roles a job may run as (request `job_role_arn`): only these may the submit function pass to Batch.
JOB_ROLE_NAME_PREFIX = f"{RESOURCE_PREFIX}-job-"
# Secrets and SSM parameters a job may reference (request `secrets`): the execution role reads only these.
DEFAULT_JOB_SECRETS_PREFIX = f"{RESOURCE_PREFIX}/"

# GPU AMIs plus CUDA images fill a 30 GiB default root volume quickly.
ROOT_VOLUME_GIB = 100
ROOT_DEVICE_NAME = "/dev/xvda"
# IMDSv2 only, and one hop: the instance's own agents reach IMDS, containers (one hop further, behind the
# docker bridge) do not, so a job cannot take the instance role. Jobs get their own role instead.
IMDS_HOP_LIMIT = 1

LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# The public Powertools layer of exactly the release requirements.txt pins (tests/infra checks they agree).
# Layer version numbers do not follow releases (version 27 of the python311 x86_64 layer is 3.23.0), so the
# stack does not guess one: Powertools publishes each release's layer ARN in every region as a public SSM
# parameter, which CloudFormation resolves at deploy time.
POWERTOOLS_VERSION = "3.37.0"
POWERTOOLS_LAYER_PARAMETER = f"/aws/service/powertools/python/x86_64/python3.11/{POWERTOOLS_VERSION}"

API_STAGE_NAME = "v1"
API_THROTTLE_RATE = 20  # requests per second, steady state
API_THROTTLE_BURST = 40

ALARM_PERIOD = Duration.minutes(5)

DEFAULT_MAX_VCPUS_PER_POOL = 256

_ACCOUNT = re.compile(r"^\d{12}$")
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$")


@dataclass(frozen=True)
class DeploySettings:
    """The deployment's context, validated once so constructs can trust it.

    `account` is None unless the caller's credentials (CDK_DEFAULT_ACCOUNT, set by the CDK CLI) or the
    context name one: the template then uses the AWS::AccountId pseudo parameter, so it deploys into
    whichever account runs it and names no other.
    """

    region: str
    zones: tuple[str, ...]
    account: str | None = None
    max_vcpus_per_pool: int = DEFAULT_MAX_VCPUS_PER_POOL
    alarm_email: str | None = None
    arm64_gpu_ami_id: str = ""
    job_secrets_prefix: str = DEFAULT_JOB_SECRETS_PREFIX
    api_gateway_cloudwatch_role: bool = True
    # The most an admin may pay up front for one Capacity Block (context max_capacity_block_upfront_usd): 0, the
    # default, buys none, and the api then has no grant to buy one.
    max_capacity_block_upfront_usd: float = 0.0
    # Who may do what, each team's budgets and GPU cap (context `teams`); None: every caller is an admin of one team.
    teams: TeamsConfig | None = None
    # Capacity regions besides home, each with its zones (context `regions`, home first, and `region_zones`), and
    # the regions a request without `regions` runs in (context `default_regions`; empty: home only).
    capacity_regions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    default_regions: tuple[str, ...] = ()

    @property
    def regions(self) -> tuple[str, ...]:
        """Every capacity region, home first."""
        return (self.region, *self.capacity_regions)

    @property
    def allow_capacity_block_purchase(self) -> bool:
        return self.max_capacity_block_upfront_usd > 0

    @property
    def capped_teams(self) -> dict[str, int]:
        """Each team with a GPU cap, and its max_gpus."""
        teams = self.teams.teams if self.teams else {}
        return {name: team.max_gpus for name, team in teams.items() if team.max_gpus is not None}

    @property
    def shares(self) -> tuple[str, ...]:
        """The share identifiers of a deployment whose teams share pools by weight: each team's, and the default team's
        (an admin of no team submits under it); none without teams."""
        teams = self.teams.teams if self.teams else {}
        return tuple(sorted({*teams, DEFAULT_TEAM})) if teams else ()

    def teams_json(self) -> str:
        """The teams as the api reads them (GPUPILOT_TEAMS); empty without teams."""
        return self.teams.model_dump_json(exclude_defaults=True) if self.teams else ""

    # How long a job's checkpoints stay in the hosts bucket (context `checkpoint_retention_days`).
    checkpoint_retention_days: int = DEFAULT_CHECKPOINT_RETENTION_DAYS

    # The launch template's boot-time GPU check (functions/shared/domain/fleet/userdata.py): on unless turned off.
    gpu_boot_check: bool = True

    @classmethod
    def from_context(cls, context: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> DeploySettings:
        """Read and check the deployment context; a bad value fails synth with the key's name."""
        environ = environ or {}
        account = str(environ.get("CDK_DEFAULT_ACCOUNT") or context.get("account") or "") or None
        region = str(context.get("region") or environ.get("CDK_DEFAULT_REGION") or "")
        zones = tuple(str(zone) for zone in context.get("zones", ()))
        if account is not None and not _ACCOUNT.match(account):
            raise ValueError(f"the account must be a 12-digit AWS account id, got {account!r}")
        if not _REGION.match(region) or region not in _known_regions():
            raise ValueError(
                f"context 'region' (or CDK_DEFAULT_REGION) must be an AWS region with EC2, got {region!r}; "
                f"valid: {', '.join(_known_regions())}"
            )
        _check_zones("zones", region, zones)
        capacity_regions, default_regions = _regions(context, region)
        max_vcpus = int(context.get("max_vcpus_per_pool", DEFAULT_MAX_VCPUS_PER_POOL))
        if max_vcpus <= 0:
            raise ValueError("context 'max_vcpus_per_pool' must be positive")
        alarm_email = context.get("alarm_email") or None
        arm64_ami = str(context.get("arm64_gpu_ami_id") or "")
        if arm64_ami and not re.match(r"^ami-[0-9a-f]{8,17}$", arm64_ami):
            raise ValueError(f"context 'arm64_gpu_ami_id' must be an AMI id, got {arm64_ami!r}")
        secrets_prefix = str(context.get("job_secrets_prefix", DEFAULT_JOB_SECRETS_PREFIX))
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/", secrets_prefix):
            raise ValueError(f"context 'job_secrets_prefix' must be a path like 'gpupilot/', got {secrets_prefix!r}")
        cloudwatch_role = context.get("api_gateway_cloudwatch_role", True)
        if not isinstance(cloudwatch_role, bool):
            raise ValueError("context 'api_gateway_cloudwatch_role' must be true or false")
        if str(context.get("allow_capacity_block_purchase", False)).lower() == "true":
            raise ValueError(
                "context 'allow_capacity_block_purchase' is replaced by 'max_capacity_block_upfront_usd': the most an "
                "admin may pay up front for one Capacity Block (0 or absent: no purchase)"
            )
        ceiling = _ceiling(context.get("max_capacity_block_upfront_usd", 0))
        teams = _teams(context.get("teams"))
        boot_check = context.get("gpu_boot_check", True)
        if not isinstance(boot_check, bool):
            raise ValueError("context 'gpu_boot_check' must be true or false")
        retention = context.get("checkpoint_retention_days", DEFAULT_CHECKPOINT_RETENTION_DAYS)
        if isinstance(retention, str) and retention.isdigit():
            retention = int(retention)  # `cdk synth -c checkpoint_retention_days=7` gives a string
        if isinstance(retention, bool) or not isinstance(retention, int) or retention < 1:
            raise ValueError(f"context 'checkpoint_retention_days' must be a number of days >= 1, got {retention!r}")
        return cls(
            region=region,
            zones=zones,
            account=account,
            max_vcpus_per_pool=max_vcpus,
            alarm_email=str(alarm_email) if alarm_email else None,
            arm64_gpu_ami_id=arm64_ami,
            job_secrets_prefix=secrets_prefix,
            api_gateway_cloudwatch_role=cloudwatch_role,
            capacity_regions=capacity_regions,
            default_regions=default_regions,
            max_capacity_block_upfront_usd=ceiling,
            teams=teams,
            gpu_boot_check=boot_check,
            checkpoint_retention_days=retention,
        )


def _check_zones(key: str, region: str, zones: tuple[str, ...]) -> None:
    if len(zones) < 2:
        raise ValueError(f"context '{key}' needs at least two availability zones")
    foreign = [zone for zone in zones if not re.fullmatch(re.escape(region) + r"[a-z]", zone)]
    if foreign:
        raise ValueError(f"context '{key}' {foreign} are not zones of region {region}")


def _regions(context: Mapping[str, Any], home: str) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """Context `regions` (the home region first, then each capacity region, whose zones `region_zones` names) and
    `default_regions` (some of them): the capacity regions besides home with their zones, and the default ones."""
    regions = [str(r) for r in context.get("regions") or [home]]
    if regions[0] != home or len(set(regions)) != len(regions):
        raise ValueError(f"context 'regions' must list the home region {home} first, each region once, got {regions}")
    unknown = [r for r in regions if r not in _known_regions()]
    if unknown:
        raise ValueError(f"context 'regions' {unknown} are not AWS regions with EC2")
    zones_of = context.get("region_zones") or {}
    capacity: dict[str, tuple[str, ...]] = {}
    for region in regions[1:]:
        capacity[region] = tuple(str(zone) for zone in zones_of.get(region) or ())
        _check_zones(f"region_zones.{region}", region, capacity[region])
    defaults = tuple(str(r) for r in context.get("default_regions") or ())
    stray = [r for r in defaults if r not in regions]
    if stray:
        raise ValueError(f"context 'default_regions' {stray} are not in context 'regions' {regions}")
    return capacity, defaults


def _known_regions() -> list[str]:
    """The regions botocore knows EC2 in: a made-up region would be priced and offered as nowhere."""
    import boto3

    return sorted(boto3.session.Session().get_available_regions("ec2"))


# Lambda's environment variables hold 4 KB in all ("Lambda quotas"): the teams leave room for the rest.
MAX_TEAMS_JSON_BYTES = 3072


def _ceiling(value: Any) -> float:
    """Context max_capacity_block_upfront_usd: dollars, 0 or more (`cdk synth -c ...=5000` gives a string)."""
    try:
        ceiling = float(value)
    except (TypeError, ValueError):
        ceiling = -1.0
    if not math.isfinite(ceiling) or ceiling < 0:
        raise ValueError(f"context 'max_capacity_block_upfront_usd' must be dollars, 0 or more, got {value!r}")
    return ceiling


def _teams(value: Any) -> TeamsConfig | None:
    """Context `teams`, validated as the api reads it; a mistake fails synth naming the key."""
    if value is None or value == {}:
        return None
    if isinstance(value, str):  # `cdk synth -c teams='{...}'` gives a string
        value = json.loads(value)
    try:
        teams = TeamsConfig.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"context 'teams.{where}': {first['msg']}") from None
    size = len(teams.model_dump_json(exclude_defaults=True).encode())
    if size > MAX_TEAMS_JSON_BYTES:
        raise ValueError(f"context 'teams' is {size} bytes as JSON: at most {MAX_TEAMS_JSON_BYTES} fit a Lambda's "
                         "environment; use patterns (*) rather than one entry per principal")  # fmt: skip
    return teams
