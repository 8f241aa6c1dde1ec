"""JobRequest validation: what `POST /jobs` and `POST /plan` accept, and which field a refusal names."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from pydantic import ValidationError

from functions.shared.domain.requests.host_agent import CheckpointPolicy
from functions.shared.domain.requests.job_request import JobRequest

VALID = {"name": "train", "image": "nvidia/cuda:12.4.1-base", "command": ["nvidia-smi", "-L"]}


def refused_field(**overrides: Any) -> tuple[Any, ...]:
    """The location of the first error when validating VALID with `overrides`."""
    with pytest.raises(ValidationError) as raised:
        JobRequest.model_validate(VALID | overrides)
    return raised.value.errors()[0]["loc"]


def test_minimal_request_gets_the_documented_defaults():
    # Given / When
    request = JobRequest.model_validate(VALID)

    # Then
    assert (request.gpus, request.capacity, request.arch) == (1, "on-demand", "x86_64")
    assert (request.timeout_minutes, request.stuck_after_minutes, request.environment) == (60, 15, {})


@pytest.mark.parametrize("name", ["", "has space", "dots.not.allowed", "slash/no", "a" * 129])
def test_names_outside_the_pattern_are_refused(name):
    # Given / When / Then
    assert refused_field(name=name) == ("name",)


@pytest.mark.parametrize("name", ["a", "A_b-9", "a" * 128])
def test_names_of_letters_digits_underscore_and_dash_up_to_128_are_accepted(name):
    # Given / When / Then
    assert JobRequest.model_validate(VALID | {"name": name}).name == name


@pytest.mark.parametrize("command", [[], ["python", ""], "python train.py"])
def test_command_must_be_a_non_empty_list_of_non_empty_strings(command):
    # Given / When / Then
    assert refused_field(command=command)[0] == "command"


@pytest.mark.parametrize("gpus", [0, 9, -1])
def test_gpus_outside_one_to_eight_are_refused(gpus):
    # Given / When / Then
    assert refused_field(gpus=gpus) == ("gpus",)


@pytest.mark.parametrize("gpus", [1, 8])
def test_gpus_from_one_to_eight_are_accepted(gpus):
    # Given / When / Then
    assert JobRequest.model_validate(VALID | {"gpus": gpus}).gpus == gpus


@pytest.mark.parametrize("minutes", [0, -5])
def test_stuck_after_minutes_must_be_positive(minutes):
    # Given / When / Then
    assert refused_field(stuck_after_minutes=minutes) == ("stuck_after_minutes",)


def test_unknown_capacity_is_refused():
    # Given / When / Then
    assert refused_field(capacity="dedicated") == ("capacity",)


def test_unknown_arch_is_refused():
    # Given / When / Then
    assert refused_field(arch="riscv64") == ("arch",)


def test_unknown_field_is_refused_naming_it():
    # Given a typo'd field name
    with pytest.raises(ValidationError) as raised:
        JobRequest.model_validate(VALID | {"gpu": 2})

    # Then the error is extra_forbidden on that field
    error = raised.value.errors()[0]
    assert (error["type"], error["loc"]) == ("extra_forbidden", ("gpu",))


@pytest.mark.parametrize("name", ["AWS_BATCH_JOB_ID", "AWS_BATCH_CE_NAME", ""])
def test_environment_names_reserved_by_batch_or_empty_are_refused(name):
    # Given / When / Then
    assert refused_field(environment={name: "x"}) == ("environment",)


def test_ordinary_environment_names_are_accepted():
    # Given / When / Then
    assert JobRequest.model_validate(VALID | {"environment": {"EPOCHS": "3"}}).environment == {"EPOCHS": "3"}


@pytest.mark.parametrize("name", ["A=B", "1ST", "MY-VAR", "my.var", "A B", "Ä", "A\n", "\x00"])
def test_environment_names_that_are_not_variable_names_are_refused(name):
    # Given / When / Then: the container's environment is NAME=value strings, so "A=B" would set another
    # variable; only letters, digits and '_', not starting with a digit, name a variable everywhere
    assert refused_field(environment={name: "x"}) == ("environment",)


def test_an_environment_value_with_nul_is_refused():
    # Given / When / Then: a process's environment is NUL-terminated strings
    assert refused_field(environment={"A": "x\x00y"}) == ("environment",)


def test_environment_values_may_hold_any_other_text():
    # Given / When / Then
    environment = {"_A1": 'a=b; c\nd \u00e9 "q" \\', "lower_case": ""}
    assert JobRequest.model_validate(VALID | {"environment": environment}).environment == environment


@pytest.mark.parametrize(
    "image",
    [
        "a b", ":::", "ubuntu:", "caf\u00e9", "Ubuntu", "nvidia/CUDA:12", "nvidia//cuda", "/cuda", "cuda/",
        "cuda:-tag", "cuda:" + "t" * 129, "cuda@sha256:abc", "cuda@sha256", "registry:port/cuda",
        "ubuntu\n", "[::1]:5000/cuda", "a..b", "a___b",
    ],
)  # fmt: skip
def test_an_image_that_is_not_an_image_reference_is_refused(image):
    # Given / When / Then: refused before a GPU boots for it, not at pull time
    assert refused_field(image=image) == ("image",)


@pytest.mark.parametrize(
    "image",
    [
        "i", "python:3.12-slim", "nvidia/cuda:12.4.1-base-ubuntu22.04", "localhost:5000/team/train",
        "public.ecr.aws/registry_alias/my-web-app:latest", "a__b", "a--b-c", "My-Registry.example.com/x",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/train:v1@sha256:" + "a" * 64, "cuda@sha256:" + "F" * 32,
        "cuda:_Tag.1-x",
    ],
)  # fmt: skip
def test_image_references_by_registry_repository_tag_and_digest_are_accepted(image):
    # Given / When / Then
    assert JobRequest.model_validate(VALID | {"image": image}).image == image


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("image", "nvidia/cuda:12"), ("image", "a b"), ("image", "Ubuntu"), ("image", "ubuntu\n"),
        ("image", "cuda:" + "t" * 128), ("image", "caf\u00e9"), ("environment", {"A=B": "x"}),
        ("environment", {"OK": "x\x00"}), ("environment", {"OK_1": "x"}), ("environment", {"AWS_BATCH_X": "x"}),
        ("environment", {"A\n": "x"}), ("secrets", {"A\n": "arn:aws:ssm:us-east-1:123456789012:parameter/p"}),
        ("regions", ["us-" + "a" * 61 + "-1"]), ("regions", ["us-" + "a" * 58 + "-1"]), ("regions", ["us-west-2"] * 65),
        ("zones", ["z" * 65]), ("instance_types", ["g" * 64]), ("gpu_models", ["L4"] * 65),
    ],
)  # fmt: skip
def test_the_openapi_schema_accepts_exactly_what_the_api_accepts(field, value):
    # Given the JSON schema the OpenAPI document publishes for the field, read as JSON Schema reads a pattern
    # (ECMA 262: `$` is the end of the string, not the place before a final newline)
    schema = JobRequest.model_json_schema()["properties"][field]
    valid = jsonschema_rs.validator_for(schema).is_valid(value)
    # When the API validates the same value / Then both say the same
    try:
        JobRequest.model_validate(VALID | {field: value})
        accepted = True
    except ValidationError:
        accepted = False
    assert valid == accepted, (field, value)


@pytest.mark.parametrize("models", [[], [""]])
def test_gpu_models_must_be_a_non_empty_list_of_non_empty_names(models):
    # Given / When / Then
    assert refused_field(gpu_models=models)[0] == "gpu_models"


# -- preflight, secrets and job roles -----------------------------------------------------------------
def test_preflight_is_off_unless_asked_for():
    # Given / When / Then
    assert JobRequest.model_validate(VALID).preflight is False
    assert JobRequest.model_validate(VALID | {"preflight": True}).preflight is True


@pytest.mark.parametrize("value", ["yes", 1, "true"])
def test_preflight_must_be_a_boolean(value):
    # Given / When / Then: no truthy strings or numbers
    assert refused_field(preflight=value) == ("preflight",)


def test_secrets_by_arn_are_accepted():
    # Given a Secrets Manager secret (with a JSON key) and an SSM parameter
    secrets = {
        "HF_TOKEN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:gpupilot/hf-AbCdEf:token::",
        "WANDB_API_KEY": "arn:aws:ssm:us-east-1:123456789012:parameter/gpupilot/wandb",
    }
    # When / Then
    assert JobRequest.model_validate(VALID | {"secrets": secrets}).secrets == secrets


@pytest.mark.parametrize(
    "secrets",
    [
        {"TOKEN": "plain-secret-value"},
        {"TOKEN": "arn:aws:s3:::bucket/key"},
        {"1BAD": "arn:aws:ssm:us-east-1:123456789012:parameter/gpupilot/x"},
        {"AWS_BATCH_X": "arn:aws:ssm:us-east-1:123456789012:parameter/gpupilot/x"},
        {"TOKEN": "arn:aws:ssm:us-east-1:123456789012:parameter/gpupilot/x\n"},
    ],
)
def test_a_secret_must_be_a_secret_or_parameter_arn_under_a_usable_name(secrets):
    # Given / When / Then: a value (not a reference), another service, a bad name, a reserved name
    assert refused_field(secrets=secrets) == ("secrets",)


def test_a_name_in_both_secrets_and_environment_is_refused():
    # Given / When / Then
    arn = "arn:aws:ssm:us-east-1:123456789012:parameter/gpupilot/x"
    assert refused_field(environment={"TOKEN": "a"}, secrets={"TOKEN": arn}) == ("secrets",)


@pytest.mark.parametrize(
    "role",
    [
        "gpupilot-job-train",
        "arn:aws:iam::123456789012:user/alice",
        "arn:aws:iam::1:role/x",
        "arn:aws:iam::123456789012:role/gpupilot-job-x\n",
    ],
)
def test_job_role_must_be_an_iam_role_arn(role):
    # Given / When / Then
    assert refused_field(job_role_arn=role) == ("job_role_arn",)


@pytest.mark.parametrize(
    ("field", "value"),
    [("gpus", True), ("gpus", "2"), ("vcpus", 4.5), ("timeout_minutes", "60"), ("max_attempts", False),
     ("stuck_after_minutes", "5"), ("max_hourly_usd", True), ("memory_gib", "16")],
)  # fmt: skip
def test_numbers_must_be_json_numbers_not_booleans_or_strings(field, value):
    with pytest.raises(ValidationError) as refused:
        JobRequest.model_validate({"name": "n", "image": "i", "command": ["c"], field: value})
    assert refused.value.errors()[0]["loc"] == (field,)


def test_a_whole_number_is_a_valid_float():
    assert JobRequest.model_validate({"name": "n", "image": "i", "command": ["c"], "memory_gib": 16}).memory_gib == 16.0


def test_a_spot_attempt_falls_back_after_one_reclaim_and_the_memory_is_heeded_unless_the_request_says_otherwise():
    request = JobRequest.model_validate(VALID)
    assert (request.spot_reclaims_before_fallback, request.ignore_unavailable) == (1, False)


@pytest.mark.parametrize("reclaims", [0, 11, 1.5, "2", True])
def test_spot_reclaims_before_fallback_is_a_whole_number_batch_can_retry_for(reclaims):
    # Batch's RetryStrategy takes 1 to 10 attempts
    assert refused_field(spot_reclaims_before_fallback=reclaims) == ("spot_reclaims_before_fallback",)


def test_ignore_unavailable_is_a_boolean():
    assert refused_field(ignore_unavailable="yes") == ("ignore_unavailable",)


def test_a_request_may_name_the_regions_it_may_run_in():
    # Given / When
    request = JobRequest.model_validate(VALID | {"regions": ["us-east-1", "us-west-2"]})
    # Then the allow-list is kept, in order; without it, none (the deployment's default applies)
    assert request.regions == ["us-east-1", "us-west-2"]
    assert JobRequest.model_validate(VALID).regions is None


@pytest.mark.parametrize("regions", [[], ["us-east-1a"], ["US-EAST-1"], ["mars"], "us-east-1", [""]])
def test_regions_that_are_not_a_list_of_region_names_are_refused_naming_the_field(regions):
    # Given / When / Then
    assert refused_field(regions=regions)[0] == "regions"


# -- the host agent's fields ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("checkpoint", "field"),
    [
        ("yes", "checkpoint"),
        ({"every_minutes": 0}, "checkpoint"),
        ({"signal": "SIGKILL"}, "checkpoint"),
        ({"grace_seconds": 115}, "checkpoint"),
        ({"grace_seconds": 30, "path": "/data"}, "checkpoint"),
    ],
)
def test_a_checkpoint_that_is_not_true_or_a_policy_the_notice_leaves_time_for_is_refused(checkpoint, field):
    assert refused_field(checkpoint=checkpoint)[0] == field


@pytest.mark.parametrize("policy", [{"after_minutes": 0, "action": "warn"}, {"after_minutes": 30, "action": "kill"},
                                    {"action": "cancel"}])  # fmt: skip
def test_an_idle_policy_without_minutes_or_with_another_action_is_refused(policy):
    assert refused_field(idle_policy=policy)[0] == "idle_policy"


def test_checkpoint_true_a_checkpoint_policy_and_an_idle_policy_are_accepted():
    base = {"name": "train", "image": "pytorch/pytorch:2.3.0", "command": ["python", "train.py"]}
    assert JobRequest.model_validate(base | {"checkpoint": True}).checkpoint == CheckpointPolicy()
    assert JobRequest.model_validate(base | {"checkpoint": False}).checkpoint is None
    policy = JobRequest.model_validate(base | {"checkpoint": {"every_minutes": 30, "signal": "SIGUSR1"}}).checkpoint
    assert policy is not None
    assert (policy.every_minutes, policy.signal, policy.grace_seconds) == (30, "SIGUSR1", 90)
    idle = JobRequest.model_validate(base | {"idle_policy": {"after_minutes": 20, "action": "cancel"}}).idle_policy
    assert idle is not None and (idle.after_minutes, idle.action) == (20, "cancel")
