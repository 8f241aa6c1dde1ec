"""AWS Batch's deletions and limits, as AWS has them.

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
from typing import Any

from gpupilot.localcloud.moto_adaptations.batch_environments import DELETED, DELETING, GONE, ComputeEnvironmentLifecycle
from gpupilot.localcloud.moto_adaptations.patches import Patches

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
