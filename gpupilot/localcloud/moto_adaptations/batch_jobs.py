"""AWS Batch's jobs and the queues that take them, as AWS has them.

2. Batch jobs: moto's docker-less Batch marks a job SUCCEEDED inside SubmitJob; the job is handed to the
   Batch simulator instead, which moves it through its states as the world says. moto names the job's log
   stream at submit and never creates it; AWS names each attempt's stream when it reaches RUNNING
   (DescribeJobs: "Each container attempt receives a log stream name when they reach the RUNNING status"), and
   the awslogs driver writes the container's output there. Here the stream is named at RUNNING, as the job
   definition's awslogs options say, and since no container runs, the simulator writes what it did to it
   (image, command, host, runtime, exit code), each line marked as simulated.

7. Batch ListJobs: moto returns every job in one answer and ignores maxResults; AWS pages (nextToken),
   so the sweep's paging, and its call count, are exercised here as AWS would make them.

8. Batch SubmitJob: moto takes a job into a DISABLED queue; AWS does not ("new jobs can't be added to the
   queue, but jobs already in the queue can finish": UpdateJobQueue, state). Here it is refused.

9. Batch job queues' jobStateTimeLimitActions: moto drops them; here CreateJobQueue keeps them and
   DescribeJobQueues shows them, so the backstop GPU Pilot sets is visible as on AWS (nothing acts on
   them: their shortest limit, 10 minutes, is longer than any local run).

14. Batch DescribeJobs: moto's job description rebuilds its `container` block without the exit code it
   recorded, and its attempts carry none. AWS gives a finished job's `container.exitCode` and each attempt's
   `container.exitCode` and `statusReason` (DescribeJobs: JobDetail, ContainerDetail, AttemptDetail,
   AttemptContainerDetail). Here the job's exit code is in both, as on AWS.

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches


def hand_jobs_to_simulator(patches: Patches, on_submit: Callable[[Any], None]) -> None:
    """2. A submitted Batch job goes to the simulator instead of SUCCEEDED."""
    from moto.batch_simple.models import BatchSimpleBackend

    def mark_submitted(self: Any, include_start_attempt: bool, job: Any) -> None:
        # No log stream yet: Batch names an attempt's stream when it reaches RUNNING (the simulator does).
        self.backend._jobs[job.job_id] = job
        on_submit(job)

    patches.replace(BatchSimpleBackend, "_mark_job_as_finished", mark_submitted)


LIST_JOBS_DEFAULT_PAGE = 100


def paginated_list_jobs(patches: Patches) -> None:
    """7. ListJobs answers a page of maxResults summaries and a nextToken for the rest."""
    import json

    from moto.batch.responses import BatchResponse

    def listjobs(self: Any) -> str:
        jobs = self.batch_backend.list_jobs(
            job_queue_name=self._get_param("jobQueue"),
            array_job_id=self._get_param("arrayJobId"),
            job_status=self._get_param("jobStatus"),
            filters=self._get_param("filters"),
        )
        size = int(self._get_param("maxResults") or LIST_JOBS_DEFAULT_PAGE)
        start = int(self._get_param("nextToken") or 0)
        page: dict[str, Any] = {"jobSummaryList": [job.describe_short() for job in jobs[start : start + size]]}
        if start + size < len(jobs):
            page["nextToken"] = str(start + size)
        return json.dumps(page)

    patches.replace(BatchResponse, "listjobs", listjobs)


def keep_time_limit_actions(patches: Patches) -> None:
    """9. CreateJobQueue's jobStateTimeLimitActions are kept and described."""
    from moto.batch.models import JobQueue
    from moto.batch.responses import BatchResponse

    original_create = BatchResponse.createjobqueue
    original_describe = JobQueue.describe

    def createjobqueue(self: Any) -> str:
        answer = original_create(self)
        actions = self._get_param("jobStateTimeLimitActions")
        if actions:
            self.batch_backend.get_job_queue(self._get_param("jobQueueName")).time_limit_actions = actions
        return answer

    def describe(self: Any) -> dict[str, Any]:
        described = original_describe(self)
        actions = getattr(self, "time_limit_actions", None)
        return described | ({"jobStateTimeLimitActions": actions} if actions else {})

    patches.replace(BatchResponse, "createjobqueue", createjobqueue)
    patches.replace(JobQueue, "describe", describe)


def report_exit_codes(patches: Patches) -> None:
    """14. A finished job's DescribeJobs carries its exit code (and its last attempt's reason) in `container`, and
    its exit code in its last attempt."""
    from moto.batch.models import Job

    original = Job.describe

    def describe(self: Any) -> dict[str, Any]:
        described = original(self)
        container = described.get("container")
        last_reason = ((self.attempts or [{}])[-1].get("container") or {}).get("reason")
        if self.job_stopped and last_reason and isinstance(container, dict):
            # ContainerDetail.reason: "A short (255 max characters) string to provide additional details about a
            # running or stopped container", the last attempt's.
            described["container"] = container = {**container, "reason": last_reason}
        if self.job_stopped and self.exit_code is not None and isinstance(container, dict):
            described["container"] = {**container, "exitCode": self.exit_code}
            if described.get("attempts"):  # moto's own list: described anew, never changed
                *earlier, last = described["attempts"]
                last = {**last, "container": {**last.get("container", {}), "exitCode": self.exit_code}}
                if self.job_stopped_reason:
                    last.setdefault("statusReason", self.job_stopped_reason)
                described["attempts"] = [*earlier, last]
        return described

    patches.replace(Job, "describe", describe)


DISABLED_QUEUE_MESSAGE = "Job queue {arn} is DISABLED: it does not accept new jobs"


def refuse_disabled_queues(patches: Patches) -> None:
    """8. SubmitJob into a DISABLED queue is a ClientException (the jobs already in it still run)."""
    from moto.batch.exceptions import ClientException
    from moto.batch.models import BatchBackend
    from moto.batch_simple.models import BatchSimpleBackend

    for backend in (BatchBackend, BatchSimpleBackend):
        original = backend.submit_job

        def submit(self: Any, job_name: str, job_def_id: str, job_queue: str, *args: Any,
                   _original: Any = original, **kwargs: Any) -> Any:  # fmt: skip
            queue = self.get_job_queue(job_queue)
            if queue is not None and queue.state == "DISABLED":
                raise ClientException(DISABLED_QUEUE_MESSAGE.format(arn=queue.arn))
            return _original(self, job_name, job_def_id, job_queue, *args, **kwargs)

        patches.replace(backend, "submit_job", submit)
