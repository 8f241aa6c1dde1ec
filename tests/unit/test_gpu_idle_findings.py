"""GPU_IDLE findings: the sweep names each running job warned that its GPUs idled past its idle_policy."""

from __future__ import annotations

from typing import Any

import pytest

from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.core.vocabulary import AttemptStatus, BatchStatus, CapacityType, FindingKind, Severity
from functions.shared.domain.cost.attempts import attempt_cost
from functions.shared.domain.cost.idle import IdleWarning
from functions.shared.domain.health.idle import gpu_idle_findings
from functions.shared.domain.jobs.records import ActiveJob, AttemptRecord

REASON = "GPU_IDLE: its GPUs stayed under 5% utilisation for 30 minutes"
# $2.40/h for 2 of the instance's 4 GPUs
PRICE = attempt_cost(PriceQuote(hourly_usd=2.4, pricing="on-demand"), 0.0, job_gpus=2, instance_gpus=4)
WARNED = IdleWarning(at="2027-01-15T10:00:00Z", after_minutes=30, gpus=2, price=PRICE)


def job(job_id: str, batch_status: BatchStatus = BatchStatus.RUNNING, **fields: Any) -> ActiveJob:
    attempt = AttemptRecord(
        instance_type="g5.12xlarge", capacity=CapacityType.ON_DEMAND, job_queue="gpupilot-od-g5", region="us-west-2",
        status=AttemptStatus.RUNNING, batch_job_id=f"b-{job_id}", batch_status=batch_status,
        gpu_utilization={"mean": 2.0, "p95": 3.0, "max_memory_gib": 1.0, "idle_seconds": 2700.0, "samples": 270},
        **fields,
    )  # fmt: skip
    return ActiveJob(job_id=job_id, attempts={1: attempt})


def test_a_running_job_warned_of_its_idle_gpus_is_a_gpu_idle_finding_saying_what_the_idle_time_cost():
    # Given a running job warned that its 2 GPUs idled past 30 minutes, 45 of them idle so far at 2% utilisation
    records = [job("idle", warning=REASON, idle_warning=WARNED)]

    # When the sweep reads the unfinished jobs
    [finding] = gpu_idle_findings(records, home="us-east-1")

    # Then it names the job, its attempt, idle minutes, utilisation, GPUs, and what 2700 idle seconds cost at
    # $2.40/h x half the instance: $0.90
    assert (finding.kind, finding.severity, finding.resource) == (FindingKind.GPU_IDLE, Severity.WARNING,
                                                                 "gpupilot-od-g5")  # fmt: skip
    assert (finding.jobs, finding.region) == (["idle"], "us-west-2")
    evidence = finding.evidence
    assert (evidence["job_id"], evidence["attempt"], evidence["batch_job_id"]) == ("idle", 1, "b-idle")
    assert (evidence["idle_minutes"], evidence["utilization_mean"], evidence["gpus"]) == (45.0, 2.0, 2)
    assert evidence["idle_usd"] == pytest.approx(0.9, abs=1e-12)
    assert (evidence["after_minutes"], evidence["warning"]) == (30, REASON)


def test_a_job_not_warned_one_warned_but_no_longer_running_and_an_unpriced_one_are_told_apart():
    # Given a busy running job, a warned job Batch has ended, and a warned running job no price was known for
    records = [
        job("busy"),
        job("ended", BatchStatus.SUCCEEDED, warning=REASON, idle_warning=WARNED),
        job("unpriced", warning=REASON, idle_warning=WARNED.model_copy(update={"price": None})),
    ]

    # When the sweep reads them
    found = gpu_idle_findings(records, home="us-east-1")

    # Then only the running warned job is a finding, its cost said to be unknown rather than guessed
    assert [f.jobs for f in found] == [["unpriced"]]
    assert found[0].evidence["idle_usd"] is None
