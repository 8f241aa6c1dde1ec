"""AWS Batch's consumable resources (resource-aware scheduling), which moto does not have.

26. Batch consumable resources: CreateConsumableResource, DescribeConsumableResource, ListConsumableResources and
    ListJobsByConsumableResource are served as the AWS Batch API Reference describes them (a name unique in the
    account and region, REPLENISHABLE by default; totalQuantity, inUseQuantity, availableQuantity; a ClientException for
    a resource Batch does not know), RegisterJobDefinition keeps the job definition's consumableResourceProperties,
    which moto drops, and DescribeJobDefinitions answers them. Batch holds a job RUNNABLE until every resource its
    definition names has the units it needs, takes them when it moves to STARTING and gives them back when it ends
    ("Resources are locked once the job moves to STARTING and are then unlocked when the job moves to SUCCEEDED or
    FAILED", AWS Batch User Guide, "Specify the resources needed to run a job"): the fleet simulator does so through
    the book here, across every queue of the region.

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

OPERATIONS = ("createconsumableresource", "describeconsumableresource", "listconsumableresources",
              "listjobsbyconsumableresource")  # fmt: skip


@dataclass
class Resource:
    name: str
    arn: str
    total: int
    kind: str
    created_ms: int
    held: int = 0


class ConsumableBook:
    """The account's consumable resources, by region and name, and the units the running jobs hold of each."""

    def __init__(self) -> None:
        self._resources: dict[tuple[str, str], Resource] = {}
        self._lock = threading.Lock()

    def create(self, region: str, account: str, name: str, total: int, kind: str = "REPLENISHABLE") -> Resource:
        from moto.batch.exceptions import ClientException

        with self._lock:
            if (region, name) in self._resources:
                raise ClientException(f"Consumable resource {name} already exists")
            arn = f"arn:aws:batch:{region}:{account}:consumable-resource/{name}"
            made = Resource(name, arn, int(total), kind, int(time.time() * 1000))
            self._resources[(region, name)] = made
            return made

    def find(self, region: str, name_or_arn: str) -> Resource:
        from moto.batch.exceptions import ClientException

        name = name_or_arn.rsplit("/", 1)[-1]
        with self._lock:
            found = self._resources.get((region, name))
        if found is None:
            raise ClientException(f"Consumable resource {name_or_arn} does not exist")
        return found

    def names(self, region: str) -> list[Resource]:
        with self._lock:
            return [r for (where, _), r in sorted(self._resources.items()) if where == region]

    def has_room(self, region: str, needs: list[tuple[str, int]]) -> bool:
        """Whether every resource the job needs has its units free now."""
        with self._lock:
            held = [(self._resources.get((region, name)), quantity) for name, quantity in needs]
            return all(r is not None and r.held + quantity <= r.total for r, quantity in held)

    def take(self, region: str, needs: list[tuple[str, int]]) -> bool:
        """Take every unit the job needs, or none: whether it may start."""
        with self._lock:
            held = [self._resources.get((region, name)) for name, _ in needs]
            if any(r is None or r.held + quantity > r.total for r, (_, quantity) in zip(held, needs, strict=True)):
                return False
            for resource, (_, quantity) in zip(held, needs, strict=True):
                assert resource is not None
                resource.held += quantity
            return True

    def give_back(self, region: str, needs: list[tuple[str, int]]) -> None:
        with self._lock:
            for name, quantity in needs:
                resource = self._resources.get((region, name))
                if resource is not None:
                    resource.held = max(0, resource.held - quantity)


def needs_of(job_definition: Any) -> list[tuple[str, int]]:
    """The consumable resources a job definition names, by name, and the units of each."""
    properties = getattr(job_definition, "consumable_resource_properties", None) or {}
    return [
        (str(entry["consumableResource"]).rsplit("/", 1)[-1], int(entry.get("quantity") or 1))
        for entry in properties.get("consumableResourceList") or []
    ]


def _described(resource: Resource) -> dict[str, Any]:
    return {
        "consumableResourceName": resource.name,
        "consumableResourceArn": resource.arn,
        "totalQuantity": resource.total,
        "inUseQuantity": resource.held,
        "availableQuantity": max(0, resource.total - resource.held),
        "resourceType": resource.kind,
        "createdAt": resource.created_ms,
        "tags": {},
    }


def consumable_resources(patches: Patches, book: ConsumableBook) -> None:
    """26. Batch's consumable resources, and job definitions that name them."""
    from moto.batch import urls
    from moto.batch.responses import BatchResponse

    added = {"{0}/v1/" + operation + "$": BatchResponse.dispatch for operation in OPERATIONS}
    urls.url_paths.update(added)

    def forget_paths() -> None:
        for key in added:
            urls.url_paths.pop(key, None)

    patches.on_exit(forget_paths)

    def create(self: Any) -> str:
        kind = self._get_param("resourceType") or "REPLENISHABLE"
        name, total = self._get_param("consumableResourceName"), self._get_param("totalQuantity") or 0
        made = book.create(self.region, self.current_account, name, total, kind)
        return json.dumps({"consumableResourceName": made.name, "consumableResourceArn": made.arn})

    def describe(self: Any) -> str:
        return json.dumps(_described(book.find(self.region, self._get_param("consumableResource"))))

    def listed(self: Any) -> str:
        return json.dumps({"consumableResources": [_described(r) for r in book.names(self.region)]})

    def jobs_of(self: Any) -> str:
        resource = book.find(self.region, self._get_param("consumableResource"))
        wanted = {v for f in self._get_param("filters") or [] if f.get("name") == "JOB_STATUS" for v in f["values"]}
        jobs = []
        for job in list(self.batch_backend._jobs.values()):
            quantity = dict(needs_of(job.job_definition)).get(resource.name)
            if quantity is None or (wanted and job.status not in wanted):
                continue
            jobs.append({
                "jobArn": job.arn, "jobQueueArn": job.job_queue.arn, "jobName": job.job_name,
                "jobDefinitionArn": job.job_definition.arn, "jobStatus": job.status, "quantity": quantity,
                "createdAt": int(job.job_created_at.timestamp() * 1000),
                "consumableResourceProperties": job.job_definition.consumable_resource_properties,
            })  # fmt: skip
        return json.dumps({"jobs": sorted(jobs, key=lambda j: j["createdAt"])})

    for name, method in zip(OPERATIONS, (create, describe, listed, jobs_of), strict=True):
        patches.replace(BatchResponse, name, method) if hasattr(BatchResponse, name) else _add(patches, name, method)

    original = BatchResponse.registerjobdefinition

    def register(self: Any) -> str:
        properties = self._get_param("consumableResourceProperties")
        for entry in (properties or {}).get("consumableResourceList") or []:
            book.find(self.region, str(entry["consumableResource"]))  # Batch refuses a resource it does not know
        answer = original(self)
        if properties:
            definition = self.batch_backend.get_job_definition_by_arn(json.loads(answer)["jobDefinitionArn"])
            definition.consumable_resource_properties = properties
        return str(answer)

    patches.replace(BatchResponse, "registerjobdefinition", register)

    from moto.batch.models import JobDefinition

    described = JobDefinition.describe

    def describe_definition(self: Any) -> dict[str, Any]:
        answer = dict(described(self))
        properties = getattr(self, "consumable_resource_properties", None)
        if properties:
            answer["consumableResourceProperties"] = properties
        return answer

    patches.replace(JobDefinition, "describe", describe_definition)


def _add(patches: Patches, name: str, method: Any) -> None:
    from moto.batch.responses import BatchResponse

    setattr(BatchResponse, name, method)
    patches.on_exit(lambda: delattr(BatchResponse, name))
