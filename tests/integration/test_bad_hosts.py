"""Bad GPU hosts against moto, each function with its role enforced: the evidence kept by job_events, the sweep it
starts, and the sweep's quarantine (drained in ECS, console read, terminated); and the host ledger's contract, held
by the DynamoDB adapter and the fake alike."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from functions.shared.adapters.host_store import DynamoHostLedger
from functions.shared.adapters.job_store import DynamoJobStore
from functions.shared.adapters.table_store import DynamoHealthStore
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.hosts.evidence import HostFault, Symptom
from functions.shared.domain.hosts.quarantine import QuarantineReason, QuarantineRecord
from functions.shared.domain.pools.specs import POOL_TAG
from functions.shared.ports.hosts import HostLedger
from tests.fakes.ports import FakeHostLedger
from tests.integration.conftest import Cloud
from tests.integration.test_workflow_steps import JOB, provisioned, store  # noqa: F401  (store: a fixture)

ACCOUNT, REGION = "123456789012", "us-east-1"


@pytest.fixture(params=["dynamodb", "fake"])
def ledger(request: pytest.FixtureRequest) -> Iterator[HostLedger]:
    if request.param == "fake":
        yield FakeHostLedger()
    else:
        yield DynamoHostLedger(request.getfixturevalue("deployment").table_name)


def fault(batch_job_id: str, at: str, attempt: int = 1) -> HostFault:
    return HostFault(container_instance_arn="arn:aws:ecs:us-east-1:123456789012:container-instance/c/1",
                     batch_job_id=batch_job_id, attempt=attempt, pool="p", symptom=Symptom.NVIDIA_RUNTIME,
                     why="nvml error", at=at)  # fmt: skip


def test_a_fault_is_kept_once_and_read_back_when_recent_enough(ledger: HostLedger) -> None:
    assert ledger.record_fault(fault("b-1", "2026-11-22T09:00:00.000Z"), 7200)
    assert not ledger.record_fault(fault("b-1", "2026-11-22T09:00:00.000Z"), 7200)  # a replayed event
    assert ledger.record_fault(fault("b-2", "2026-11-22T10:00:00.000Z"), 7200)
    assert [f.batch_job_id for f in ledger.faults("2026-11-22T09:30:00.000Z")] == ["b-2"]


def test_one_sweep_claim_and_one_quarantine_record_per_host(ledger: HostLedger) -> None:
    # Given / When two callers claim the same host's sweep, and two sweeps record the same quarantine
    record = QuarantineRecord(instance="i-1", pool="p", reason=QuarantineReason.HOST_FAILURES, at="2026-11-22T09:00Z")
    claims = [ledger.claim_sweep("arn:ci/1", 3600), ledger.claim_sweep("arn:ci/1", 3600)]
    records = [ledger.record_quarantine(record), ledger.record_quarantine(record.model_copy(update={"pool": "q"}))]

    # Then only the first of each goes through; an update rewrites what was done
    assert claims == [True, False] and records == [True, False]
    ledger.update_quarantine(record.model_copy(update={"action": "terminated i-1"}))
    [stored] = ledger.quarantines("2026-11-22T08:00:00.000Z")
    assert (stored.pool, stored.action) == ("p", "terminated i-1")
    assert ledger.quarantines("2026-11-22T10:00:00.000Z") == []


def test_the_ledger_reads_the_recent_faults_and_quarantines_together_and_no_sweep_claim(ledger: HostLedger) -> None:
    # Given faults and quarantines either side of the window's start, and a host's sweep claimed
    for batch_job_id, at in (("b-old", "2026-11-22T08:00:00.000Z"), ("b-new", "2026-11-22T10:00:00.000Z")):
        ledger.record_fault(fault(batch_job_id, at), 7200)
    for instance, at in (("i-old", "2026-11-22T08:00:00.000Z"), ("i-new", "2026-11-22T10:00:00.000Z")):
        ledger.record_quarantine(
            QuarantineRecord(instance=instance, pool="p", reason=QuarantineReason.HOST_FAILURES, at=at)
        )
    ledger.claim_sweep("arn:ci/1", 3600)

    # When the sweep reads the ledger from the window's start
    faults, quarantines = ledger.ledger("2026-11-22T09:00:00.000Z")

    # Then it has what faults() and quarantines() give, each of its kind
    assert [f.batch_job_id for f in faults] == ["b-new"] == [f.batch_job_id for f in ledger.faults("2026-11-22T09:00Z")]
    assert (
        [r.instance for r in quarantines] == ["i-new"] == [r.instance for r in ledger.quarantines("2026-11-22T09:00Z")]
    )


def test_a_jobs_timeline_is_noted_once_per_quarantined_host(store: DynamoJobStore) -> None:  # noqa: F811
    # Given / When the same host noted twice, another once
    noted = [store.note_host(JOB, JobStatus.SUBMITTED, host, f"host {host} quarantined: it failed", "2026-11-22T09:00Z")
             for host in ("i-1", "i-1", "i-2")]  # fmt: skip

    # Then
    assert noted == [True, False, True]
    assert [e.reason for e in store.get_job(JOB).timeline if e.note] == [
        "host i-1 quarantined: it failed",
        "host i-2 quarantined: it failed",
    ]


# -- through the deployed functions -----------------------------------------------------------------------------
def gpu_host(cluster_arn: str, pool: str) -> tuple[str, str]:
    """An EC2 instance of the pool (tagged as Batch tags it), registered in its cluster with one GPU."""
    ec2 = boto3.client("ec2", region_name=REGION)
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    tags = [{"ResourceType": "instance", "Tags": [{"Key": POOL_TAG, "Value": pool}]}]
    launched = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="g4dn.xlarge",
                                 SubnetId=subnet, TagSpecifications=tags)  # fmt: skip
    instance = launched["Instances"][0]["InstanceId"]
    from moto.ecs.models import ecs_backends

    registered = ecs_backends[ACCOUNT][REGION].register_container_instance(cluster_arn.rsplit("/", 1)[-1], instance)
    gpu = {"name": "GPU", "type": "STRINGSET", "stringSetValue": ["GPU-1"]}
    registered.registered_resources = [*registered.registered_resources, gpu]
    return instance, registered.container_instance_arn


def failed_start(batch_job_id: str, queue_arn: str, container_instance_arn: str, stopped_ms: int) -> dict[str, Any]:
    """A Batch Job State Change of someone's job in the pool, retried after its container could not start there."""
    reason = "CannotStartContainerError: ... nvidia-container-cli: initialization error: nvml error: driver not loaded"
    attempt = {"container": {"containerInstanceArn": container_instance_arn, "reason": reason},
               "statusReason": "Task failed to start", "startedAt": stopped_ms - 2000,
               "stoppedAt": stopped_ms}  # fmt: skip
    detail = {"jobId": batch_job_id, "jobName": "nightly", "jobQueue": queue_arn, "status": "RUNNABLE",
              "attempts": [attempt]}  # fmt: skip
    return {"detail-type": "Batch Job State Change", "source": "aws.batch", "time": "2026-11-22T10:00:00Z",
            "detail": detail}  # fmt: skip


