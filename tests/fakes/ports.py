"""In-memory fakes of the AWS-facing ports: plain data in, plain data out, every call recorded."""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from functions.shared.adapters.ec2 import load_snapshot
from functions.shared.adapters.prices import SnapshotPrices
from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.capacity.market import AvailabilitySnapshot
from functions.shared.domain.capacity.quotas import QUOTA_NAMES, QuotaState, RunningInstances
from functions.shared.domain.capacity.unavailable import UnavailableOffering
from functions.shared.domain.core.clock import now_iso, parse_iso
from functions.shared.domain.core.errors import SignalUnavailable, SweepNotFound
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.core.settings import RegionNetwork, Settings
from functions.shared.domain.core.vocabulary import MetricName, SweepStatus
from functions.shared.domain.cost.shares import Occupant, SharedInstance, occupy
from functions.shared.domain.cost.waste import InstanceWaste, WasteEntry, charge
from functions.shared.domain.diagnosis.findings import HealthReport
from functions.shared.domain.fleet.batch import (
    BatchJobState,
    ComputeEnvironmentState,
    ContainerInstanceState,
    Ec2InstanceState,
    FleetState,
    JobQueueState,
)
from functions.shared.domain.hosts.evidence import HostFault
from functions.shared.domain.hosts.quarantine import QuarantineRecord
from functions.shared.domain.jobs.logs import LogEvent, LogPage
from functions.shared.domain.pools.specs import GONE, generation_of
from functions.shared.domain.pools.states import USE_FIELDS, PoolState
from functions.shared.domain.reservations.offerings import BlockOffering
from functions.shared.domain.reservations.reservation import (
    Reservation,
    reservation_launch_data,
    reservation_launch_template,
)
from functions.shared.ports import Ports
from tests.fakes.job_store import FakeJobStore
from tests.fakes.teams import FakeAuditLog, FakeBudgets, FakeGpuCaps

ZONES = ["us-east-1a", "us-east-1b"]


class FakeOfferingMemory:
    def __init__(self) -> None:
        self.remembered: dict[str, UnavailableOffering] = {}

    def remember_unavailable(self, key: str, memory: UnavailableOffering) -> None:
        self.remembered[key] = memory

    def unavailable_offerings(self) -> dict[str, UnavailableOffering]:
        now = now_iso()
        return {key: memory for key, memory in self.remembered.items() if memory.expires_at > now}


class FakePoolStates:
    """Pool states by pool, versioned as the table is."""

    def __init__(self) -> None:
        self.states: dict[str, PoolState] = {}
        self.verdicts: dict[str, tuple[str, str]] = {}

    def pool_states(self) -> dict[str, PoolState]:
        return dict(self.states)

    def save_pool_state(self, state: PoolState) -> bool:
        stored = self.states.get(state.pool)
        if stored is not None and stored.version != state.version:
            return False
        use = {field: getattr(stored, field) for field in USE_FIELDS} if stored else {}
        self.states[state.pool] = state.model_copy(update={"version": state.version + 1} | use)
        return True

    def claim_pool(self, pool: str, key: str, at: str) -> bool:
        stored = self.states.get(pool) or PoolState(pool=pool)
        if stored.retiring_since:
            return False
        self.states[pool] = stored.model_copy(update={"last_used_at": at, "pool_key": key})
        return True

    def start_retiring(self, pool: str, reason: str, at: str, last_used_at: str | None) -> bool:
        stored = self.states.get(pool) or PoolState(pool=pool)
        if stored.retiring_since or stored.last_used_at != last_used_at:
            return False
        self.states[pool] = stored.model_copy(update={"retiring_since": at, "retire_reason": reason})
        return True

    def finish_retiring(self, pool: str) -> None:
        if pool in self.states and self.states[pool].retiring_since:
            del self.states[pool]

    def note_queue_verdict(self, pool: str, head: str, reason: str, at: str) -> None:
        self.verdicts[pool] = (head, reason)

    def queue_verdict(self, pool: str) -> tuple[str, str] | None:
        return self.verdicts.get(pool)


