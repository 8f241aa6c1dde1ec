"""AWS Batch: jobs, job definitions, compute environments and job queues.

IAM (Service Authorization Reference for AWS Batch): ListJobs, DescribeJobs, DescribeComputeEnvironments
and DescribeJobQueues have no resource types (grant on `*`); RegisterJobDefinition, SubmitJob,
TerminateJob, Create/Update/DeleteComputeEnvironment and Create/UpdateJobQueue are scoped to the resources they
name (SubmitJob: the job definition and the queue; CreateJobQueue: the queue and its compute
environments), and tags given at creation also need batch:TagResource.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.shared.adapters.base import ClientAdapter
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState, JobQueueState
from functions.shared.domain.pools.specs import generation_of

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = (
    "batch:DescribeJobs",
    "batch:ListJobs",
    "batch:RegisterJobDefinition",
    "batch:SubmitJob",
    "batch:TerminateJob",
    "batch:DescribeComputeEnvironments",
    "batch:DescribeJobQueues",
    "batch:CreateComputeEnvironment",
    "batch:CreateJobQueue",
    # The sweep disables a pool whose instances keep failing to register with ECS; retiring a pool disables
    # its queue, deletes it, then disables and deletes its compute environment.
    "batch:UpdateJobQueue",
    "batch:DeleteJobQueue",
    "batch:UpdateComputeEnvironment",
    "batch:DeleteComputeEnvironment",
    # Checked by AWS without a call of their own: tags given at creation, roles passed to Batch and ECS, and Batch's
    # service-linked role, created with the caller's permission by the first compute environment that needs it.
    "batch:TagResource",
    "iam:PassRole",
    "iam:CreateServiceLinkedRole",
)
# The condition keys that hold these calls to what GPU Pilot needs (the IAM drift check proves each refuses a call
# that presents another value): the only service-linked role the compute environments may create is Batch's.
IAM_CONDITIONS = {"iam:CreateServiceLinkedRole": ("iam:AWSServiceName",)}
LIVE_STATUSES = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING")
DESCRIBE_JOBS_PAGE = 100  # DescribeJobs takes at most 100 job ids
LIST_JOBS_PAGE = 100


def _already_exists(error: ClientError) -> bool:
    return "already exist" in error.response.get("Error", {}).get("Message", "").lower()


def _refused(error: ClientError) -> bool:
    """Batch refused a step in the resource's current state (ClientException): try again later."""
    return error.response.get("Error", {}).get("Code") == "ClientException"


class BatchJobsAdapter(ClientAdapter):
    """Implements ports.BatchJobs."""

    service = "batch"

    def register_job_definition(self, spec: dict[str, Any]) -> str:
        return str(self._aws.register_job_definition(**spec)["jobDefinitionArn"])

    def submit_job(
        self, name: str, job_queue: str, job_definition: str, tags: dict[str, str], share: str | None = None
    ) -> str:
        shared = {"shareIdentifier": share} if share else {}
        response = self._aws.submit_job(
            jobName=name, jobQueue=job_queue, jobDefinition=job_definition, tags=tags, **shared
        )
        return str(response["jobId"])

    def find_job(self, job_queue: str, name: str) -> BatchJobState | None:
        # Every page: Batch pages a filtered listing too (a page may hold none of the matches and still have a
        # nextToken), and JOB_NAME matches case-insensitively, so other jobs may come first; ours has the exact
        # name. With a filter Batch ignores jobStatus and lists jobs of any status, newest first.
        pages = self._aws.get_paginator("list_jobs").paginate(
            jobQueue=job_queue,
            filters=[{"name": "JOB_NAME", "values": [name]}],
            PaginationConfig={"PageSize": LIST_JOBS_PAGE},
        )
        for page in pages:
            for summary in page["jobSummaryList"]:
                if summary.get("jobName") == name:
                    return BatchJobState.from_batch(summary | {"jobQueue": job_queue})
        return None

    def describe_jobs(self, job_ids: list[str]) -> list[BatchJobState]:
        described: list[BatchJobState] = []
        for start in range(0, len(job_ids), DESCRIBE_JOBS_PAGE):
            page = self._aws.describe_jobs(jobs=job_ids[start : start + DESCRIBE_JOBS_PAGE])["jobs"]
            described.extend(BatchJobState.from_batch(job) for job in page)
        return described

    def list_jobs(self, job_queue: str, status: str) -> list[BatchJobState]:
        pages = self._aws.get_paginator("list_jobs").paginate(
            jobQueue=job_queue, jobStatus=status, PaginationConfig={"PageSize": LIST_JOBS_PAGE}
        )
        # A summary does not name its queue: the listing does.
        return [
            BatchJobState.from_batch(summary | {"jobQueue": job_queue})
            for page in pages
            for summary in page["jobSummaryList"]
        ]

    def terminate_job(self, job_id: str, reason: str) -> None:
        self._aws.terminate_job(jobId=job_id, reason=reason)