def test_a_host_that_fails_two_jobs_is_quarantined_by_the_sweep_job_events_starts(cloud: Cloud, store: Any) -> None:  # noqa: F811
    # Given a pool with a registered GPU host
    state = provisioned(cloud)
    batch = boto3.client("batch", region_name=REGION)
    pool = state["queue"]["job_queue"]
    cluster = batch.describe_compute_environments(computeEnvironments=[pool])["computeEnvironments"][0]["ecsClusterArn"]
    queue_arn = batch.describe_job_queues(jobQueues=[pool])["jobQueues"][0]["jobQueueArn"]
    instance, container = gpu_host(cluster, pool)
    from functions.shared.domain.core.clock import now

    stopped = int(now().timestamp() * 1000)

    # When its container runtime fails two different jobs, each event handled by job_events
    cloud.invoke("job_events", failed_start("b-1", queue_arn, container, stopped - 5000))
    cloud.invoke("job_events", failed_start("b-2", queue_arn, container, stopped))
    cloud.dispatcher.join_background()

    # Then job_events started a sweep, which drained the host in ECS, read its console and terminated it
    ecs = boto3.client("ecs", region_name=REGION)
    [described] = ecs.describe_container_instances(cluster=cluster, containerInstances=[container])[
        "containerInstances"
    ]
    assert described["status"] == "DRAINING"
    state_name = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=[instance])
    assert state_name["Reservations"][0]["Instances"][0]["State"]["Name"] == "terminated"
    report = DynamoHealthStore(cloud.deployment.table_name).latest_report()
    assert report is not None
    [finding] = [f for f in report.findings if f.kind == "BAD_GPU_HOST"]
    assert finding.instances == [instance] and finding.evidence["jobs_hit"] == ["b-1", "b-2"]
    assert finding.evidence["console_tail"]  # moto's console sample, read through the sweep's role
    assert "drained" in (finding.action or "") and f"terminated {instance}" in (finding.action or "")