class FakeWasteLedger:
    """Waste by (day, instance), each sighting charging only the span not charged before (as the table does)."""

    def __init__(self) -> None:
        self.instances: dict[tuple[str, str], InstanceWaste] = {}
        self.shared: dict[tuple[str, str], SharedInstance] = {}

    @property
    def entries(self) -> dict[tuple[str, str, str], WasteEntry]:
        """What was charged, by (day, instance, reason)."""
        return {
            (day, instance_id, entry.reason): entry
            for (day, instance_id), ledger in sorted(self.instances.items())
            for entry in ledger.entries()
        }

    def record_waste(self, entry: WasteEntry) -> float:
        key = (entry.day, entry.instance_id)
        ledger, added = charge(self.instances.get(key), entry)
        if added:
            self.instances[key] = ledger
        return added

    def record_share(self, instance: SharedInstance, key: str, attempt: Occupant) -> SharedInstance | None:
        where = (instance.day, instance.instance_id)
        written = occupy(self.shared.get(where, instance), key, attempt)
        if written is not None:
            self.shared[where] = written
        return written

    def waste_between(self, day_from: str, day_to: str) -> list[WasteEntry]:
        shared = [
            e for (day, _), ledger in sorted(self.shared.items()) if day_from <= day <= day_to for e in ledger.entries()
        ]
        return [e for (day, _, _), e in self.entries.items() if day_from <= day <= day_to] + shared


@dataclass
class FakeHostLedger:
    """Host-side failures (once each) and quarantine records (once per instance), as the DynamoDB ledger keeps them."""

    kept: dict[tuple[str, str, int], HostFault] = field(default_factory=dict)
    claimed: set[str] = field(default_factory=set)
    records: dict[str, QuarantineRecord] = field(default_factory=dict)

    def record_fault(self, fault: HostFault, ttl_seconds: float) -> bool:
        key = (fault.container_instance_arn, fault.batch_job_id, fault.attempt)
        if key in self.kept:
            return False
        self.kept[key] = fault
        return True

    def faults(self, since: str) -> list[HostFault]:
        return [f for f in self.kept.values() if parse_iso(f.at) >= parse_iso(since)]

    def claim_sweep(self, container_instance_arn: str, ttl_seconds: float) -> bool:
        if container_instance_arn in self.claimed:
            return False
        self.claimed.add(container_instance_arn)
        return True

    def record_quarantine(self, record: QuarantineRecord) -> bool:
        if record.instance in self.records:
            return False
        self.records[record.instance] = record.model_copy(deep=True)
        return True

    def update_quarantine(self, record: QuarantineRecord) -> None:
        self.records[record.instance] = record.model_copy(deep=True)

    def quarantines(self, since: str) -> list[QuarantineRecord]:
        return [r.model_copy(deep=True) for r in self.records.values() if parse_iso(r.at) >= parse_iso(since)]

    def ledger(self, since: str) -> tuple[list[HostFault], list[QuarantineRecord]]:
        return self.faults(since), self.quarantines(since)


class FakeHealthStore:
    def __init__(self) -> None:
        self.reports: dict[str, HealthReport] = {}
        self.latest: HealthReport | None = None

    def start_sweep(self, sweep_id: str) -> None:
        self.reports.setdefault(
            sweep_id,
            HealthReport(sweep_id=sweep_id, status=SweepStatus.RUNNING, swept_at=None, findings=[], summary={}),
        )

    def save_report(self, report: HealthReport) -> None:
        assert report.sweep_id is not None
        self.reports[report.sweep_id] = report
        if report.status != "COMPLETE":
            return
        if self.latest is None or (self.latest.swept_at or "") < (report.swept_at or ""):
            self.latest = report

    def get_report(self, sweep_id: str) -> HealthReport:
        if sweep_id not in self.reports:
            raise SweepNotFound(sweep_id)
        return self.reports[sweep_id]

    def latest_report(self) -> HealthReport | None:
        return self.latest


