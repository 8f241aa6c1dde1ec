"""The teams' GPU caps on AWS Batch: each capped team's consumable resource, as Batch counts it.

DescribeConsumableResource answers its totalQuantity and inUseQuantity ("This information may lag by up to 30
seconds", AWS Batch User Guide, "Check how many resources are in-use and available"); ListJobsByConsumableResource
the jobs that need it, filtered by status (AWS Batch API Reference). Both are authorized on the consumable resource
(Service Authorization Reference for AWS Batch: resource type consumable-resource), GPU Pilot's named with its prefix.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.shared.adapters.base import ClientAdapter

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("batch:DescribeConsumableResource", "batch:ListJobsByConsumableResource")


class BatchGpuCaps(ClientAdapter):
    """Implements ports.teams.GpuCaps."""

    service = "batch"

    def usage(self, resource: str) -> tuple[int, int] | None:
        try:
            found = self._aws.describe_consumable_resource(consumableResource=resource)
        except ClientError as error:
            # Batch answers a resource it does not know with ClientException (a 400): no cap to count against.
            if error.response.get("Error", {}).get("Code") == "ClientException":
                return None
            raise
        return int(found.get("inUseQuantity") or 0), int(found.get("totalQuantity") or 0)

    def waiting(self, resource: str) -> list[tuple[str, int]]:
        jobs: list[tuple[str, int]] = []
        kwargs: dict[str, Any] = {
            "consumableResource": resource,
            "filters": [{"name": "JOB_STATUS", "values": ["RUNNABLE"]}],
        }
        while True:
            page = self._aws.list_jobs_by_consumable_resource(**kwargs)
            jobs += [(str(j["jobArn"]).rsplit("/", 1)[-1], int(j.get("createdAt") or 0)) for j in page.get("jobs", [])]
            if not page.get("nextToken"):
                return jobs
            kwargs["nextToken"] = page["nextToken"]
