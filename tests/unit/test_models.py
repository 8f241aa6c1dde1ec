"""JobRequest validation: what `POST /jobs` and `POST /plan` accept, and which field a refusal names."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from functions.shared.models import JobRequest

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
    assert refused_field(capacity="reserved") == ("capacity",)


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


@pytest.mark.parametrize("models", [[], [""]])
def test_gpu_models_must_be_a_non_empty_list_of_non_empty_names(models):
    # Given / When / Then
    assert refused_field(gpu_models=models) == ("gpu_models",)
