"""GPU job definitions: resources, NVIDIA environment, timeout, retries, roles, secrets and the GPU preflight."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from functions.shared.domain.fleet.batch import SMOKE_NAME, runs_preflight
from functions.shared.domain.jobs.definitions import (
    PREFLIGHT,
    PREFLIGHT_EXIT_CODE,
    job_definition_name,
    job_definition_spec,
    job_resources,
    retry_action,
)
from tests.unit.builders import candidate, job_request

FOUR_GPU_HOST = candidate("g5.12xlarge", gpus=4, vcpus=48, memory_gib=192.0)
DEFAULT_ROLE = "arn:aws:iam::123456789012:role/gpupilot-job-default"
EXECUTION_ROLE = "arn:aws:iam::123456789012:role/gpupilot-job-execution"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gpupilot/hf-token-AbCdEf"
PARAMETER = "arn:aws:ssm:us-east-1:123456789012:parameter/gpupilot/wandb"
NVML = (
    "CannotStartContainerError: Error response from daemon: failed to create task for container: failed to create "
    "shim task: OCI runtime create failed: runc create failed: unable to start container process: error during "
    "container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli"
)


def spec(**request_fields: Any) -> dict[str, Any]:
    return job_definition_spec(
        "0123456789abcdef0123",
        job_request(**request_fields),
        candidate(),
        job_role_arn=DEFAULT_ROLE,
        execution_role_arn=EXECUTION_ROLE,
        region="eu-west-1",
    )


def resource_requirements(definition: dict[str, Any]) -> dict[str, str]:
    return {r["type"]: r["value"] for r in definition["containerProperties"]["resourceRequirements"]}


def environment(definition: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in definition["containerProperties"]["environment"]}


# -- resources --------------------------------------------------------------------------------------
def test_resource_requirements_are_gpu_vcpu_and_memory_as_strings():
    # Given a request for 1 GPU, 2 vCPUs and 8 GiB
    # When building the job definition
    definition = spec(gpus=1, vcpus=2, memory_gib=8)

    # Then Batch gets its three resource types, each value a string
    assert resource_requirements(definition) == {"GPU": "1", "VCPU": "2", "MEMORY": "8192"}


def test_job_without_vcpus_or_memory_gets_its_gpu_share_of_the_host():
    # Given a 2-GPU request on a 4-GPU, 48-vCPU, 192 GiB host
    # When sizing the job
    resources = job_resources(job_request(gpus=2), FOUR_GPU_HOST)

    # Then it gets half the vCPUs and half the memory left after the host reserve
    assert resources == {"GPU": 2, "VCPU": 24, "MEMORY": int(192 * 0.5 * 0.9 * 1024)}


def test_job_with_explicit_vcpus_and_memory_gets_what_it_asked_for():
    # Given / When
    resources = job_resources(job_request(gpus=1, vcpus=6, memory_gib=32), FOUR_GPU_HOST)

    # Then
    assert resources == {"GPU": 1, "VCPU": 6, "MEMORY": 32768}


def test_job_memory_is_at_least_512_mib():
    # Given / When: a request for a tenth of a GiB
    resources = job_resources(job_request(memory_gib=0.1), candidate())

    # Then Batch gets its minimum
    assert resources["MEMORY"] == 512


# -- environment, timeout, retries --------------------------------------------------------------
def test_nvidia_driver_capabilities_are_compute_and_utility():
    # Given / When / Then: without 'utility', nvidia-smi is missing in the container
    assert environment(spec())["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"


def test_user_environment_is_merged_with_the_nvidia_environment():
    # Given a request with its own variables
    # When building the job definition
    definition = spec(environment={"EPOCHS": "3", "WANDB_MODE": "offline"})

    # Then the user's, the NVIDIA and the region variables are there, and those the host agent knows the job by,
    # sorted by name
    assert environment(definition) == {
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_REGION": "eu-west-1",
        "EPOCHS": "3",
        "GPUPILOT_ATTEMPT": "1",
        "GPUPILOT_HOME_REGION": "eu-west-1",
        "GPUPILOT_JOB_ID": "0123456789abcdef0123",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "WANDB_MODE": "offline",
    }
    names = [e["name"] for e in definition["containerProperties"]["environment"]]
    assert names == sorted(names)


def test_attempt_timeout_is_the_request_timeout_in_seconds():
    # Given / When / Then
    assert spec(timeout_minutes=90)["timeout"] == {"attemptDurationSeconds": 5400}


# The CUDA smoke test as `submit --smoke` sends it: its payload, then its name.
SMOKE = ["python3", "-c", "import base64,zlib;exec(...)", SMOKE_NAME]


def test_retry_strategy_retries_host_failures_and_the_preflight_exit_code_only():
    # Given / When: the retry strategy of a job that runs the preflight
    strategy = spec(preflight=True)["retryStrategy"]

    # Then spot reclaims / host failures and a broken GPU retry; anything else exits
    assert {"onStatusReason": "Host EC2*", "action": "RETRY"} in strategy["evaluateOnExit"]
    assert {"onExitCode": str(PREFLIGHT_EXIT_CODE), "action": "RETRY"} in strategy["evaluateOnExit"]
    assert strategy["evaluateOnExit"][-1] == {"onReason": "*", "action": "EXIT"}


@pytest.mark.parametrize("exit_code", [PREFLIGHT_EXIT_CODE, 10, 11, 14])
def test_a_jobs_own_program_exiting_with_a_gpu_checks_code_is_not_retried(exit_code):
    # Given a job that runs neither the preflight nor the smoke test / When its program exits with a GPU check's code
    action = retry_action(spec()["retryStrategy"], exit_code, None, "Essential container in task exited")

    # Then Batch does not run it again: the code is the program's own, not a check's verdict on the host
    assert action == "EXIT"


def test_retry_strategy_is_one_batch_accepts():
    # EvaluateOnExit (AWS Batch API Reference): "up to 5 conditions"; onStatusReason and onReason "can contain
    # letters, numbers, periods (.), colons (:), and white space ... It can optionally end with an asterisk";
    # onExitCode "can contain only numbers, and can end with an asterisk"; RetryStrategy attempts 1 to 10.
    strategy = spec()["retryStrategy"]
    conditions = strategy["evaluateOnExit"]
    assert len(conditions) <= 5 and 1 <= strategy["attempts"] <= 10
    for condition in conditions:
        for key in ("onStatusReason", "onReason"):
            assert re.fullmatch(r"[A-Za-z0-9.:\s]*\*?", condition.get(key, "")), condition
        assert re.fullmatch(r"[0-9]*\*?", condition.get("onExitCode", "")), condition


@pytest.mark.parametrize(
    ("exit_code", "reason", "status_reason"),
    [
        # A spot reclaim, or a host the sweep quarantined and terminated (calypr/funnel#973).
        (None, None, "Host EC2 (instance i-0e234208f6fc9291f) terminated."),
        # The NVIDIA runtime's hook failed on that host (NVIDIA/nvidia-container-toolkit#260), the thin pool is full.
        (None, NVML, "Task failed to start"),
        (None, "CannotCreateContainerError: API error (500): devmapper: Thin Pool has 4350 free data blocks", None),
        # The GPU preflight found no GPU; the CUDA smoke test hit a CUDA error.
        (PREFLIGHT_EXIT_CODE, None, "Essential container in task exited"),
        (14, None, "Essential container in task exited"),
    ],
)
def test_batch_retries_an_attempt_its_host_failed(exit_code, reason, status_reason):
    # Given the smoke test run behind the preflight (both GPU checks)
    strategy = spec(command=SMOKE, preflight=True)["retryStrategy"]

    assert retry_action(strategy, exit_code, reason, status_reason) == "RETRY"
    assert len(strategy["evaluateOnExit"]) <= 5


@pytest.mark.parametrize(
    ("exit_code", "reason"),
    [(1, None), (137, "OutOfMemoryError: Container killed due to memory usage"), (2, None), (0, None)],
)
def test_batch_does_not_retry_a_jobs_own_failure(exit_code, reason):
    assert retry_action(spec()["retryStrategy"], exit_code, reason, "Essential container in task exited") == "EXIT"


def test_batchs_patterns_match_a_prefix_with_a_star_whatever_the_case_and_no_match_retries():
    # "The values aren't case sensitive"; "If none of the EvaluateOnExit conditions in a RetryStrategy match, then the
    # job is retried" (EvaluateOnExit, RetryStrategy)
    strategy = {"attempts": 2, "evaluateOnExit": [{"onExitCode": "3*", "onReason": "boom", "action": "exit"}]}
    assert retry_action(strategy, 31, "BOOM", None) == "EXIT"
    assert retry_action(strategy, 31, "boom!", None) == "RETRY"
    assert retry_action(strategy, 4, "boom", None) == "RETRY"
    assert strategy["attempts"] > 1


def spot_spec(**request_fields: Any) -> dict[str, Any]:
    return job_definition_spec(
        "0123456789abcdef0123",
        job_request(capacity="spot-first", **request_fields),
        candidate(capacity="spot"),
        job_role_arn=DEFAULT_ROLE,
        execution_role_arn=EXECUTION_ROLE,
        region="eu-west-1",
    )


def test_a_spot_attempt_ends_at_its_first_reclaim_by_default_and_still_retries_a_broken_gpu():
    # Given / When: a spot attempt of a spot-first job that runs the preflight, spot_reclaims_before_fallback left at 1
    strategy = spot_spec(preflight=True)["retryStrategy"]

    # Then a host reclaim ends the attempt (the job moves on to its next candidate), a failed preflight retries
    rules = strategy["evaluateOnExit"]
    assert rules[0] == {"onStatusReason": "Host EC2*", "action": "EXIT"}
    assert {"onExitCode": str(PREFLIGHT_EXIT_CODE), "action": "RETRY"} in rules
    assert strategy["attempts"] > 1


@pytest.mark.parametrize("reclaims", [1, 3])
@pytest.mark.parametrize(
    ("exit_code", "reason", "status_reason"),
    [(None, NVML, "Task failed to start"), (14, None, "Essential container in task exited")],
)
def test_a_spot_attempt_retries_a_bad_hosts_failure_on_another_host_too(reclaims, exit_code, reason, status_reason):
    # Given a spot attempt of the smoke test, whatever its reclaims before fallback
    strategy = spot_spec(spot_reclaims_before_fallback=reclaims, command=SMOKE)["retryStrategy"]

    # When its host's container runtime or GPU fails it / Then Batch retries it, within Batch's five conditions
    assert retry_action(strategy, exit_code, reason, status_reason) == "RETRY"
    assert retry_action(strategy, 1, None, "Essential container in task exited") == "EXIT"
    assert len(strategy["evaluateOnExit"]) <= 5


def test_a_spot_attempt_allowed_more_reclaims_gets_that_many_batch_attempts():
    # Given / When: a job that allows 3 reclaims before it falls back
    strategy = spot_spec(spot_reclaims_before_fallback=3)["retryStrategy"]

    # Then Batch retries a reclaim, and the attempt ends at the third
    assert strategy["evaluateOnExit"][0] == {"onStatusReason": "Host EC2*", "action": "RETRY"}
    assert strategy["attempts"] == 3


def test_job_definition_is_named_after_the_request_and_tagged_with_the_job():
    # Given / When
    definition = spec(name="resnet-train")

    # Then
    assert definition["jobDefinitionName"] == "gpupilot-resnet-train"
    assert definition["tags"] == {"gpupilot:job": "0123456789abcdef0123"}
    assert definition["containerProperties"]["image"] == "nvidia/cuda:12.4.1-base"


# -- the GPU preflight (opt-in) ----------------------------------------------------------------------
def test_by_default_the_command_is_the_users_exactly_so_the_images_entrypoint_gets_it():
    # Given a request that does not ask for the preflight
    # When building the job definition
    command = spec(command=["--epochs", "3"])["containerProperties"]["command"]

    # Then the command is passed as given: no shell, so an ENTRYPOINT receives it as its arguments
    assert command == ["--epochs", "3"]


def test_preflight_wraps_the_user_command_as_positional_arguments():
    # Given a user command with arguments and preflight asked for
    # When building the job definition
    command = spec(command=["python", "train.py", "--epochs", "3"], preflight=True)["containerProperties"]["command"]

    # Then sh runs the preflight and the user command follows as "$@" ($0 is a label)
    assert command == ["sh", "-c", PREFLIGHT, "gpupilot-preflight", "python", "train.py", "--epochs", "3"]
    assert PREFLIGHT.startswith("nvidia-smi -L")
    assert PREFLIGHT.endswith('exec "$@"')


def test_the_sweep_reads_back_from_batch_whether_a_job_runs_the_preflight():
    # Given the container of a job with the preflight, and of one without
    with_it, without = spec(preflight=True)["containerProperties"], spec()["containerProperties"]

    # When Batch shows them back (DescribeJobs' container) / Then the sweep knows whose exit 75 speaks for the host
    assert (runs_preflight(with_it), runs_preflight(without)) == (True, False)


# -- roles and secrets -------------------------------------------------------------------------------
def test_a_job_runs_as_the_default_job_role_unless_the_request_names_one():
    # Given / When
    default = spec()["containerProperties"]
    named = spec(job_role_arn="arn:aws:iam::123456789012:role/gpupilot-job-train")["containerProperties"]

    # Then the container gets its own role either way (never the instance role through IMDS)
    assert default["jobRoleArn"] == DEFAULT_ROLE
    assert named["jobRoleArn"] == "arn:aws:iam::123456789012:role/gpupilot-job-train"


def test_secrets_are_passed_as_references_with_the_execution_role_that_reads_them():
    # Given a request with a Secrets Manager secret and an SSM parameter
    # When building the job definition
    container = spec(secrets={"HF_TOKEN": SECRET, "WANDB_API_KEY": PARAMETER})["containerProperties"]

    # Then Batch gets their ARNs (never values), the execution role reads them, and no secret is in the environment
    assert container["secrets"] == [
        {"name": "HF_TOKEN", "valueFrom": SECRET},
        {"name": "WANDB_API_KEY", "valueFrom": PARAMETER},
    ]
    assert container["executionRoleArn"] == EXECUTION_ROLE
    assert {"HF_TOKEN", "WANDB_API_KEY"}.isdisjoint(environment({"containerProperties": container}))


def test_the_container_learns_its_region_from_the_environment_not_the_instance_metadata():
    # Given / When / Then: IMDS is one hop too far for a container, so SDKs in it read AWS_REGION
    assert {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1"}.items() <= environment(spec()).items()


def test_a_job_without_secrets_needs_no_execution_role():
    # Given / When / Then
    container = spec()["containerProperties"]
    assert "secrets" not in container
    assert "executionRoleArn" not in container


def _run_preflight(tmp_path: Path, nvidia_smi_exit: int, user_command: list[str]) -> subprocess.CompletedProcess:
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\nexit {nvidia_smi_exit}\n")
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    command = ["sh", "-c", PREFLIGHT, "gpupilot-preflight", *user_command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=10, check=False)


def test_preflight_runs_the_user_command_with_its_arguments_when_the_gpu_answers(tmp_path):
    # Given a host whose nvidia-smi works
    # When the container runs the wrapped command
    result = _run_preflight(tmp_path, 0, ["printf", "%s|", "a b", "c"])

    # Then the user command runs with its arguments intact
    assert (result.returncode, result.stdout) == (0, "a b|c|")


def test_preflight_exits_with_its_retry_code_when_the_gpu_does_not_answer(tmp_path):
    # Given a host whose nvidia-smi fails
    # When the container runs the wrapped command
    result = _run_preflight(tmp_path, 9, ["echo", "should not run"])

    # Then it exits with the preflight code (which Batch retries) and never runs the user command
    assert result.returncode == PREFLIGHT_EXIT_CODE
    assert result.stdout == ""
    assert "no working NVIDIA GPU" in result.stderr


def test_a_long_job_name_gets_a_batch_legal_job_definition_name_that_stays_unique():
    long_a, long_b = "a" * 127 + "x", "a" * 127 + "y"
    assert job_definition_name("train") == "gpupilot-train"
    assert len(job_definition_name(long_a)) == 128
    assert job_definition_name(long_a) != job_definition_name(long_b)


def test_a_job_s_output_goes_to_batch_s_log_group_under_gpu_pilot_s_stream_prefix():
    # When a job definition is built / Then the awslogs driver writes to Batch's group, streams named gpupilot/...
    configuration = spec()["containerProperties"]["logConfiguration"]
    assert configuration == {"logDriver": "awslogs", "options": {"awslogs-stream-prefix": "gpupilot"}}


# -- the host agent ---------------------------------------------------------------------------------------------------
def test_a_checkpointing_job_gets_its_directory_from_the_host_and_tells_the_agent_how_to_keep_it():
    # Given a job that checkpoints every 30 minutes on SIGUSR1, on its third attempt
    definition = job_definition_spec(
        "0123456789abcdef0123", job_request(checkpoint={"every_minutes": 30, "signal": "SIGUSR1"}), candidate(),
        job_role_arn=DEFAULT_ROLE, execution_role_arn=EXECUTION_ROLE, region="us-west-2", attempt=3,
        hosts_bucket="gpupilot-hosts-123456789012-us-east-1", home_region="us-east-1",
    )  # fmt: skip
    container = definition["containerProperties"]

    # Then its directory is a host directory of its own, mounted where the variables say
    assert container["volumes"] == [
        {"name": "gpupilot-checkpoint", "host": {"sourcePath": "/var/lib/gpupilot/checkpoints/0123456789abcdef0123"}}
    ]
    assert container["mountPoints"] == [
        {"sourceVolume": "gpupilot-checkpoint", "containerPath": "/gpupilot/checkpoint", "readOnly": False}
    ]
    assert environment(definition).items() >= {
        "GPUPILOT_JOB_ID": "0123456789abcdef0123", "GPUPILOT_ATTEMPT": "3", "GPUPILOT_HOME_REGION": "us-east-1",
        "GPUPILOT_CHECKPOINT_DIR": "/gpupilot/checkpoint",
        "GPUPILOT_CHECKPOINT_BUCKET": "gpupilot-hosts-123456789012-us-east-1",
        "GPUPILOT_CHECKPOINT_SIGNAL": "SIGUSR1", "GPUPILOT_CHECKPOINT_GRACE_SECONDS": "90",
        "GPUPILOT_CHECKPOINT_EVERY_SECONDS": "1800",
    }.items()  # fmt: skip
    # And its command is held by the wrapper, in sh, and then run as given
    assert container["command"][:2] == ["sh", "-c"] and container["command"][-2:] == ["nvidia-smi", "-L"]


def test_a_job_without_checkpoint_gets_no_directory_and_runs_its_command_as_given():
    definition = spec()
    assert "volumes" not in definition["containerProperties"] and "mountPoints" not in definition["containerProperties"]
    assert definition["containerProperties"]["command"] == ["nvidia-smi", "-L"]
    assert "GPUPILOT_CHECKPOINT_DIR" not in environment(definition)


def _run_wrapped(directory: Path, markers: list[str], late: str | None = None) -> subprocess.CompletedProcess[str]:
    definition = spec(
        checkpoint=True, command=["sh", "-c", 'echo "resumed=${GPUPILOT_RESUMED:-0} args=$1"', "x", "a b"]
    )
    (directory / ".gpupilot").mkdir()
    for marker in markers:
        (directory / ".gpupilot" / marker).write_text("")
    process = subprocess.Popen(
        definition["containerProperties"]["command"], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={"PATH": os.environ["PATH"], "GPUPILOT_CHECKPOINT_DIR": str(directory)},
    )  # fmt: skip
    if late is not None:
        # the agent finishes the restore while the program waits: the wrapper must still be waiting
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=2)
        (directory / ".gpupilot" / late).write_text("")
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_the_wrapper_starts_a_restored_program_with_gpupilot_resumed_and_its_arguments_intact(tmp_path: Path):
    ran = _run_wrapped(tmp_path, ["ready", "resumed"])
    assert (ran.returncode, ran.stdout) == (0, "resumed=1 args=a b\n")


def test_the_wrapper_holds_the_program_until_the_agent_has_made_the_directory_ready(tmp_path: Path):
    ran = _run_wrapped(tmp_path, ["restoring"], late="ready")
    assert (ran.returncode, ran.stdout) == (0, "resumed=0 args=a b\n")


def test_the_agent_reads_from_a_checkpointing_jobs_variables_what_the_request_asked_and_its_wrapper_its_markers():
    from host_agent import checkpoints
    from host_agent.config import JobConfig

    # Given the variables of a checkpointing job's container, and the GPUs ECS gave it
    definition = job_definition_spec(
        "0123456789abcdef0123",
        job_request(
            checkpoint={"every_minutes": 10, "grace_seconds": 45}, idle_policy={"after_minutes": 20, "action": "warn"}
        ),
        candidate(), job_role_arn=DEFAULT_ROLE, execution_role_arn=EXECUTION_ROLE, region="eu-west-1",
        hosts_bucket="gpupilot-hosts-123456789012-eu-west-1",
    )  # fmt: skip
    variables = environment(definition) | {"NVIDIA_VISIBLE_DEVICES": "GPU-1"}
    # When the agent reads them
    config = JobConfig.from_env(variables, default_region="us-west-2")
    # Then it knows the job, its attempt and how to keep its directory
    assert config is not None and config.checkpoint is not None
    assert (config.job_id, config.attempt, config.home_region) == ("0123456789abcdef0123", 1, "eu-west-1")
    assert (config.checkpoint.directory, config.checkpoint.signal) == ("/gpupilot/checkpoint", "SIGTERM")
    assert (config.checkpoint.grace_seconds, config.checkpoint.every_seconds) == (45.0, 600.0)
    assert config.idle_after_seconds == 1200.0
    # And the wrapper waits on the markers the agent writes
    wrapper = definition["containerProperties"]["command"][2]
    assert f'/{checkpoints.MARKERS}"' in wrapper
    assert f'"$d/{checkpoints.READY}"' in wrapper and f'"$d/{checkpoints.RESUMED}"' in wrapper
