"""Host or job? Every reason string and exit code GPU Pilot holds against a host (or refuses to), each from where it
was read, and the evidence kept from a Batch job's attempts."""

from __future__ import annotations

import pytest

from functions.shared.domain.fleet.batch import BatchAttempt, BatchJobState
from functions.shared.domain.hosts.evidence import (
    Blame,
    Symptom,
    attribute,
    enough_to_quarantine,
    host_faults,
    jobs_hit,
)

HOST = "arn:aws:ecs:us-east-1:123456789012:container-instance/gpupilot-od_Batch_1/4f1c"
# NVIDIA/nvidia-container-toolkit#260: docker's error when the driver is not loaded.
NVML_NOT_LOADED = (
    "CannotStartContainerError: Error response from daemon: OCI runtime create failed: container_linux.go:349: "
    'starting container process caused "process_linux.go:449: container init caused \\"process_linux.go:432: '
    'running prestart hook 0 caused \\\\\\"error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: '
    'initialization error: nvml error: driver not loaded\\\\n\\\\\\"\\"": unknown'
)


def attempt(reason: str | None = None, exit_code: int | None = None, status_reason: str | None = None) -> BatchAttempt:
    return BatchAttempt(container_instance_arn=HOST, reason=reason, exit_code=exit_code, status_reason=status_reason)


@pytest.mark.parametrize(
    ("reason", "symptom"),
    [
        # NVIDIA/nvidia-container-toolkit#260: "nvml error: driver not loaded"
        (NVML_NOT_LOADED, Symptom.NVIDIA_RUNTIME),
        # NVIDIA/nvidia-container-toolkit#394: "nvml error: driver/library version mismatch"
        (
            "CannotStartContainerError: Error response from daemon: failed to create shim task: OCI runtime create "
            "failed: runc create failed: unable to start container process: error during container init: error "
            "running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: "
            "initialization error: nvml error: driver/library version mismatch: unknown",
            Symptom.NVIDIA_RUNTIME,
        ),
        # bottlerocket-os/bottlerocket#3960 (p5 on ECS): "driver rpc error: timed out"
        (
            "CannotStartContainerError: Error response from daemon: failed to create task for container: "
            "nvidia-container-cli: initialization error: driver rpc error: timed out: unknown",
            Symptom.NVIDIA_RUNTIME,
        ),
        # AttemptContainerDetail.reason keeps 255 characters: the hook is named before "nvidia-container-cli" is.
        (
            (
                "CannotStartContainerError: Error response from daemon: failed to create task for container: failed "
                "to create shim task: OCI runtime create failed: runc create failed: unable to start container "
                "process: error during container init: error running hook #0: error running hook: exit status 1, "
                "stdout: , stderr: nvidia-container-cli: initialization error"
            )[:255],
            Symptom.NVIDIA_RUNTIME,
        ),
        # ECS "Stopped tasks error codes": the container runtime on the instance misbehaves.
        (
            "ContainerRuntimeTimeoutError: Could not transition to running; timed out after waiting 1m: context "
            "deadline exceeded",
            Symptom.CONTAINER_RUNTIME,
        ),
        (
            "DockerTimeoutError: Could not transition to started; timed out after waiting 3m0s",
            Symptom.CONTAINER_RUNTIME,
        ),
        ("CannotInspectContainerError: Could not transition to inspecting", Symptom.CONTAINER_RUNTIME),
        ("CannotStopContainerError: failed sending SIGTERM to container: ...", Symptom.CONTAINER_RUNTIME),
        # ECS Developer Guide, CannotCreateContainerError: the instance's thin pool is full.
        (
            "CannotCreateContainerError: API error (500): devmapper: Thin Pool has 4350 free data blocks which is less "
            "than minimum required 4454 free data blocks. Create more free space in thin pool",
            Symptom.HOST_DISK_FULL,
        ),
    ],
)
def test_the_container_runtimes_host_side_reasons_are_held_against_the_host(reason, symptom):
    # Given / When / Then
    blamed = attribute(attempt(reason, status_reason="Task failed to start"))
    assert (blamed.blame, blamed.symptom, blamed.why) == (Blame.HOST, symptom, reason)


