"""AWS Batch's compute environments and job queues: their lifecycle, deletions and limits, as AWS has them.

3. Batch compute environments: moto reports every compute environment VALID at once and requires a
   serviceRole. Here one is CREATING for `create_seconds` after CreateComputeEnvironment (or as long as the world
   says for its types), then VALID, or INVALID with the world's statusReason; without a serviceRole Batch's
   service-linked role is used.

4. Batch job queues: AWS refuses CreateJobQueue while a compute environment it orders is not VALID;
   moto accepts it. Here it is refused as AWS refuses it.

12. Batch deletions and limits: moto deletes a job queue or a compute environment in any state, at once, and
   creates any number of them. AWS deletes a queue only once it is DISABLED ("You must first disable
   submissions for a queue with the UpdateJobQueue operation": DeleteJobQueue), a compute environment only
   once it is DISABLED and no queue orders it (DeleteComputeEnvironment), and allows 50 compute environments
   and 50 job queues per region, a limit that cannot be raised (AWS Batch User Guide, service quotas). Here
   each is refused as AWS refuses it. And a deletion takes time in AWS: what was deleted is described DELETING
   (a queue being deleted still orders its compute environment), then DELETED for a while, then no more
   (DescribeComputeEnvironments and DescribeJobQueues: status CREATING | UPDATING | DELETING | DELETED | VALID |
   INVALID); its name stays taken until then (a create under it is refused, "Object already exists"). Here
   `delete_seconds` and `deleted_seconds` of the lifecycle say how long each lasts (0: at once, as moto).

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

SERVICE_LINKED_ROLE_PATH = "/aws-service-role/batch.amazonaws.com/"
NOT_VALID_MESSAGE = (
    "computeEnvironmentOrder: compute environment {arn} is {status}; a job queue can only be associated with "
    "compute environments that are VALID"
)
DELETING, DELETED, GONE = "DELETING", "DELETED", "GONE"


@dataclass
class ComputeEnvironmentLifecycle:
    """When each compute environment was created, and what the world makes of it; when each compute environment
    or job queue was deleted: DELETING for `delete_seconds`, then DELETED (still described) for `deleted_seconds`,
    then gone."""

    create_seconds: float = 1.0
    invalid_reason: Callable[[list[str]], str | None] = field(default=lambda _types: None)
    # Another region's world (its compute environments' ARNs name it): region -> its invalid_reason.
    invalid_reason_in: dict[str, Callable[[list[str]], str | None]] = field(default_factory=dict)
    # How long the world keeps a compute environment of these types CREATING (None: create_seconds); by region too.
    creating_seconds: Callable[[list[str]], float | None] = field(default=lambda _types: None)
    creating_seconds_in: dict[str, Callable[[list[str]], float | None]] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    delete_seconds: float = 0.0
    deleted_seconds: float = 0.0
    _created: dict[str, float] = field(default_factory=dict)
    _deleted: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def created(self, arn: str) -> None:
        with self._lock:
            self._created[arn] = self.clock()

    def deleted(self, arn: str) -> None:
        """Its deletion starts now (a second DeleteX does not restart it)."""
        with self._lock:
            self._deleted.setdefault(arn, self.clock())

    def deletion(self, arn: str) -> str | None:
        """Where its deletion stands now: DELETING, DELETED (still described), GONE, or None (not deleted)."""
        with self._lock:
            deleted = self._deleted.get(arn)
        if deleted is None:
            return None
        age = self.clock() - deleted
        if age < self.delete_seconds:
            return DELETING
        return DELETED if age < self.delete_seconds + self.deleted_seconds else GONE

    def forget(self, arn: str) -> None:
        with self._lock:
            self._deleted.pop(arn, None)
            self._created.pop(arn, None)

    def status(self, arn: str, instance_types: list[str]) -> tuple[str, str]:
        """(status, statusReason) of the compute environment now."""
        if self.deletion(arn) is not None:
            return DELETING, "Compute environment is being deleted"
        with self._lock:
            created = self._created.get(arn)
        region = arn.split(":")[3] if arn.count(":") >= 5 else ""
        creating = self.creating_seconds_in.get(region, self.creating_seconds)(instance_types)
        if created is not None and self.clock() - created < (self.create_seconds if creating is None else creating):
            return "CREATING", "Compute environment is being created"
        reason = self.invalid_reason_in.get(region, self.invalid_reason)(instance_types)
        if reason:
            return "INVALID", reason
        return "VALID", "ComputeEnvironment Healthy"


def compute_environment_lifecycle(patches: Patches, lifecycle: ComputeEnvironmentLifecycle) -> None:
    """3. and 4. Compute environments pass through CREATING; queues are refused on non-VALID ones."""
    from moto.batch.exceptions import ClientException
    from moto.batch.models import BatchBackend

    original_create = BatchBackend.create_compute_environment
    original_describe = BatchBackend.describe_compute_environments
    original_queue = BatchBackend.create_job_queue

    def create(
        self: Any,
        compute_environment_name: str,
        _type: str,
        state: str,
        compute_resources: dict[str, Any],
        service_role: str | None,
        tags: dict[str, str] | None = None,
    ) -> Any:
        if not service_role:
            service_role = _service_linked_role(self)
        environment = original_create(
            self, compute_environment_name, _type, state, compute_resources, service_role, tags=tags
        )
        lifecycle.created(environment.arn)
        return environment

    def describe(self: Any, environments: list[str] | None = None) -> list[dict[str, Any]]:
        described = original_describe(self, environments)
        for entry in described:
            types = (entry.get("computeResources") or {}).get("instanceTypes") or []
            entry["status"], entry["statusReason"] = lifecycle.status(entry["computeEnvironmentArn"], types)
        return described

    def create_queue(
        self: Any,
        queue_name: str,
        priority: str,
        schedule_policy: str | None,
        state: str,
        compute_env_order: list[dict[str, str]],
        tags: dict[str, str] | None = None,
    ) -> Any:
        for item in compute_env_order or []:
            environment = self.get_compute_environment(item.get("computeEnvironment", ""))
            if environment is None:
                continue  # moto's own check says it does not exist
            status, _ = lifecycle.status(
                environment.arn, (environment.compute_resources or {}).get("instanceTypes") or []
            )
            if status != "VALID":
                raise ClientException(NOT_VALID_MESSAGE.format(arn=environment.arn, status=status))
        return original_queue(self, queue_name, priority, schedule_policy, state, compute_env_order, tags=tags)

    patches.replace(BatchBackend, "create_compute_environment", create)
    patches.replace(BatchBackend, "describe_compute_environments", describe)
    patches.replace(BatchBackend, "create_job_queue", create_queue)


def _service_linked_role(batch: Any) -> str:
    """Batch's service-linked role (created on first use, as AWS does); its ARN."""
    iam = batch.iam_backend
    for role in iam.get_roles():
        if role.path == SERVICE_LINKED_ROLE_PATH:
            return str(role.arn)
    return str(iam.create_service_linked_role("batch.amazonaws.com", "AWS Batch service-linked role", "").arn)


