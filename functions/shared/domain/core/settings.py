"""Where the control plane runs: the deployment's settings as plain data (read from the environment by
adapters/config.py)."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.model import DomainModel

# Batch takes tens of seconds to minutes to make a compute environment VALID, and making room under its limits
# (a queue drained and deleted, then its compute environment) takes minutes more: half an hour is generous.
DEFAULT_PROVISION_TIMEOUT_SECONDS = 1800


class RegionNetwork(DomainModel):
    """What a pool needs in a capacity region, as that region's stack publishes it (its SSM parameter)."""

    subnets: list[str] = Field(default_factory=list, description="Subnets GPU instances launch into there")
    security_groups: list[str] = Field(default_factory=list)
    instance_profile_arn: str = Field(default="")
    launch_template_name: str = Field(default="")


class Settings(DomainModel):
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
    job_role_arn: str = Field(default="", description="Default IAM role of job containers")
    hosts_bucket: str = Field(default="", description="Where the host agent keeps jobs' checkpoints (home region)")
    job_execution_role_arn: str = Field(default="", description="Role ECS uses to pull images and read secrets")
    job_role_pattern: str = Field(default="", description="ARN glob of roles a request may name as job_role_arn")
    secret_arn_patterns: list[str] = Field(
        default_factory=list, description="ARN globs of the secrets and parameters jobs may reference"
    )
    queue_poll_seconds: int = Field(default=10, ge=1, description="How long the workflow waits between pool checks")
    provision_timeout_seconds: int = Field(
        default=DEFAULT_PROVISION_TIMEOUT_SECONDS,
        ge=1,
        description="How long an attempt waits for its pool to be ready (Batch creating it, room being made) "
        "before it falls back",
    )
    sweep_function_name: str = Field(default="", description="health_sweep Lambda (api only: POST /sweep)")
    registration_grace_seconds: float = Field(
        default=600, gt=0, description="An instance running this long without joining ECS never will"
    )
    launch_grace_seconds: float = Field(
        default=600, gt=0, description="A RUNNABLE job without any instance this long: none is being launched"
    )
    # The sweep's remediation (safe defaults: what it undoes is only ever waste or a dead registration).
    terminate_unregistered: bool = Field(
        default=True, description="Terminate pool instances that never registered with ECS past the grace period"
    )
    deregister_disconnected: bool = Field(
        default=True,
        description="Deregister container instances whose ECS agent disconnected, and terminate their instances",
    )
    disable_pool_after_failures: int = Field(
        default=2,
        ge=0,
        description="Disable a pool's job queue once this many sweeps in a row (each within an hour of the last) "
        "found its instances failing to register with ECS (0: never)",
    )
    idle_grace_seconds: float = Field(
        default=1800, gt=0, description="A pool's instances alive this long with no job in its queue are waste"
    )
    pool_idle_hours: float = Field(
        default=24, gt=0, description="The sweep retires a pool with no job for this long (a new job recreates it)"
    )
    pool_claim_grace_seconds: float = Field(
        default=900,
        gt=0,
        description="A pool claimed by a workflow this recently is not retired (its job may be "
        "between EnsureJobQueue and SubmitJob)",
    )
    home_region: str = Field(
        default="", description="Where the control plane runs, when `region` is a capacity region's (empty: `region`)"
    )
    capacity_regions: list[str] = Field(
        default_factory=list,
        description="The deployment's capacity regions besides its home region (`region`), each with its own stack",
    )
    default_regions: list[str] = Field(
        default_factory=list, description="Regions a request without `regions` may run in (empty: the home region)"
    )
    region_parameter: str = Field(
        default="",
        description="SSM parameter, in each capacity region, naming its network (empty: this function needs none)",
    )
    max_capacity_block_upfront_usd: float = Field(
        default=0,
        ge=0,
        description="The most an admin may pay up front for one Capacity Block, whatever the caller passes (context "
        "max_capacity_block_upfront_usd; 0: the API buys none)",
    )
    fair_share_policy: str = Field(
        default="",
        description="The deployment's fair-share scheduling policy's name, in every region (the teams share each pool "
        "by weight); empty: pools run first in, first out",
    )
    teams_config: str = Field(
        default="",
        description="The deployment's teams (context `teams`), as JSON; empty: every caller is an admin of one team",
    )
    quarantine_bad_hosts: bool = Field(
        default=True,
        description="Drain and terminate GPU hosts that fail jobs for reasons of their own, failed their boot check or "
        "registered without GPUs (within the pool's share; see max_unhealthy_share)",
    )
    bad_host_window_seconds: float = Field(
        default=3600, gt=0, description="How long a host-side failure counts against its host"
    )
    max_unhealthy_share: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="Past this share of a pool's hosts unhealthy at once (one host always may be), none is "
        "quarantined: the pool gets one POOL_UNHEALTHY finding",
    )
    cancel_stuck_after_minutes: float = Field(
        default=1440, ge=0, description="Cancel a job RUNNABLE this long, with the diagnosis as reason (0: never)"
    )

    @property
    def allow_capacity_block_purchase(self) -> bool:
        """Whether the API may buy Capacity Blocks at all: the deployment set a ceiling (and granted the purchase)."""
        return self.max_capacity_block_upfront_usd > 0

    @property
    def home(self) -> str:
        """The home region: where the control plane, its table and its workflow are."""
        return self.home_region or self.region

    @property
    def regions(self) -> list[str]:
        """Every capacity region of the deployment, the home region first."""
        return [self.home, *(r for r in self.capacity_regions if r != self.home)]

    @property
    def several_regions(self) -> bool:
        """Whether the deployment has capacity regions besides home: only then do its messages name regions (a
        home-only deployment's read as before regions)."""
        return len(self.regions) > 1

    def in_region(self, region: str, network: RegionNetwork | None) -> Settings:
        """The settings of a function acting in capacity region `region`: that region's network (none when the
        function needs none), everything else the deployment's."""
        network = network or RegionNetwork(launch_template_name=self.launch_template_name)
        return self.model_copy(update={"region": region, "home_region": self.home} | network.model_dump())
