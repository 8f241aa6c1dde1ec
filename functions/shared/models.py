"""Pydantic models at every boundary: HTTP bodies, workflow payloads, the job record's views."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

JOB_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
Capacity = Literal["on-demand", "spot"]
CapacityPreference = Literal["on-demand", "spot", "spot-first"]
Arch = Literal["x86_64", "arm64"]


class JobStatus(StrEnum):
    SUBMITTED = "SUBMITTED"
    SELECTING = "SELECTING"
    PROVISIONING = "PROVISIONING"
    RUNNABLE = "RUNNABLE"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class DiagnosisCategory(StrEnum):
    INSUFFICIENT_CAPACITY = "INSUFFICIENT_CAPACITY"
    NOT_OFFERED = "NOT_OFFERED"
    ECS_AGENT_NOT_REGISTERED = "ECS_AGENT_NOT_REGISTERED"
    GPU_NOT_REGISTERED = "GPU_NOT_REGISTERED"
    AGENT_DISCONNECTED = "AGENT_DISCONNECTED"
    COMPUTE_ENVIRONMENT_INVALID = "COMPUTE_ENVIRONMENT_INVALID"
    MAX_VCPUS_REACHED = "MAX_VCPUS_REACHED"
    JOB_TOO_LARGE = "JOB_TOO_LARGE"
    NO_INSTANCES_LAUNCHED = "NO_INSTANCES_LAUNCHED"
    SERVICE_ROLE_PERMISSIONS = "SERVICE_ROLE_PERMISSIONS"
    WAITING_FOR_SCALE_UP = "WAITING_FOR_SCALE_UP"
    UNDETERMINED = "UNDETERMINED"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Batch refuses container properties over 24 KiB: the command and environment share that.
MAX_COMMAND_CHARS = 12_288
MAX_ENVIRONMENT_CHARS = 8_192
MAX_LIST_ITEMS = 64


def _encodable(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError("must be valid UTF-8 text (no lone surrogates)") from error
    return value


class JobRequest(StrictModel):
    """Body of `POST /jobs` and `POST /plan`."""

    # JSON allows neither infinities nor NaN, and DynamoDB could not store them.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=JOB_NAME_PATTERN, description="1-128 of letters, digits, '_' and '-'")
    image: str = Field(min_length=1, max_length=255, description="Container image with the CUDA payload")
    command: list[str] = Field(min_length=1, description="Command and arguments, as a list of strings")
    gpus: int = Field(default=1, ge=1, le=8, description="Physical GPUs for the job")
    min_gpu_memory_gib: float | None = Field(default=None, ge=0.001, le=1024, description="Per GPU")
    vcpus: int | None = Field(default=None, gt=0, le=192)
    memory_gib: float | None = Field(default=None, ge=0.001, le=2048)
    gpu_models: list[str] | None = Field(default=None, description="Preference order, e.g. ['L4', 'A10G']")
    instance_types: list[str] | None = Field(default=None, description="Allow-list of instance types")
    capacity: CapacityPreference = Field(default="on-demand")
    max_hourly_usd: float | None = Field(default=None, ge=0.0001, le=10_000)
    timeout_minutes: int = Field(default=60, ge=1, le=20160)
    stuck_after_minutes: float = Field(default=15, ge=0.001, le=1440, description="> 0; at least 0.001 (60 ms)")
    environment: dict[str, str] = Field(default_factory=dict)
    arch: Arch = Field(default="x86_64")

    @field_validator("name", "image")
    @classmethod
    def _text(cls, value: str) -> str:
        return _encodable(value)

    @field_validator("command")
    @classmethod
    def _command_strings_not_empty(cls, value: list[str]) -> list[str]:
        if any(part == "" for part in value):
            raise ValueError("command parts must be non-empty strings")
        if sum(len(part) for part in value) > MAX_COMMAND_CHARS:
            raise ValueError(f"command must be at most {MAX_COMMAND_CHARS} characters in all")
        return [_encodable(part) for part in value]

    @field_validator("gpu_models", "instance_types")
    @classmethod
    def _non_empty_lists(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or any(not item for item in value)):
            raise ValueError("must be a non-empty list of non-empty strings")
        if value is not None and (len(value) > MAX_LIST_ITEMS or any(len(item) > 64 for item in value)):
            raise ValueError(f"must have at most {MAX_LIST_ITEMS} entries of at most 64 characters")
        return [_encodable(item) for item in value] if value is not None else None

    @field_validator("environment")
    @classmethod
    def _environment_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key or key.startswith("AWS_BATCH"):
                raise ValueError(f"environment name {key!r} is empty or reserved by AWS Batch")
        if sum(len(k) + len(v) for k, v in value.items()) > MAX_ENVIRONMENT_CHARS:
            raise ValueError(f"environment must be at most {MAX_ENVIRONMENT_CHARS} characters in all")
        for key, item in value.items():
            _encodable(key)
            _encodable(item)
        return value


class GpuType(BaseModel):
    """One NVIDIA GPU instance type, as the catalog knows it."""

    instance_type: str
    gpu_model: str
    manufacturer: str
    gpus: int
    gpu_memory_gib: float
    vcpus: int
    memory_gib: float
    arch: Arch


class Candidate(BaseModel):
    """A GPU offering that can run the request, with why it ranks where it does."""

    instance_type: str
    gpu_model: str
    gpus: int
    gpu_memory_gib: float
    vcpus: int
    memory_gib: float
    capacity: Capacity
    hourly_usd: float
    zones: list[str]
    score: float


class Rejected(BaseModel):
    instance_type: str
    reason: str


class Plan(BaseModel):
    """Answer of `POST /plan`: candidates best first, and why the others were left out."""

    candidates: list[Candidate]
    rejected: list[Rejected]


class Diagnosis(BaseModel):
    category: DiagnosisCategory
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    recommendation: str


class Attempt(BaseModel):
    instance_type: str
    capacity: Capacity
    job_queue: str
    batch_job_id: str
    status: str
    status_reason: str | None = None
    diagnosis: Diagnosis | None = None


class Cost(BaseModel):
    usd: float
    hourly_usd: float
    runtime_seconds: float
    gpu_share: float
    pricing: str = Field(description="Where the hourly price came from")


class TimelineEntry(BaseModel):
    status: str
    at: str


class JobView(BaseModel):
    """Body of `GET /jobs/{job_id}`."""

    job_id: str
    name: str
    status: JobStatus
    request: JobRequest
    instance_type: str | None = None
    gpu_model: str | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    cost: Cost | None = None
    timeline: list[TimelineEntry] = Field(default_factory=list)
    execution_arn: str | None = None
    error: str | None = None
    created_at: str
    updated_at: str


class JobList(BaseModel):
    jobs: list[JobView]
    next_token: str | None = None


class SubmitResponse(BaseModel):
    job_id: str
    status: JobStatus
    execution_arn: str


class ErrorBody(BaseModel):
    error: str
    field: str | None = None
    message: str


class Finding(BaseModel):
    kind: DiagnosisCategory
    severity: Literal["info", "warning", "critical"]
    resource: str
    jobs: list[str] = Field(default_factory=list)
    instances: list[str] = Field(default_factory=list)
    evidence: dict[str, Any] = Field(default_factory=dict)
    recommendation: str


class HealthReport(BaseModel):
    """Body of `GET /health` and `POST /sweep`."""

    swept_at: str | None
    findings: list[Finding]
    summary: dict[str, int]


class DailyCost(BaseModel):
    date: str
    usd: float
    by_gpu_type: dict[str, float]
    by_job_name: dict[str, float]


class CostReport(BaseModel):
    """Body of `GET /costs`: what finished jobs cost, per day (UTC, by creation date)."""

    date_from: str = Field(serialization_alias="from")
    date_to: str = Field(serialization_alias="to")
    total_usd: float
    days: list[DailyCost]