MAX_COMPUTE_ENVIRONMENTS = 50
MAX_JOB_QUEUES = 50
LIMIT_MESSAGE = "{what} limit exceeded: this region has {count} and AWS Batch allows {limit}"
DELETE_ENABLED_QUEUE = "Job queue {arn} must be DISABLED before it can be deleted (UpdateJobQueue state=DISABLED)"
DELETE_ENABLED_ENVIRONMENT = "Compute environment {arn} must be DISABLED before it can be deleted"
DELETE_ORDERED_ENVIRONMENT = "Compute environment {arn} is ordered by job queue {queue}: disassociate it first"
NAME_TAKEN = "Object already exists: {what} {name} is {status}"


def batch_deletions_and_limits(patches: Patches, lifecycle: ComputeEnvironmentLifecycle) -> None:
    """12. Deletions in Batch's order only, taking time (DELETING, then DELETED and still described, their names
    taken until they are gone); at most 50 compute environments and 50 job queues."""
    from moto.batch.exceptions import ClientException
    from moto.batch.models import BatchBackend

    original_create = BatchBackend.create_compute_environment
    original_queue = BatchBackend.create_job_queue
    original_delete_queue = BatchBackend.delete_job_queue
    original_delete_environment = BatchBackend.delete_compute_environment
    original_describe = BatchBackend.describe_compute_environments
    original_describe_queues = BatchBackend.describe_job_queues
    # What Batch deleted and still describes (DELETED), per region and kind: name -> (ARN, its last description).
    shown: dict[tuple[str, str, str], dict[str, tuple[str, dict[str, Any]]]] = {}
    settling = threading.Lock()  # the embedded server answers the functions' calls in several threads

    def deleted(backend: Any, kind: str) -> dict[str, tuple[str, dict[str, Any]]]:
        return shown.setdefault((backend.account_id, backend.region_name, kind), {})

    def settle(backend: Any) -> None:
        """What Batch has finished deleting leaves moto (with its ECS cluster); it is still described, DELETED,
        until Batch forgets it."""
        with settling:
            _settle(backend)

    def _settle(backend: Any) -> None:
        for arn, queue in list(backend._job_queues.items()):
            if lifecycle.deletion(arn) in (DELETED, GONE):
                gone = {"status": DELETED, "statusReason": "Job queue deleted"}
                deleted(backend, "queue")[queue.name] = (arn, queue.describe() | gone)
                original_delete_queue(backend, arn)
        for arn, environment in list(backend._compute_environments.items()):
            if lifecycle.deletion(arn) in (DELETED, GONE):
                [described] = original_describe(backend, [arn])
                gone = {"status": DELETED, "statusReason": "Compute environment deleted"}
                deleted(backend, "environment")[environment.name] = (arn, described | gone)
                original_delete_environment(backend, arn)
        for kind in ("queue", "environment"):
            still = deleted(backend, kind)
            for name, (arn, _) in list(still.items()):
                if lifecycle.deletion(arn) == GONE:
                    del still[name]
                    lifecycle.forget(arn)

    def refuse_taken(existing: Any, still: dict[str, Any], what: str, name: str) -> None:
        """Batch keeps a name while it shows what had it, being deleted or deleted."""
        if name in still:
            raise ClientException(NAME_TAKEN.format(what=what, name=name, status=DELETED))
        if existing is not None and lifecycle.deletion(existing.arn) == DELETING:
            raise ClientException(NAME_TAKEN.format(what=what, name=name, status=DELETING))

    def create(self: Any, compute_environment_name: str, *args: Any, **kwargs: Any) -> Any:
        settle(self)
        existing = self.get_compute_environment(compute_environment_name)
        refuse_taken(existing, deleted(self, "environment"), "compute environment", compute_environment_name)
        count = len(self._compute_environments)
        if count >= MAX_COMPUTE_ENVIRONMENTS and existing is None:
            raise ClientException(
                LIMIT_MESSAGE.format(what="Compute environment", count=count, limit=MAX_COMPUTE_ENVIRONMENTS)
            )
        return original_create(self, compute_environment_name, *args, **kwargs)

    def create_queue(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        settle(self)
        existing = self.get_job_queue(queue_name)
        refuse_taken(existing, deleted(self, "queue"), "job queue", queue_name)
        count = len(self._job_queues)
        if count >= MAX_JOB_QUEUES and existing is None:
            raise ClientException(LIMIT_MESSAGE.format(what="Job queue", count=count, limit=MAX_JOB_QUEUES))
        return original_queue(self, queue_name, *args, **kwargs)

    def delete_queue(self: Any, queue_name: str) -> None:
        settle(self)
        queue = self.get_job_queue(queue_name)
        if queue is None:
            return original_delete_queue(self, queue_name)
        if queue.state != "DISABLED":
            raise ClientException(DELETE_ENABLED_QUEUE.format(arn=queue.arn))
        lifecycle.deleted(queue.arn)
        settle(self)
        return None

    def delete_environment(self: Any, compute_environment_name: str) -> None:
        settle(self)
        environment = self.get_compute_environment(compute_environment_name)
        if environment is None:
            return original_delete_environment(self, compute_environment_name)
        if environment.state != "DISABLED":
            raise ClientException(DELETE_ENABLED_ENVIRONMENT.format(arn=environment.arn))
        # A queue Batch is still deleting still orders it.
        for queue in self._job_queues.values():
            if any(e.arn == environment.arn for e in getattr(queue, "environments", [])):
                raise ClientException(DELETE_ORDERED_ENVIRONMENT.format(arn=environment.arn, queue=queue.name))
        lifecycle.deleted(environment.arn)
        settle(self)
        return None

    def still_shown(backend: Any, kind: str, wanted: list[str] | None) -> list[dict[str, Any]]:
        return [d for name, (arn, d) in deleted(backend, kind).items() if not wanted or {name, arn} & set(wanted)]

    def describe(self: Any, environments: list[str] | None = None) -> list[dict[str, Any]]:
        settle(self)
        return list(original_describe(self, environments)) + still_shown(self, "environment", environments)

    def describe_queues(self: Any, job_queues: list[str] | None = None) -> list[dict[str, Any]]:
        settle(self)
        described = list(original_describe_queues(self, job_queues))
        for queue in described:
            if lifecycle.deletion(queue["jobQueueArn"]) == DELETING:
                queue |= {"status": DELETING, "statusReason": "Job queue is being deleted"}
        return described + still_shown(self, "queue", job_queues)

    patches.replace(BatchBackend, "create_compute_environment", create)
    patches.replace(BatchBackend, "create_job_queue", create_queue)
    patches.replace(BatchBackend, "delete_job_queue", delete_queue)
    patches.replace(BatchBackend, "delete_compute_environment", delete_environment)
    patches.replace(BatchBackend, "describe_compute_environments", describe)
    patches.replace(BatchBackend, "describe_job_queues", describe_queues)
