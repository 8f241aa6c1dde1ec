"""When a host is quarantined, when a pool has too many bad hosts for the hosts to be the cause, and what a host's
console says."""

from __future__ import annotations

import pytest

from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus
from functions.shared.domain.fleet.consoles import boot_verdict, console_evidence, console_summary, printed
from functions.shared.domain.hosts.evidence import HostFault, Symptom
from functions.shared.domain.hosts.quarantine import (
    HostCase,
    QuarantineReason,
    QuarantineRecord,
    allowed_at_once,
    describe_quarantine,
    last_success_on,
    quarantine_reason,
    success_lookback,
    too_many_unhealthy,
    waste_since,
)
from functions.shared.domain.jobs.records import JobRecord, TimelineEntry

BOOT = (
    "[    0.000000] Linux version 6.1.112-122.189.amzn2023.x86_64\n"
    "[    4.100000] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  560.35.03\n"
)
PASSED = BOOT + "gpupilot-boot-check: PASS 1 GPUs visible (g5.xlarge): NVIDIA A10G\n"
FAILED = (
    BOOT + "[   70.3] cloud-init[2051]: gpupilot-boot-check: FAIL nvidia-smi did not answer within 60 s (g5.xlarge)\n"
)
XID = "[  812.4] NVRM: Xid (PCI:0000:00:1e): 79, pid=0, GPU has fallen off the bus."


def fault(batch_job_id: str, at: str = "2026-11-22T09:00:00.000Z") -> HostFault:
    return HostFault(container_instance_arn="arn:ci", batch_job_id=batch_job_id, attempt=1,
                     symptom=Symptom.GPU_CHECK_EXIT, why="exit code 14: a CUDA error", at=at)  # fmt: skip


def test_the_boot_checks_verdict_is_read_from_the_console_wherever_the_line_is_prefixed():
    # Given / When / Then: cloud-init prefixes what it prints; the verdict is what follows the marker
    assert boot_verdict(PASSED) is not None and boot_verdict(PASSED).passed  # type: ignore[union-attr]
    failed = boot_verdict(FAILED)
    assert failed is not None and not failed.passed
    assert failed.line == "gpupilot-boot-check: FAIL nvidia-smi did not answer within 60 s (g5.xlarge)"
    assert boot_verdict(BOOT) is None and boot_verdict(None) is None


def test_a_consoles_evidence_is_its_verdict_its_kernels_gpu_errors_and_its_last_lines():
    # Given a host that passed its check, then lost a GPU
    evidence = console_evidence(PASSED + XID + "\n")

    # Then
    assert evidence["boot_check"] == "gpupilot-boot-check: PASS 1 GPUs visible (g5.xlarge): NVIDIA A10G"
    assert evidence["kernel_gpu_errors"] == [XID]
    assert evidence["console_tail"][-1] == XID  # type: ignore[index]
    assert console_evidence("") == {}


def test_a_diagnosis_quotes_the_verdict_else_the_kernels_gpu_error_else_the_last_line():
    assert (
        console_summary(FAILED + XID) == "gpupilot-boot-check: FAIL nvidia-smi did not answer within 60 s (g5.xlarge)"
    )
    assert console_summary(BOOT + XID) == XID
    assert console_summary(BOOT) == "[    4.100000] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  560.35.03"
    evidence, quoted = printed({"i-1": FAILED}, ["i-1", "i-2"])
    assert list(evidence) == ["i-1"] and [instance for instance, _ in quoted] == ["i-1"]


@pytest.mark.parametrize(
    ("faults", "gpus", "impaired", "console", "reason"),
    [
        ([], 1, [], FAILED, QuarantineReason.BOOT_CHECK_FAILED),
        ([], 1, ["CONTAINER_RUNTIME: Docker is unresponsive"], None, QuarantineReason.ECS_IMPAIRED),
        ([], 0, [], PASSED, QuarantineReason.REGISTERED_WITHOUT_GPUS),
        ([fault("b-1"), fault("b-2")], 1, [], PASSED, QuarantineReason.HOST_FAILURES),
        ([fault("b-1")], 1, [], PASSED, None),
        ([], 1, [], PASSED, None),
    ],
)
def test_a_host_is_quarantined_for_one_strong_verdict_or_the_failures_of_two_jobs(faults, gpus, impaired, console,
                                                                                   reason):  # fmt: skip
    assert quarantine_reason(faults, gpus, impaired, boot_verdict(console)) == reason


@pytest.mark.parametrize(
    ("unhealthy", "alive", "too_many"),
    [(1, 1, False), (1, 4, False), (2, 4, True), (3, 4, True), (2, 10, False), (3, 10, True), (2, 2, True)],
)
def test_one_host_may_always_be_quarantined_more_only_within_a_fifth_of_the_pool(unhealthy, alive, too_many):
    # Karpenter stops repairing a NodePool past 20% unhealthy; a pool of one bad host is still a bad host
    assert too_many_unhealthy(unhealthy, alive, 0.2) is too_many
    assert allowed_at_once(4, 0.2) == 1 and allowed_at_once(10, 0.2) == 2


