"""The job request: body of `POST /jobs` and `POST /plan`, validated once at the edge."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationInfo, field_validator

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import Arch, CapacityPreference
from functions.shared.domain.requests import host_agent as agent
from functions.shared.domain.requests.references import (  # fmt: skip
    ENVIRONMENT_NAME,
    ENVIRONMENT_VALUE,
    IMAGE_REFERENCE,
    REGION_NAME,
    RESERVATION_ID,
    ROLE_ARN,
    SECRET_ARN,
    schema_keywords,
)

JOB_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
# Batch refuses container properties over 24 KiB: the command, environment and secrets share that.
MAX_COMMAND_CHARS = 12_288
MAX_ENVIRONMENT_CHARS = 8_192
MAX_LIST_ITEMS = 64
MAX_SECRETS = 32
# Batch's RetryStrategy takes 1 to 10 attempts: a spot attempt cannot outlast more reclaims than that.
MAX_SPOT_RECLAIMS = 10
# Fallbacks stay within this multiple of the cheapest candidate's hourly price (README: Picking a GPU).
DEFAULT_PRICE_BAND = 3.0


# What the validators below check, said in the JSON schema too (the OpenAPI document is written from it), so
# that a request the schema calls valid is never refused for its shape.
VARIABLE_NAME = "^(?!AWS_BATCH)" + ENVIRONMENT_NAME.pattern[1:]
ListEntry = Annotated[str, Field(min_length=1, max_length=64)]


def _encodable(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError("must be valid UTF-8 text (no lone surrogates)") from error
    return value


class JobRequest(DomainModel):
    """Body of `POST /jobs` and `POST /plan`."""

    # Numbers are numbers and booleans booleans (`gpus: true` or `"2"` is refused, naming the field).
    # JSON allows neither infinities nor NaN, and DynamoDB could not store them.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=JOB_NAME_PATTERN, description="1-128 of letters, digits, '_' and '-'")
    image: str = Field(
        min_length=1,
        max_length=255,
        description="Container image with the CUDA payload: [registry[:port]/]repository[:tag][@digest]",
        json_schema_extra=schema_keywords(pattern=IMAGE_REFERENCE.pattern),
    )
    # NUL cannot reach a process in an argument, as in a variable (NUL ends the string): refused at the edge.
    command: list[Annotated[str, Field(min_length=1, pattern=ENVIRONMENT_VALUE.pattern)]] = Field(
        min_length=1, description="Command and arguments, as a list of non-empty strings without NUL"
    )
    gpus: StrictInt = Field(default=1, ge=1, le=8, description="Physical GPUs for the job")
    min_gpu_memory_gib: StrictFloat | None = Field(default=None, ge=0.001, le=1024, description="Per GPU")
    vcpus: StrictInt | None = Field(default=None, gt=0, le=192)
    memory_gib: StrictFloat | None = Field(default=None, ge=0.001, le=2048)
    gpu_models: list[ListEntry] | None = Field(
        default=None, min_length=1, max_length=MAX_LIST_ITEMS, description="Preference order, e.g. ['L4', 'A10G']"
    )
    instance_types: list[ListEntry] | None = Field(
        default=None, min_length=1, max_length=MAX_LIST_ITEMS, description="Allow-list of instance types"
    )
    capacity: CapacityPreference = Field(
        default=CapacityPreference.ON_DEMAND, description="reserved: any Capacity Reservation or Block that fits"
    )
    max_hourly_usd: StrictFloat | None = Field(default=None, ge=0.0001, le=10_000)
    price_band: StrictFloat = Field(
        default=DEFAULT_PRICE_BAND,
        ge=1,
        le=1000,
        description="Candidates stay within this multiple of the cheapest one's hourly price, and the first choice "
        "within this multiple of the cheapest type that fits but cannot start now; widen it to allow larger or "
        "pricier instances",
    )
    timeout_minutes: StrictInt = Field(default=60, ge=1, le=20160)
    stuck_after_minutes: StrictFloat = Field(default=15, ge=0.001, le=1440, description="> 0; at least 0.001 (60 ms)")
    environment: dict[str, str] = Field(
        default_factory=dict,
        description="Plain values, readable by whoever can read the job: use secrets for secrets",
        json_schema_extra=schema_keywords(
            propertyNames={"pattern": VARIABLE_NAME},
            additionalProperties={"type": "string", "pattern": ENVIRONMENT_VALUE.pattern},
        ),
    )
    arch: Arch = Field(default=Arch.X86_64)
    preflight: StrictBool = Field(
        default=False,
        description="Run a quick GPU check (nvidia-smi -L, through sh) before the command; needs a shell in the image",
    )
    secrets: dict[str, str] = Field(
        default_factory=dict,
        description="NAME -> ARN of a Secrets Manager secret or SSM parameter, set in the container by Batch; "
        "the value never passes through GPU Pilot",
        json_schema_extra=schema_keywords(
            maxProperties=MAX_SECRETS,
            propertyNames={"pattern": VARIABLE_NAME},
            additionalProperties={"type": "string", "pattern": SECRET_ARN.pattern},
        ),
    )
    job_role_arn: str | None = Field(
        default=None,
        description="IAM role the job's container runs as (default: the stack's minimal job role)",
        json_schema_extra=schema_keywords(pattern=ROLE_ARN.pattern),
    )
    zones: list[ListEntry] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_LIST_ITEMS,
        description="Availability zones the job may run in (non-empty): restricts the candidates and the subnets of "
        "the pool's compute environment",
    )
    regions: list[Annotated[str, Field(min_length=1, max_length=64, pattern=REGION_NAME)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_LIST_ITEMS,
        description="AWS regions the job may run in, an allow-list of the deployment's capacity regions (default: "
        "the deployment's default_regions, the home region unless set): data and images often live in one region",
    )
    checkpoint: agent.CheckpointPolicy | None = agent.CHECKPOINT_FIELD
    idle_policy: agent.IdlePolicy | None = Field(default=None, description=agent.IDLE_POLICY)
    max_attempts: StrictInt = Field(
        default=6, ge=1, le=20, description="GPU offerings tried at most (fallbacks included)"
    )
    give_up_after_minutes: StrictFloat | None = Field(
        default=None, ge=0.001, le=10080, description="Fail the job if it has not started this long after submission"
    )
    spot_reclaims_before_fallback: StrictInt = Field(
        default=1,
        ge=1,
        le=MAX_SPOT_RECLAIMS,
        description="A spot attempt whose hosts EC2 reclaimed this many times ends, and the job goes to its next "
        "candidate (normally on-demand) instead of waiting for spot again in the same pool",
    )
    ignore_unavailable: StrictBool = Field(
        default=False,
        description="Try offerings the memory of unavailable offerings would leave out for now (a retry on purpose)",
    )
    allow_unpriced: StrictBool = Field(
        default=False,
        description="Try GPU types of unknown price that the price band leaves out (by default one is a candidate only "
        "where a priced candidate within the band has as many of the same GPUs)",
    )
    reservation: str | None = Field(
        default=None,
        pattern=RESERVATION_ID,
        description="A Capacity Reservation or Capacity Block of the account (cr-...) to run on; a block that has not "
        "begun is waited for. capacity must be on-demand or reserved",
    )
    reservation_fallback: StrictBool = Field(
        default=False,
        description="With reservation or capacity reserved: when the reservation cannot run the job (full, too short "
        "for timeout_minutes, ended, or Batch cannot start it there), go on to on-demand offerings; default: reserved "
        "capacity only",
    )

    @field_validator("gpus", "vcpus", "timeout_minutes", "max_attempts", "spot_reclaims_before_fallback", mode="before")
    @classmethod
    def _whole_numbers(cls, value: Any) -> Any:
        return agent.integral(value)

    _checkpoint = field_validator("checkpoint", mode="before")(agent.checkpoint_from_boolean)

    @field_validator("name")
    @classmethod
    def _text(cls, value: str) -> str:
        return _encodable(value)

    @field_validator("image")
    @classmethod
    def _image_reference(cls, value: str) -> str:
        if not IMAGE_REFERENCE.fullmatch(value):
            raise ValueError(
                "must be an image reference, [registry[:port]/]repository[:tag][@digest], the repository in lower "
                "case (Docker's reference grammar)"
            )
        return value

    @field_validator("command")
    @classmethod
    def _command_strings_not_empty(cls, value: list[str]) -> list[str]:
        if any(part == "" for part in value):
            raise ValueError("command parts must be non-empty strings")
        if sum(len(part) for part in value) > MAX_COMMAND_CHARS:
            raise ValueError(f"command must be at most {MAX_COMMAND_CHARS} characters in all")
        return [_encodable(part) for part in value]

    @field_validator("gpu_models", "instance_types", "zones", "regions")
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
        for key, item in value.items():
            if not ENVIRONMENT_NAME.fullmatch(key) or key.startswith("AWS_BATCH"):
                raise ValueError(
                    f"environment name {key!r} must be a variable name (letters, digits and '_', not starting with a "
                    "digit) that does not start with AWS_BATCH (reserved by AWS Batch)"
                )
            if not ENVIRONMENT_VALUE.fullmatch(item):
                raise ValueError(f"environment value of {key} must not contain NUL")
        if sum(len(k) + len(v) for k, v in value.items()) > MAX_ENVIRONMENT_CHARS:
            raise ValueError(f"environment must be at most {MAX_ENVIRONMENT_CHARS} characters in all")
        for item in value.values():
            _encodable(item)
        return value

    @field_validator("secrets")
    @classmethod
    def _secret_references(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        clash = sorted(set(value) & set(info.data.get("environment") or {}))
        if clash:
            raise ValueError(f"{', '.join(clash)} set in both secrets and environment")
        if len(value) > MAX_SECRETS:
            raise ValueError(f"at most {MAX_SECRETS} secrets")
        for name, arn in value.items():
            if not ENVIRONMENT_NAME.fullmatch(name) or name.startswith("AWS_BATCH"):
                raise ValueError(f"secret name {name!r} must be a variable name that does not start with AWS_BATCH")
            if not SECRET_ARN.fullmatch(arn):
                raise ValueError(
                    f"secret {name!r} must be the full ARN of a Secrets Manager secret or an SSM parameter"
                )
        return value

    @property
    def asks_reserved(self) -> bool:
        """Whether the request asks for reserved capacity (a reservation it names, or any that fits)."""
        return self.reservation is not None or self.capacity == CapacityPreference.RESERVED

    @field_validator("job_role_arn")
    @classmethod
    def _role_arn(cls, value: str | None) -> str | None:
        if value is not None and not ROLE_ARN.fullmatch(value):
            raise ValueError("must be an IAM role ARN, arn:aws:iam::<account>:role/<name>")
        return value
