"""Settings read once from the environment at cold start, validated by pydantic.

The local cloud runs every function in one process; it gives each invocation the environment the
synthesized template gives that function (`function_environment`), so a variable the stack forgot to
set is missing locally too.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from functools import cache

from functions.shared import constants as c
from functions.shared.domain.core.settings import DEFAULT_PROVISION_TIMEOUT_SECONDS, Settings

_overlay: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("gpupilot_env", default=None)


@contextlib.contextmanager
def function_environment(variables: Mapping[str, str]) -> Iterator[None]:
    """Within this block (this thread or task), GPU Pilot's variables come from `variables` only."""
    token = _overlay.set(dict(variables))
    try:
        yield
    finally:
        _overlay.reset(token)


def environment() -> Mapping[str, str]:
    """GPU Pilot's variables: the function's own (local cloud), else the process's (Lambda)."""
    overlay = _overlay.get()
    return os.environ if overlay is None else overlay


def _csv(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def settings() -> Settings:
    """The function's settings (cached per environment: it does not change within a Lambda)."""
    env = environment()
    return _settings(tuple(sorted((k, v) for k, v in env.items() if k.startswith(c.ENV_PREFIX))), aws_region())


def aws_region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


@cache
def _settings(variables: tuple[tuple[str, str], ...], region: str) -> Settings:
    env = dict(variables)
    return Settings(
        table_name=env.get(c.ENV_TABLE, "gpupilot"),
        state_machine_arn=env.get(c.ENV_STATE_MACHINE_ARN, ""),
        region=region,
        subnets=_csv(env.get(c.ENV_SUBNETS)),
        security_groups=_csv(env.get(c.ENV_SECURITY_GROUPS)),
        instance_profile_arn=env.get(c.ENV_INSTANCE_PROFILE_ARN, ""),
        launch_template_name=env.get(c.ENV_LAUNCH_TEMPLATE_NAME, ""),
        max_vcpus=int(env.get(c.ENV_MAX_VCPUS, "256")),
        resource_prefix=env.get(c.ENV_RESOURCE_PREFIX, "gpupilot"),
        batch_service_role_arn=env.get(c.ENV_BATCH_SERVICE_ROLE_ARN, ""),
        arm64_gpu_ami_id=env.get(c.ENV_ARM64_GPU_AMI_ID, ""),
        job_role_arn=env.get(c.ENV_JOB_ROLE_ARN, ""),
        hosts_bucket=env.get(c.ENV_HOSTS_BUCKET, ""),
        job_execution_role_arn=env.get(c.ENV_JOB_EXECUTION_ROLE_ARN, ""),
        job_role_pattern=env.get(c.ENV_JOB_ROLE_PATTERN, ""),
        secret_arn_patterns=_csv(env.get(c.ENV_SECRET_ARN_PATTERNS)),
        queue_poll_seconds=int(env.get(c.ENV_QUEUE_POLL_SECONDS, "10")),
        provision_timeout_seconds=int(env.get(c.ENV_PROVISION_TIMEOUT_SECONDS, str(DEFAULT_PROVISION_TIMEOUT_SECONDS))),
        sweep_function_name=env.get(c.ENV_SWEEP_FUNCTION, ""),
        registration_grace_seconds=float(env.get(c.ENV_REGISTRATION_GRACE_SECONDS, "600")),
        launch_grace_seconds=float(env.get(c.ENV_LAUNCH_GRACE_SECONDS, "600")),
        terminate_unregistered=env.get(c.ENV_TERMINATE_UNREGISTERED, "true").lower() == "true",
        deregister_disconnected=env.get(c.ENV_DEREGISTER_DISCONNECTED, "true").lower() == "true",
        disable_pool_after_failures=int(env.get(c.ENV_DISABLE_POOL_AFTER_FAILURES, "2")),
        idle_grace_seconds=float(env.get(c.ENV_IDLE_GRACE_SECONDS, "1800")),
        capacity_regions=_csv(env.get(c.ENV_CAPACITY_REGIONS)),
        default_regions=_csv(env.get(c.ENV_DEFAULT_REGIONS)),
        region_parameter=env.get(c.ENV_REGION_PARAMETER, ""),
        cancel_stuck_after_minutes=float(env.get(c.ENV_CANCEL_STUCK_AFTER_MINUTES, "1440")),
        pool_idle_hours=float(env.get(c.ENV_POOL_IDLE_HOURS, "24")),
        pool_claim_grace_seconds=float(env.get(c.ENV_POOL_CLAIM_GRACE_SECONDS, "900")),
        max_capacity_block_upfront_usd=float(env.get(c.ENV_MAX_CAPACITY_BLOCK_UPFRONT_USD, "0")),
        teams_config=env.get(c.ENV_TEAMS, ""),
        fair_share_policy=env.get(c.ENV_FAIR_SHARE_POLICY, ""),
        quarantine_bad_hosts=env.get(c.ENV_QUARANTINE_BAD_HOSTS, "true").lower() == "true",
        bad_host_window_seconds=float(env.get(c.ENV_BAD_HOST_WINDOW_SECONDS, "3600")),
        max_unhealthy_share=float(env.get(c.ENV_MAX_UNHEALTHY_SHARE, "0.2")),
    )


def reset_settings() -> None:
    _settings.cache_clear()