@dataclass
class FakeBatch:
    """Batch jobs: `jobs` by id; tests move them with `set_status`."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    definitions: list[dict[str, Any]] = field(default_factory=list)
    terminated: list[tuple[str, str]] = field(default_factory=list)
    listed: list[tuple[str, str]] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def register_job_definition(self, spec: dict[str, Any]) -> str:
        self.definitions.append(spec)
        return (
            f"arn:aws:batch:us-east-1:123456789012:job-definition/{spec['jobDefinitionName']}:{len(self.definitions)}"
        )

    def submit_job(
        self, name: str, job_queue: str, job_definition: str, tags: dict[str, str], share: str | None = None
    ) -> str:
        job_id = f"batch-{next(self._ids):04d}"
        self.jobs[job_id] = {
            "jobId": job_id,
            "jobName": name,
            "jobQueue": job_queue,
            "jobDefinition": job_definition,
            **({"shareIdentifier": share} if share else {}),
            "status": "SUBMITTED",
            "createdAt": int(time.time() * 1000),
            "tags": tags,
        }
        return job_id

    def find_job(self, job_queue: str, name: str) -> BatchJobState | None:
        for job in self.jobs.values():
            if job["jobQueue"] == job_queue and job["jobName"] == name:
                return BatchJobState.from_batch(job)
        return None

    def describe_jobs(self, job_ids: list[str]) -> list[BatchJobState]:
        return [BatchJobState.from_batch(self.jobs[j]) for j in job_ids if j in self.jobs]

    def terminate_job(self, job_id: str, reason: str) -> None:
        self.terminated.append((job_id, reason))

    def list_jobs(self, job_queue: str, status: str) -> list[BatchJobState]:
        self.listed.append((job_queue, status))
        return [
            BatchJobState.from_batch(job)
            for job in self.jobs.values()
            if job["jobQueue"] == job_queue and job["status"] == status
        ]

    def set_status(self, job_id: str, status: str, **fields: Any) -> BatchJobState:
        self.jobs[job_id] |= {"status": status, **fields}
        return BatchJobState.from_batch(self.jobs[job_id])


@dataclass
class FakePools:
    """Compute environments by name; new ones are CREATING until `make_valid` (as Batch does). With
    `slow_deletes`, a deleted queue or compute environment stays, DELETING, until `finish_deleting` (then
    DELETED, until `forget_deleted`), as Batch shows them; otherwise deletes are immediate."""

    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    created_status: str = "CREATING"
    foreign_environments: int = 0
    foreign_queues: int = 0
    busy_queues: set[str] = field(default_factory=set)
    slow_deletes: bool = False

    def describe_compute_environment(self, name: str) -> ComputeEnvironmentState | None:
        found = self.environments.get(name)
        return ComputeEnvironmentState.from_batch(found) if found else None

    def generations(self, pool: str) -> tuple[list[ComputeEnvironmentState], list[JobQueueState]]:
        return (
            [ComputeEnvironmentState.from_batch(e) for n, e in self.environments.items() if generation_of(pool, n)],
            [JobQueueState.from_batch(q) for n, q in self.queues.items() if generation_of(pool, n)],
        )

    def compute_environments(self, prefix: str) -> list[ComputeEnvironmentState]:
        return [
            ComputeEnvironmentState.from_batch(e) for n, e in self.environments.items() if n.startswith(prefix + "-")
        ]

    def job_queues(self, prefix: str) -> list[JobQueueState]:
        return [JobQueueState.from_batch(q) for name, q in self.queues.items() if name.startswith(prefix + "-")]

    def create_compute_environment(self, spec: dict[str, Any]) -> None:
        name = spec["computeEnvironmentName"]
        if self.environments.get(name, {}).get("status") in GONE:
            raise AssertionError(f"compute environment {name} is still {self.environments[name]['status']}: "
                                 "Batch keeps its name, GPU Pilot must not reuse it")  # fmt: skip
        self.environments.setdefault(
            name,
            spec
            | {
                "computeEnvironmentArn": f"arn:aws:batch:us-east-1:123456789012:compute-environment/{name}",
                "status": self.created_status,
            },
        )

    def job_queue(self, name: str) -> JobQueueState | None:
        found = self.queues.get(name)
        return JobQueueState.from_batch(found) if found else None

    def create_job_queue(self, spec: dict[str, Any]) -> None:
        if self.queues.get(spec["jobQueueName"], {}).get("status") in GONE:
            raise AssertionError(f"job queue {spec['jobQueueName']} is still being deleted: Batch keeps its name")
        for entry in spec["computeEnvironmentOrder"]:
            name = entry["computeEnvironment"].rsplit("/", 1)[-1]
            if self.environments.get(name, {}).get("status") != "VALID":
                raise AssertionError(f"a job queue on compute environment {name} that is not VALID: AWS refuses it")
        self.queues.setdefault(spec["jobQueueName"], spec | {"status": "VALID"})

    def disable_job_queue(self, name: str) -> None:
        self.queues[name] |= {"state": "DISABLED"}

    def counts(self) -> tuple[int, int]:
        environments = sum(1 for e in self.environments.values() if e.get("status") != "DELETED")
        queues = sum(1 for q in self.queues.values() if q.get("status") != "DELETED")
        return environments + self.foreign_environments, queues + self.foreign_queues

    def queue_has_jobs(self, name: str) -> bool:
        return name in self.busy_queues

    def delete_job_queue(self, name: str) -> bool:
        if self.queues.get(name, {}).get("state") != "DISABLED" or self.queues[name].get("status") in GONE:
            return False  # Batch: "You must first disable submissions for a queue"
        self._delete(self.queues, name)
        return True

    def disable_compute_environment(self, name: str) -> bool:
        self.environments[name] |= {"state": "DISABLED"}
        return True

    def delete_compute_environment(self, name: str) -> bool:
        ordered = any(
            e["computeEnvironment"].rsplit("/", 1)[-1] == name
            for q in self.queues.values()
            if q.get("status") != "DELETED"
            for e in q.get("computeEnvironmentOrder", [])
        )
        environment = self.environments.get(name, {})
        if ordered or environment.get("state") != "DISABLED" or environment.get("status") in GONE:
            return False  # Batch deletes only a DISABLED compute environment no queue orders
        self._delete(self.environments, name)
        return True

    def _delete(self, resources: dict[str, dict[str, Any]], name: str) -> None:
        if self.slow_deletes:
            resources[name] |= {"status": "DELETING"}
        else:
            del resources[name]

    def finish_deleting(self) -> None:
        """Batch finishes the deletions under way: those queues and compute environments are DELETED."""
        for resource in [*self.queues.values(), *self.environments.values()]:
            if resource.get("status") == "DELETING":
                resource["status"] = "DELETED"

    def forget_deleted(self) -> None:
        """Batch stops showing what it deleted."""
        self.queues = {n: q for n, q in self.queues.items() if q.get("status") != "DELETED"}
        self.environments = {n: e for n, e in self.environments.items() if e.get("status") != "DELETED"}

    def make_valid(self, name: str | None = None) -> None:
        for key, environment in self.environments.items():
            if name is None or key == name:
                environment["status"] = "VALID"

    def make_invalid(self, name: str, reason: str) -> None:
        self.environments[name] |= {"status": "INVALID", "statusReason": reason}


@dataclass
class FakeFleet:
    """Instances by pool and container instances by cluster, as the tests place them."""

    by_pool: dict[str, list[Ec2InstanceState]] = field(default_factory=dict)
    by_cluster: dict[str, list[ContainerInstanceState]] = field(default_factory=dict)
    terminated: list[str] = field(default_factory=list)
    deregistered: list[str] = field(default_factory=list)
    drained: list[str] = field(default_factory=list)
    consoles: dict[str, str] = field(default_factory=dict)
    console_reads: list[str] = field(default_factory=list)

    def running_instances(self, spot: bool) -> list[RunningInstances]:
        counts: dict[tuple[str, str], int] = {}
        for pool, instances in self.by_pool.items():
            for instance in instances:
                if instance.alive and instance.spot == spot:
                    key = (instance.instance_type, pool)
                    counts[key] = counts.get(key, 0) + 1
        return [RunningInstances(instance_type=t, pool=pool, count=n) for (t, pool), n in sorted(counts.items())]

    def terminate_instances(self, instance_ids: list[str]) -> None:
        self.terminated += instance_ids
        for instances in self.by_pool.values():
            instances[:] = [i for i in instances if i.instance_id not in instance_ids]

    def deregister_container_instance(self, cluster_arn: str, container_instance_arn: str) -> None:
        self.deregistered.append(container_instance_arn)
        self.by_cluster[cluster_arn] = [
            c for c in self.by_cluster.get(cluster_arn, []) if c.arn != container_instance_arn
        ]

    def drain(self, cluster_arn: str, container_instance_arns: list[str]) -> list[str]:
        self.drained += container_instance_arns
        for index, container in enumerate(self.by_cluster.get(cluster_arn, [])):
            if container.arn in container_instance_arns:
                self.by_cluster[cluster_arn][index] = container.model_copy(update={"status": "DRAINING"})
        return []

    def console_output(self, instance_id: str) -> str | None:
        self.console_reads.append(instance_id)
        return self.consoles.get(instance_id)

    def zone_of(self, container_instance_arn: str) -> str | None:
        found = self.container_instance(container_instance_arn)
        return (found.zone or None) if found else None

    def container_instance(self, container_instance_arn: str) -> ContainerInstanceState | None:
        found = [c for cs in self.by_cluster.values() for c in cs if c.arn == container_instance_arn]
        return found[0] if found else None

    def instances(self, pools: list[str]) -> dict[str, list[Ec2InstanceState]]:
        return {pool: list(self.by_pool.get(pool, [])) for pool in pools}

    def container_instances(self, cluster_arn: str) -> list[ContainerInstanceState]:
        return list(self.by_cluster.get(cluster_arn, []))

    def fleets(self, pools: dict[str, str | None]) -> dict[str, FleetState]:
        instances = self.instances(list(pools))
        return {
            pool: FleetState(instances=instances[pool], container_instances=self.container_instances(cluster or ""))
            for pool, cluster in pools.items()
        }

    def launch(
        self, pool: str, instance_id: str, instance_type: str = "g4dn.xlarge", launched_at: str = "",
        zone: str = "us-east-1a",
    ) -> None:  # fmt: skip
        self.by_pool.setdefault(pool, []).append(
            Ec2InstanceState(instance_id=instance_id, instance_type=instance_type, state="running",
                             launched_at=launched_at or "2026-11-22T09:00:00.000Z", zone=zone)
        )  # fmt: skip

    def register(self, cluster: str, instance_id: str, gpus: int = 1, connected: bool = True, **fields: Any) -> None:
        self.by_cluster.setdefault(cluster, []).append(
            ContainerInstanceState(arn=f"arn:aws:ecs:us-east-1:123456789012:container-instance/{instance_id}",
                                   ec2_instance_id=instance_id, status="ACTIVE", agent_connected=connected, gpus=gpus,
                                   **fields)
        )  # fmt: skip


@dataclass
class FakeQuotas:
    values: dict[str, float] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    # Codes Service Quotas will not tell (AccessDenied, throttled past the retries).
    refused: dict[str, SignalUnavailable] = field(default_factory=dict)

    def vcpu_quota(self, code: str) -> QuotaState | None:
        self.asked.append(code)
        if code in self.refused:
            raise self.refused[code]
        value = self.values.get(code)
        return None if value is None else QuotaState(code=code, name=QUOTA_NAMES[code], vcpus=value)


class FakeCatalog:
    def __init__(self, types: dict[str, GpuType] | None = None) -> None:
        self._types = types if types is not None else load_snapshot()

    @property
    def source(self) -> str:
        return "snapshot"

    def gpu_types(self) -> dict[str, GpuType]:
        return self._types


class FakeAvailability:
    """Every type offered in every zone unless `offered` says otherwise."""

    def __init__(self, zones: list[str] | None = None, offered: dict[str, list[str]] | None = None) -> None:
        self.zones = zones or list(ZONES)
        self.offered = offered
        self.scores: dict[str, int] = {}
        self.asked_scores: list[list[str]] = []
        self.scores_error: SignalUnavailable | None = None
        self.template_versions: dict[str, int] = {}

    def launch_template_version(self, name: str) -> int | None:
        return self.template_versions.get(name)

    def subnets_in(self, zones: list[str]) -> list[str]:
        return [f"subnet-{zone[-1]}" for zone in self.zones if zone in zones]

    def placement_scores(self, instance_types: list[str]) -> dict[str, dict[str, int]]:
        self.asked_scores.append(list(instance_types))
        if self.scores_error is not None:
            raise self.scores_error
        return {t: {z: self.scores[t] for z in self.zones} for t in instance_types if t in self.scores}

    def snapshot(self, instance_types: list[str], unavailable: set[str]) -> AvailabilitySnapshot:
        offered = self.offered if self.offered is not None else {t: list(self.zones) for t in instance_types}
        return AvailabilitySnapshot(zones=self.zones, offered=offered, unavailable=unavailable)


class FakePrices:
    def __init__(self, table: dict[str, float] | None = None, spot_table: dict[str, float] | None = None) -> None:
        self._table = table
        self.spot_table = spot_table or {}
        # Set to make the Price List unreadable (on-demand prices then come from the snapshot, as the adapter's do).
        self.price_list_error: SignalUnavailable | None = None
        # Set to make spot price history unreadable.
        self.spot_error: SignalUnavailable | None = None

    def price_list_unavailable(self) -> SignalUnavailable | None:
        return self.price_list_error

    def spot_over(self, instance_type: str, zones: list[str], start: str, stop: str) -> PriceQuote | None:
        if self.spot_error is not None:
            raise self.spot_error
        if instance_type not in self.spot_table or not zones:
            return None
        where = ",".join(zones)
        return PriceQuote(
            hourly_usd=self.spot_table[instance_type], pricing=f"test spot price in {where} over {start}..{stop}"
        )

    def spot(self, instance_types: list[str], zones: list[str]) -> dict[str, dict[str, PriceQuote]]:
        if self.spot_error is not None:
            raise self.spot_error
        return {
            t: {z: PriceQuote(hourly_usd=self.spot_table[t], pricing=f"test spot price in {z}") for z in zones}
            for t in instance_types
            if t in self.spot_table
        }

    def on_demand(self, instance_type: str) -> PriceQuote | None:
        if self._table is None or self.price_list_error is not None:
            return SnapshotPrices().on_demand(instance_type)
        hourly = self._table.get(instance_type)
        return None if hourly is None else PriceQuote(hourly_usd=hourly, pricing="test prices")


@dataclass
class FakeWorkflow:
    """Executions and task tokens; a token answered once is spent, as in Step Functions."""

    executions: dict[str, str] = field(default_factory=dict)
    stopped: list[str] = field(default_factory=list)
    sent: list[tuple[str, str]] = field(default_factory=list)
    spent: set[str] = field(default_factory=set)

    def start_execution(self, name: str, execution_input: str) -> str:
        arn = f"arn:aws:states:us-east-1:123456789012:execution:GpuJob:{name}"
        self.executions[arn] = execution_input
        return arn

    def stop_execution(self, execution_arn: str, error: str, cause: str) -> None:
        self.stopped.append(execution_arn)

    def send_task_success(self, token: str, output: str) -> bool:
        if token in self.spent:
            return False
        self.spent.add(token)
        self.sent.append((token, output))
        return True


@dataclass
class FakeSweeps:
    started: list[str] = field(default_factory=list)

    def start_sweep(self, sweep_id: str) -> None:
        self.started.append(sweep_id)


class FakeReservations:
    """The account's reservations and the Capacity Blocks on offer, as the test sets them; launch templates made."""

    def __init__(self, reservations: list[Reservation] | None = None, offerings: list[BlockOffering] | None = None):
        self.held: dict[str, Reservation] = {r.reservation_id: r for r in reservations or []}
        self.offerings = list(offerings or [])
        self.templates: dict[str, dict[str, Any]] = {}
        self.purchased: list[tuple[str, dict[str, str]]] = []
        self.asked_days: list[int] = []
        self.unavailable: SignalUnavailable | None = None

    def reservations(self) -> list[Reservation]:
        if self.unavailable is not None:
            raise self.unavailable
        return list(self.held.values())

    def reservation(self, reservation_id: str) -> Reservation | None:
        return self.held.get(reservation_id)

    def launch_template(self, base: str, base_version: int, reservation: Reservation) -> str:
        name = reservation_launch_template(base, base_version, reservation)
        self.templates.setdefault(name, reservation_launch_data({"UserData": "base"}, reservation))
        return name

    def block_offerings(self, instance_type: str, count: int, days: int) -> list[BlockOffering]:
        """The offerings of that type and count whose length, in whole days begun, is `days` (EC2 answers a block
        that begins today, and so ends sooner, to the days asked)."""
        self.asked_days.append(days)
        return [
            o.model_copy(update={"days": days})
            for o in self.offerings
            if (o.instance_type, o.count, math.ceil(o.hours / 24)) == (instance_type, count, days)
        ]

    def purchase_block(self, offering_id: str, tags: dict[str, str]) -> Reservation:
        offering = next(o for o in self.offerings if o.offering_id == offering_id)
        self.purchased.append((offering_id, tags))
        bought = Reservation(
            reservation_id=f"cr-{len(self.held):017x}", instance_type=offering.instance_type, zone=offering.zone,
            state="scheduled", total=offering.count, available=0, starts_at=offering.starts_at,
            ends_at=offering.ends_at, capacity_block=True, match="targeted", upfront_usd=offering.upfront_usd,
        )  # fmt: skip
        self.held[bought.reservation_id] = bought
        return bought