@pytest.mark.parametrize(
    ("exit_code", "meaning"),
    [
        # payloads/cuda_smoke.py (README "CUDA smoke test"): 10 to 14 are the host's GPU failing the check.
        (10, "no NVIDIA driver"),
        (11, "sees no GPU"),
        (12, "result is wrong"),
        (13, "out of memory"),
        (14, "CUDA error"),
        # batch.PREFLIGHT_EXIT_CODE: nvidia-smi did not answer.
        (75, "preflight"),
    ],
)
def test_the_gpu_checks_reserved_exit_codes_are_held_against_the_host(exit_code, meaning):
    # Given an attempt whose container exited with a GPU check's code ("Essential container in task exited"), of a
    # job that runs the smoke test behind the preflight (each speaks only for its own codes)
    ended = attempt(exit_code=exit_code, status_reason="Essential container in task exited")
    blamed = attribute(ended, preflight=True, smoke=True)

    # Then the host is blamed, and why says what the code means
    assert (blamed.blame, blamed.symptom) == (Blame.HOST, Symptom.GPU_CHECK_EXIT)
    assert f"exit code {exit_code}" in blamed.why and meaning in blamed.why


def test_exit_75_of_a_job_that_does_not_run_the_preflight_is_its_own():
    # Given a program that exits 75 (sysexits' EX_TEMPFAIL) of its own accord, the preflight not asked for
    blamed = attribute(attempt(exit_code=75, status_reason="Essential container in task exited"), False)
    # Then the job is blamed, never its host
    assert (blamed.blame, blamed.symptom) == (Blame.JOB, None)


@pytest.mark.parametrize("exit_code", [10, 11, 12, 13, 14])
def test_a_smoke_test_code_from_a_job_that_does_not_run_the_smoke_test_is_its_own(exit_code):
    # Given a user's program that exits 10 to 14 of its own accord (the preflight asked for, the smoke test not)
    blamed = attribute(attempt(exit_code=exit_code, status_reason="Essential container in task exited"), True, False)
    # Then the job is blamed, never its host
    assert (blamed.blame, blamed.symptom) == (Blame.JOB, None)


def test_whether_a_job_runs_the_smoke_test_is_read_from_its_container_command():
    # Given DescribeJobs' container details: the smoke test as `submit --smoke` sends it, alone and behind the
    # preflight, and a python3 -c command that is not it
    smoke = ["python3", "-c", "exec(...)", "gpupilot-cuda-smoke"]
    wrapped = ["sh", "-c", "nvidia-smi -L || exit 75", "gpupilot-preflight", *smoke]
    other = ["python3", "-c", "import sys; sys.exit(11)"]

    # When / Then
    def smoke_of(command):
        return BatchJobState.from_batch({"jobId": "b", "status": "FAILED", "container": {"command": command}}).smoke

    assert (smoke_of(smoke), smoke_of(wrapped), smoke_of(other)) == (True, True, False)


def test_whether_a_job_runs_the_preflight_is_read_from_its_container_command():
    # Given DescribeJobs' container details: the preflight's wrapper, and a shell command that is not it
    wrapped = {"command": ["sh", "-c", "nvidia-smi -L || exit 75", "gpupilot-preflight", "python3", "train.py"]}
    plain = {"command": ["sh", "-c", "python3 train.py; exit 75"]}

    # When / Then
    def preflight(container):
        return BatchJobState.from_batch({"jobId": "b", "status": "FAILED", "container": container}).preflight

    assert (preflight(wrapped), preflight(plain), preflight({})) == (True, False, False)


@pytest.mark.parametrize(
    ("reason", "exit_code"),
    [
        # The user's process failed: exit code 1 (nextflow-io/nextflow#2005: "Essential container in task exited").
        (None, 1),
        (None, 2),
        (None, 127),
        # aws/amazon-ecs-agent#1187: the job's memory, with exit 137 (and even without it).
        ("OutOfMemoryError: Container killed due to memory usage", 137),
        ("OutOfMemoryError: Container killed due to memory usage", None),
        (None, 137),
        # ECS "Stopped tasks error codes": the image the job names cannot be pulled.
        ("CannotPullContainerError: pull image manifest has been retried 5 time(s): not found", None),
        # nextflow-io/nextflow#5657: the job's command does not exist in its image.
        (
            "CannotStartContainerError: Error response from daemon: failed to create task for container: failed to "
            "create shim task: OCI runtime create failed: runc create failed: unable to start container process: "
            'exec: "/usr/local/bin/_entrypoint.sh": stat /usr/local/bin/_entrypoint.sh: no such file or directory',
            None,
        ),
    ],
)
def test_a_jobs_own_failure_is_never_held_against_its_host(reason, exit_code):
    # Given / When
    blamed = attribute(attempt(reason, exit_code, "Essential container in task exited"))

    # Then
    assert (blamed.blame, blamed.symptom) == (Blame.JOB, None)