class BatchPoolsAdapter(ClientAdapter):
    """Implements ports.BatchPools."""

    service = "batch"

    def describe_compute_environment(self, name: str) -> ComputeEnvironmentState | None:
        found = self._aws.describe_compute_environments(computeEnvironments=[name])["computeEnvironments"]
        return ComputeEnvironmentState.from_batch(found[0]) if found else None

    def generations(self, pool: str) -> tuple[list[ComputeEnvironmentState], list[JobQueueState]]:
        # Listed, not described by name: a generation's number is not known before Batch says which exist.
        environments = [
            ComputeEnvironmentState.from_batch(environment)
            for page in self._aws.get_paginator("describe_compute_environments").paginate()
            for environment in page["computeEnvironments"]
            if generation_of(pool, environment["computeEnvironmentName"]) is not None
        ]
        queues = [
            JobQueueState.from_batch(queue)
            for page in self._aws.get_paginator("describe_job_queues").paginate()
            for queue in page["jobQueues"]
            if generation_of(pool, queue["jobQueueName"]) is not None
        ]
        return environments, queues

    def compute_environments(self, prefix: str) -> list[ComputeEnvironmentState]:
        pages = self._aws.get_paginator("describe_compute_environments").paginate()
        return [
            ComputeEnvironmentState.from_batch(environment)
            for page in pages
            for environment in page["computeEnvironments"]
            if environment["computeEnvironmentName"].startswith(prefix + "-")
        ]

    def job_queues(self, prefix: str) -> list[JobQueueState]:
        pages = self._aws.get_paginator("describe_job_queues").paginate()
        return [
            JobQueueState.from_batch(queue)
            for page in pages
            for queue in page["jobQueues"]
            if queue["jobQueueName"].startswith(prefix + "-")
        ]

    def create_compute_environment(self, spec: dict[str, Any]) -> None:
        try:
            self._aws.create_compute_environment(**spec)
        except ClientError as error:
            # Two workflows raced to create the same pool: the loser reuses the winner's.
            if not _already_exists(error):
                raise

    def job_queue(self, name: str) -> JobQueueState | None:
        found = self._aws.describe_job_queues(jobQueues=[name])["jobQueues"]
        return JobQueueState.from_batch(found[0]) if found else None

    def create_job_queue(self, spec: dict[str, Any]) -> None:
        try:
            self._aws.create_job_queue(**spec)
        except ClientError as error:
            if not _already_exists(error):
                raise

    def disable_job_queue(self, name: str) -> None:
        # Batch takes no new job into a DISABLED queue (SubmitJob fails); the jobs in it can still run.
        self._aws.update_job_queue(jobQueue=name, state="DISABLED")

    def counts(self) -> tuple[int, int]:
        environments = sum(
            1
            for page in self._aws.get_paginator("describe_compute_environments").paginate()
            for environment in page["computeEnvironments"]
            if environment.get("status") != "DELETED"
        )
        queues = sum(
            1
            for page in self._aws.get_paginator("describe_job_queues").paginate()
            for queue in page["jobQueues"]
            if queue.get("status") != "DELETED"
        )
        return environments, queues

    def queue_has_jobs(self, name: str) -> bool:
        return any(
            self._aws.list_jobs(jobQueue=name, jobStatus=status, maxResults=1)["jobSummaryList"]
            for status in LIVE_STATUSES
        )

    def delete_job_queue(self, name: str) -> bool:
        # Batch terminates the jobs still in a queue it deletes: callers delete only an empty, DISABLED one.
        return self._step(lambda: self._aws.delete_job_queue(jobQueue=name))

    def disable_compute_environment(self, name: str) -> bool:
        return self._step(lambda: self._aws.update_compute_environment(computeEnvironment=name, state="DISABLED"))

    def delete_compute_environment(self, name: str) -> bool:
        # Batch deletes only a DISABLED compute environment that no job queue orders.
        return self._step(lambda: self._aws.delete_compute_environment(computeEnvironment=name))

    @staticmethod
    def _step(call: Any) -> bool:
        try:
            call()
        except ClientError as error:
            if not _refused(error):
                raise
            return False
        return True
