"""AWS Batch's compute environments and job queues: their lifecycle, as AWS has it (their deletions and limits:
batch_deletions.py).

3. Batch compute environments: moto reports every compute environment VALID at once and requires a
   serviceRole. Here one is CREATING for `create_seconds` after CreateComputeEnvironment (or as long as the world
   says for its types), then VALID, or INVALID with the world's statusReason; without a serviceRole Batch's
   service-linked role is used.

4. Batch job queues: AWS refuses CreateJobQueue while a compute environment it orders is not VALID;
   moto accepts it. Here it is refused as AWS refuses it.

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
