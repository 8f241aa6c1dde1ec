"""AWS Batch's fair-share job queues, where moto keeps the policy but not what it asks of a job.

28. Batch fair-share queues: moto keeps a queue's schedulingPolicyArn but takes any SubmitJob and drops its
    shareIdentifier. AWS refuses a job without a share identifier in a queue with a scheduling policy, and one with a
    share identifier in a FIFO queue (AWS Batch API Reference, "SubmitJob", shareIdentifier: "If the job queue has a
    fair-share scheduling policy, then shareIdentifier must be specified ... If the job queue doesn't have a
    fair-share scheduling policy, then shareIdentifier can't be specified"), and a queue whose policy does not exist
    (CreateJobQueue). Here each is a ClientException, the job keeps its shareIdentifier (DescribeJobs answers it),
    and the fleet simulator starts a fair-share queue's jobs by share (gpupilot/localcloud/fleet/placement.py).

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

import json
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

NO_SHARE_MESSAGE = "Job queue {arn} has a fair-share scheduling policy: a job submitted to it needs a shareIdentifier"
FIFO_SHARE_MESSAGE = "Job queue {arn} is first in, first out (no scheduling policy): it takes no shareIdentifier"
UNKNOWN_POLICY_MESSAGE = "Scheduling policy {arn} does not exist"


def fair_share_queues(patches: Patches) -> None:
    """28. SubmitJob's shareIdentifier is required by a fair-share queue, refused by a FIFO one, and kept."""
    from moto.batch.exceptions import ClientException
    from moto.batch.models import Job
    from moto.batch.responses import BatchResponse

    original_submit = BatchResponse.submitjob
    original_create = BatchResponse.createjobqueue
    original_describe = Job.describe

    def submitjob(self: Any) -> str:
        share = self._get_param("shareIdentifier")
        queue = self.batch_backend.get_job_queue(self._get_param("jobQueue"))
        if queue is not None and queue.schedule_policy and not share:
            raise ClientException(NO_SHARE_MESSAGE.format(arn=queue.arn))
        if queue is not None and not queue.schedule_policy and share:
            raise ClientException(FIFO_SHARE_MESSAGE.format(arn=queue.arn))
        answer = original_submit(self)
        if share:
            job = self.batch_backend.get_job_by_id(json.loads(answer)["jobId"])
            if job is not None:
                job.share_identifier = share
        return answer

    def createjobqueue(self: Any) -> str:
        policy = self._get_param("schedulingPolicyArn")
        if policy and not self.batch_backend.describe_scheduling_policies([policy]):
            raise ClientException(UNKNOWN_POLICY_MESSAGE.format(arn=policy))
        return original_create(self)

    def describe(self: Any) -> dict[str, Any]:
        described = original_describe(self)
        share = getattr(self, "share_identifier", None)
        return described | ({"shareIdentifier": share} if share else {})

    patches.replace(BatchResponse, "submitjob", submitjob)
    patches.replace(BatchResponse, "createjobqueue", createjobqueue)
    patches.replace(Job, "describe", describe)


def share_of_job(job: Any) -> str | None:
    """The shareIdentifier a job was submitted with (None: a FIFO queue's job)."""
    return getattr(job, "share_identifier", None)


def policy_of_queue(batch: Any, queue: Any) -> dict[str, Any] | None:
    """The `fairsharePolicy` of a queue's scheduling policy (None: a FIFO queue, or a policy since deleted)."""
    arn = getattr(queue, "schedule_policy", None)
    if not arn:
        return None
    found = batch.describe_scheduling_policies([arn])
    return dict(found[0].fairshare_policy or {}) if found else None