class FakeListedOfferings:
    def __init__(self) -> None:
        self.listed: dict[str, BlockOffering] = {}
        self.claimed: dict[str, str] = {}

    def remember_offerings(self, offerings: list[BlockOffering]) -> None:
        self.listed.update({o.offering_id: o for o in offerings if o.offering_id not in self.claimed})

    def listed_offering(self, offering_id: str) -> BlockOffering | None:
        return self.listed.get(offering_id)

    def claim_purchase(self, offering_id: str, at: str) -> bool:
        if offering_id not in self.listed or offering_id in self.claimed:
            return False
        self.claimed[offering_id] = at
        return True

    def release_purchase(self, offering_id: str) -> None:
        self.claimed.pop(offering_id, None)


@dataclass
class FakeLogs:
    """Log streams by (group, stream): lines as written; a token is the index of the next line to read."""

    streams: dict[tuple[str, str], list[LogEvent]] = field(default_factory=dict)
    reads: list[tuple[str, str, str | None]] = field(default_factory=list)

    def write(self, group: str, stream: str, *messages: str) -> None:
        lines = self.streams.setdefault((group, stream), [])
        lines.extend(LogEvent(at=now_iso(), message=message) for message in messages)

    def read(self, log_group: str, log_stream: str, next_token: str | None) -> LogPage:
        self.reads.append((log_group, log_stream, next_token))
        lines = self.streams.get((log_group, log_stream))
        if lines is None:
            return LogPage(next_token=next_token)
        start = int(next_token or 0)
        return LogPage(events=lines[start:], next_token=str(len(lines)))