def test_a_quarantined_hosts_waste_runs_from_its_first_failure_or_its_launch():
    # Given / When / Then
    faults = [fault("b-2", "2026-11-22T09:30:00.000Z"), fault("b-1", "2026-11-22T09:00:00.000Z")]
    hit = HostCase(instance_id="i-1", launched_at="2026-11-22T08:00:00.000Z", faults=faults)
    assert waste_since(hit) == "2026-11-22T09:00:00.000Z"
    assert (
        waste_since(HostCase(instance_id="i-2", launched_at="2026-11-22T08:00:00.000Z")) == "2026-11-22T08:00:00.000Z"
    )


def test_a_hosts_last_success_is_the_latest_end_of_an_attempt_that_succeeded_on_it():
    # Given attempts of two jobs: on the host (succeeded twice, failed once) and on another host
    def job(job_id: str, *attempts: tuple[str, BatchStatus, str]) -> JobRecord:
        return JobRecord.model_validate({
            "job_id": job_id, "name": "n", "status": "SUCCEEDED", "status_rank": 0, "created_at": "2026-11-22T07:00Z",
            "updated_at": "2026-11-22T07:00Z", "request": {"name": "n", "image": "i", "command": ["c"]},
            "attempts": {str(n): {"instance_type": "g4dn.xlarge", "capacity": "on-demand", "job_queue": "q",
                                  "container_instance_arn": host, "batch_status": status, "stopped_at": at}
                         for n, (host, status, at) in enumerate(attempts, start=1)},
        })  # fmt: skip

    records = [
        job("j1", ("ci/bad", BatchStatus.SUCCEEDED, "2026-11-22T08:10:00.000Z")),
        job("j2", ("ci/bad", BatchStatus.FAILED, "2026-11-22T08:40:00.000Z"),
            ("ci/bad", BatchStatus.SUCCEEDED, "2026-11-22T08:20:00.000Z")),
        job("j3", ("ci/good", BatchStatus.SUCCEEDED, "2026-11-22T08:50:00.000Z")),
    ]  # fmt: skip

    # When / Then
    assert last_success_on(records, "ci/bad") == "2026-11-22T08:20:00.000Z"
    assert last_success_on(records, "ci/none") is None


def test_with_no_success_on_record_a_host_is_waste_from_its_launch_only_when_its_whole_life_was_read():
    faults = [fault("b-1", "2026-11-22T09:00:00.000Z")]
    young = HostCase(instance_id="i-1", launched_at="2026-11-22T08:30:00.000Z", faults=faults)
    old = HostCase(instance_id="i-2", launched_at="2026-11-20T08:00:00.000Z", faults=faults)
    # The jobs read from an hour before its first failure: all of the young host's life, part of the old one's
    assert success_lookback(young, 3600) == "2026-11-22T08:30:00.000Z"
    assert success_lookback(old, 3600) == "2026-11-22T08:00:00.000Z"
    assert waste_since(young, None, success_lookback(young, 3600)) == "2026-11-22T08:30:00.000Z"
    assert waste_since(old, None, success_lookback(old, 3600)) == "2026-11-22T09:00:00.000Z"
    assert waste_since(old, "2026-11-22T08:45:00.000Z", success_lookback(old, 3600)) == "2026-11-22T08:45:00.000Z"


def test_the_note_a_hit_jobs_timeline_gets_names_the_host_and_the_evidence_and_reads_as_a_note():
    # Given a host quarantined for the failures it caused
    evidence = {"last_failure": "exit code 14: a CUDA error", "kernel_gpu_errors": [XID]}
    record = QuarantineRecord(instance="i-0bad", pool="p", reason=QuarantineReason.HOST_FAILURES,
                              jobs_hit=["j1", "j2"], at="2026-11-22T09:00:00.000Z", evidence=evidence)  # fmt: skip

    # When
    note = describe_quarantine(record)

    # Then it says which host, why, with what evidence, and the timeline reads it as a note (no status change)
    assert note.startswith("host i-0bad quarantined: it failed 2 different jobs for reasons of its own (exit code 14")
    assert "fallen off the bus" in note
    assert TimelineEntry(status=JobStatus.RUNNING, at=record.at, reason=note).note


def test_a_note_on_the_timeline_never_takes_the_reason_batch_gives_its_status_entry():
    # Given a job RUNNABLE on its first attempt, then a quarantine note appended
    from functions.shared.domain.jobs.lifecycle import status_rank
    from functions.shared.domain.jobs.records import JobRecord
    from functions.shared.domain.requests.job_request import JobRequest

    runnable = TimelineEntry(status=JobStatus.RUNNABLE, at="2026-11-22T09:00:00.000Z")
    note = TimelineEntry(status=JobStatus.RUNNABLE, at="2026-11-22T09:01:00.000Z", reason="host i-1 quarantined: x")
    record = JobRecord(job_id="j", name="n", status=JobStatus.RUNNABLE, status_rank=status_rank(JobStatus.RUNNABLE, 1),
                       request=JobRequest(name="n", image="i", command=["c"]), timeline=[runnable, note],
                       created_at="2026-11-22T09:00:00.000Z", updated_at="2026-11-22T09:00:00.000Z")  # fmt: skip

    # When / Then: Batch's words for RUNNABLE explain the RUNNABLE entry, not the note after it
    assert record.entry_for(JobStatus.RUNNABLE, 1) == 0
