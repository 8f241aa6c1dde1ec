"""POST /jobs: check the request against this deployment, record the job, start its workflow."""

from __future__ import annotations

import fnmatch
import hashlib
import uuid
from collections.abc import Iterator

from functions.shared import constants as c
from functions.shared.domain.core.clock import now_iso, seconds_between
from functions.shared.domain.core.errors import JobAlreadyExists, RequestRefused
from functions.shared.domain.core.settings import Settings
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.jobs.definitions import batch_attempts
from functions.shared.domain.jobs.records import JobRecord, Ownership
from functions.shared.domain.jobs.steps import ExecutionInput, Timeouts
from functions.shared.domain.jobs.views import SubmitResponse
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.teams.identity import Caller
from functions.shared.domain.teams.shares import share_of
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import MAX_WORKFLOW_CANDIDATES, check_plannable
from functions.shared.usecases.teams.budgets import create_owned, ownership, settle

# Batch may run an attempt several times (job_definitions.batch_attempts), each up to its timeout after an image pull.
FINISH_GRACE_SECONDS = 600
# The job ids a keyed submit tries: the next one only after a submit under the previous failed before its workflow
# started (or the key's window passed); past the last, a random id.
KEYED_ID_GENERATIONS = 8


def new_job_id() -> str:
    return uuid.uuid4().hex[:20]


def check_deployable(request: JobRequest, settings: Settings) -> None:
    """Refuse what this deployment's IAM would refuse later: secrets its execution role cannot read, a job
    role the submit function may not pass. RequestRefused names the field."""
    for name, arn in request.secrets.items():
        if not any(fnmatch.fnmatchcase(arn, pattern) for pattern in settings.secret_arn_patterns):
            allowed = ", ".join(settings.secret_arn_patterns) or "none are configured"
            raise RequestRefused(
                f"secrets.{name}", f"jobs of this deployment may only reference secrets matching: {allowed}"
            )
    role = request.job_role_arn
    if role is not None and not (settings.job_role_pattern and fnmatch.fnmatchcase(role, settings.job_role_pattern)):
        raise RequestRefused(
            "job_role_arn",
            f"job roles must match {settings.job_role_pattern or '(none configured)'}: GPU Pilot may pass only those",
        )


def _stuck_after_minutes(request: JobRequest) -> float:
    """A job bounded by give_up_after_minutes is diagnosed by then at the latest."""
    if request.give_up_after_minutes is None:
        return request.stuck_after_minutes
    return min(request.stuck_after_minutes, request.give_up_after_minutes)


def execution_input(
    job_id: str, request: JobRequest, settings: Settings, owned: Ownership | None = None
) -> ExecutionInput:
    return ExecutionInput(
        job_id=job_id,
        request=request,
        budgeted=bool(owned and owned.commitment),
        team_gpus=owned.team_gpus if owned else None,
        share=share_of(owned.team) if owned and settings.teams_config else None,
        timeouts=Timeouts(
            # A job bounded by give_up_after_minutes is diagnosed by then at the latest.
            stuck_after_seconds=max(
                1, round(min(request.stuck_after_minutes, request.give_up_after_minutes or 1e9) * 60)
            ),
            finish_after_seconds=batch_attempts(request) * (request.timeout_minutes * 60 + FINISH_GRACE_SECONDS),
            queue_poll_seconds=settings.queue_poll_seconds,
            provision_timeout_seconds=settings.provision_timeout_seconds,
        ),
    )


def start_job(
    request: JobRequest, ports: Ports, key: str | None = None, caller: Caller | None = None
) -> SubmitResponse:
    """Check the request could start, record the job (the caller's, committing its worst case against its team's
    budget in the same write: BudgetExceeded when it has no room), then start its workflow (named after the job,
    so it starts once). NoCandidate (nothing recorded or started) when no GPU offering can serve it. With an
    Idempotency-Key `key`, a call that finds the job an earlier call with the same key and body recorded (one whose
    answer was lost) starts that job, if it has not started, and answers it: one job per key, whatever failed."""
    check_deployable(request, ports.settings)
    planned = check_plannable(request, ports)
    owned = ownership(caller, request, planned.candidates[0], ports)
    job_id = None
    for candidate in keyed_job_ids(key, request) if key else [new_job_id()]:
        try:
            create_owned(candidate, request, owned, planned.candidates[0], ports)
        except JobAlreadyExists:
            existing = ports.jobs.get_job(candidate)
            if _same_submit(existing):
                return _started(existing, request, ports, planned.warnings)
            continue
        job_id = candidate
        break
    if job_id is None:
        job_id = new_job_id()
        create_owned(job_id, request, owned, planned.candidates[0], ports)
    try:
        execution_arn = ports.workflow.start_execution(
            job_id, execution_input(job_id, request, ports.settings, owned).model_dump_json()
        )
    except Exception as error:
        failed = f"could not start the workflow: {error}"
        ports.jobs.finish(job_id, JobStatus.FAILED, fields={"error": failed}, reason=failed)
        settle(job_id, ports)
        raise
    ports.jobs.set_execution_arn(job_id, execution_arn)
    tried = planned.candidates[: min(request.max_attempts, MAX_WORKFLOW_CANDIDATES)]
    return SubmitResponse(
        job_id=job_id,
        status=JobStatus.SUBMITTED,
        execution_arn=execution_arn,
        warnings=planned.warnings,
        candidates=tried,
        instance_type=tried[0].instance_type,
        region=tried[0].region,
    )


def keyed_job_ids(key: str, request: JobRequest) -> Iterator[str]:
    """A keyed submit's job ids, in the order it tries them: the same for every call with that key and body."""
    body = request.model_dump_json()
    for generation in range(KEYED_ID_GENERATIONS):
        yield hashlib.sha256(f"{key}\n{generation}\n{body}".encode()).hexdigest()[:20]


def _same_submit(existing: JobRecord) -> bool:
    """Whether a job found under a keyed id is this submit's: recorded within the key's window, and not a submit
    that failed before its workflow started (that one released its key: the retry is a new job)."""
    failed_to_start = existing.status == JobStatus.FAILED and existing.execution_arn is None
    return not failed_to_start and seconds_between(existing.created_at, now_iso()) < c.IDEMPOTENCY_WINDOW_SECONDS


def _started(existing: JobRecord, request: JobRequest, ports: Ports, warnings: list[str]) -> SubmitResponse:
    """The job an earlier call recorded (already submitted), its workflow started now if that call could not
    (StartExecution starts one execution per name: a second call finds the first)."""
    execution_arn = existing.execution_arn
    if execution_arn is None:
        owned = Ownership(team=existing.team, commitment=existing.commitment, team_gpus=existing.team_gpus)
        execution_input_json = execution_input(existing.job_id, request, ports.settings, owned).model_dump_json()
        execution_arn = ports.workflow.start_execution(existing.job_id, execution_input_json)
        ports.jobs.set_execution_arn(existing.job_id, execution_arn)
    return SubmitResponse(
        job_id=existing.job_id,
        status=existing.status,
        execution_arn=execution_arn,
        warnings=warnings,
        already_submitted=True,
    )