def test_a_host_that_went_away_is_not_a_bad_gpu():
    # Given an attempt whose host was terminated (a spot reclaim, or the sweep's own quarantine): calypr/funnel#973
    blamed = attribute(attempt(status_reason="Host EC2 (instance i-0e234208f6fc9291f) terminated."))

    # Then it is not held against the host (the host is gone, and nothing says its GPU was bad)
    assert blamed.blame == Blame.HOST_GONE


def test_a_succeeded_attempt_blames_no_one():
    assert attribute(attempt(exit_code=0, status_reason="Essential container in task exited")).blame == Blame.NONE


def batch_job(job_name: str, *attempts: BatchAttempt) -> BatchJobState:
    """A Batch job running the CUDA smoke test: its exit codes speak for its host."""
    return BatchJobState(
        job_id="b-1",
        job_name=job_name,
        job_queue="arn:aws:batch:us-east-1:123456789012:job-queue/gpupilot-od-x8664-g4dn-xlarge",
        status="RUNNABLE",
        attempts=list(attempts),
        smoke=True,
    )


def test_the_host_faults_of_a_batch_job_are_its_ended_attempts_the_host_failed():
    # Given a GPU Pilot job retried by Batch: a failed container start, a job failure, then a running attempt
    job = batch_job(
        "gpupilot-0123456789abcdef0123-a2",
        BatchAttempt(container_instance_arn=HOST, reason=NVML_NOT_LOADED, stopped_at="2026-11-22T09:00:01.000Z"),
        BatchAttempt(container_instance_arn=HOST + "x", exit_code=1, stopped_at="2026-11-22T09:00:09.000Z"),
        BatchAttempt(container_instance_arn=HOST + "y"),
    )

    # When
    [fault] = host_faults(job, "2026-11-22T09:01:00.000Z")

    # Then one fault, naming the host, the attempt, the pool and GPU Pilot's job
    assert (fault.container_instance_arn, fault.attempt, fault.job_id) == (HOST, 1, "0123456789abcdef0123")
    assert (fault.pool, fault.symptom, fault.at) == ("gpupilot-od-x8664-g4dn-xlarge", Symptom.NVIDIA_RUNTIME,
                                                     "2026-11-22T09:00:01.000Z")  # fmt: skip


def test_a_foreign_jobs_host_faults_name_its_batch_job():
    # Given someone else's job in a GPU Pilot queue, failed by its host
    job = batch_job("nightly", BatchAttempt(container_instance_arn=HOST, exit_code=14, stopped_at="2026-11-22T09:00Z"))

    # When / Then
    [fault] = host_faults(job, "2026-11-22T09:01:00.000Z")
    assert (fault.job_id, fault.batch_job_id) == (None, "b-1")


def test_one_job_failing_twice_on_a_host_is_not_enough_two_jobs_are():
    # Given two host faults of one Batch job (its retry landed on the same host)
    job = batch_job(
        "nightly",
        BatchAttempt(container_instance_arn=HOST, exit_code=14, stopped_at="2026-11-22T09:00:01Z"),
        BatchAttempt(container_instance_arn=HOST, exit_code=14, stopped_at="2026-11-22T09:00:05Z"),
    )
    twice = host_faults(job, "2026-11-22T09:01:00.000Z")
    assert not enough_to_quarantine(twice)

    # When another job is failed by the host / Then it is
    other = host_faults(job.model_copy(update={"job_id": "b-2"}), "2026-11-22T09:01:00.000Z")[:1]
    assert enough_to_quarantine(twice + other)
    assert jobs_hit(twice + other) == ["b-1", "b-2"]