@dataclass
class FakeMetrics:
    added: list[tuple[MetricName, float, str]] = field(default_factory=list)
    by_pool: dict[tuple[MetricName, str], float] = field(default_factory=dict)

    def add(self, name: MetricName, value: float, unit: str = "Count") -> None:
        self.added.append((name, value, unit))

    def total(self, name: MetricName) -> float:
        return sum(value for metric, value, _ in self.added if metric == name)

    def add_for_pool(self, name: MetricName, pool: str, value: float) -> None:
        self.by_pool[(name, pool)] = self.by_pool.get((name, pool), 0) + value


class Unreachable:
    """Any port of a region AWS will not answer for: every call raises the SDK's error, as botocore would for a region
    not enabled for the account (or a stack not deployed there, or a grant missing)."""

    def __init__(self, code: str = "UnrecognizedClientException", message: str = "The security token included in "
                 "the request is invalid.") -> None:  # fmt: skip
        self.error = ClientError({"Error": {"Code": code, "Message": message}}, "DescribeComputeEnvironments")

    def __getattr__(self, name: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise self.error

        return refused


def fake_ports(**overrides: Any) -> Ports:
    """Ports over in-memory fakes; pass any of them (or `settings`) to shape the world."""
    jobs = overrides.get("jobs") or FakeJobStore()
    parts: dict[str, Any] = {
        "settings": Settings(
            table_name="jobs",
            subnets=["subnet-a", "subnet-b"],
            security_groups=["sg-1"],
            instance_profile_arn="arn:aws:iam::123456789012:instance-profile/gpu",
            launch_template_name="gpupilot-gpu",
            job_role_arn="arn:aws:iam::123456789012:role/gpupilot-job-default",
            job_execution_role_arn="arn:aws:iam::123456789012:role/gpupilot-job-execution",
            job_role_pattern="arn:aws:iam::123456789012:role/gpupilot-job-*",
            secret_arn_patterns=[
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:gpupilot/*",
                "arn:aws:ssm:us-east-1:123456789012:parameter/gpupilot/*",
            ],
        ),
        "jobs": jobs,
        "offerings": FakeOfferingMemory(),
        "health": FakeHealthStore(),
        "pool_states": FakePoolStates(),
        "waste": FakeWasteLedger(),
        "hosts": FakeHostLedger(),
        "batch": FakeBatch(),
        "pools": FakePools(),
        "fleet": FakeFleet(),
        "quotas": FakeQuotas(),
        "catalog": FakeCatalog(),
        "availability": FakeAvailability(),
        "prices": FakePrices(),
        "workflow": FakeWorkflow(),
        "sweeps": FakeSweeps(),
        "metrics": FakeMetrics(),
        "reservations": FakeReservations(),
        "listed_offerings": FakeListedOfferings(),
        "logs": FakeLogs(),
        "budgets": jobs.budgets or FakeBudgets(jobs),
        "audit": FakeAuditLog(),
        "caps": FakeGpuCaps(),
    }
    return Ports(**(parts | overrides))


# What a capacity region's ports share with the home region's: the table's stores, the workflow (each region sells its
# own GPU types: its own catalog).
SHARED_PORTS = ("jobs", "offerings", "health", "waste", "hosts", "listed_offerings", "workflow", "sweeps",
                "metrics", "budgets", "audit")  # fmt: skip


def with_regions(home: Ports, regions: dict[str, dict[str, Any]]) -> Ports:
    """`home` deployed with capacity regions: `in_region(name)` answers fake ports of that region (its own Batch,
    pools, fleet, zones, prices and quotas, from `regions[name]`'s overrides; the home region's stores)."""
    settings = home.settings.model_copy(update={"capacity_regions": list(regions)})
    linked: dict[str, Ports] = {}
    deployed = dataclasses.replace(home, settings=settings, regional=linked)
    for region, parts in regions.items():
        network = RegionNetwork(
            subnets=[f"subnet-{region}-a", f"subnet-{region}-b"],
            security_groups=[f"sg-{region}"],
            instance_profile_arn=f"arn:aws:iam::123456789012:instance-profile/gpu-{region}",
            launch_template_name=settings.launch_template_name,
        )
        own: dict[str, Any] = {
            "settings": settings.in_region(region, network),
            "availability": FakeAvailability(zones=[f"{region}a", f"{region}b"]),
            "pools": FakePools(),
            "batch": FakeBatch(),
            "fleet": FakeFleet(),
            "quotas": FakeQuotas(),
            "prices": FakePrices(),
            "pool_states": FakePoolStates(),
            "catalog": FakeCatalog(),
        }
        shared = {name: getattr(home, name) for name in SHARED_PORTS}
        linked[region] = fake_ports(**(own | shared | parts), regional=linked | {settings.region: deployed})
    for view in linked.values():
        view.regional[settings.region] = deployed  # type: ignore[index]
    return deployed
