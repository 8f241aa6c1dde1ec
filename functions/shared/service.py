"""Use cases: what each handler does, wiring the pure domain to the AWS adapters."""

from __future__ import annotations

import json
import uuid
from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer

from functions.shared import availability, constants, sweep
from functions.shared.batch_jobs import RETRY_ATTEMPTS, BatchSubmitter, SubmittedJob
from functions.shared.catalog import Catalog
from functions.shared.clients import client
from functions.shared.config import settings
from functions.shared.diagnosis import StuckJobSnapshot, diagnose, remedy
from functions.shared.lifecycle import (
    BATCH_STARTED,
    billed_seconds,
    iso_from_millis,
    job_status_for_batch,
    normalize_iso,
    now_iso,
    now_millis,
    parse_batch_job_name,
)
from functions.shared.models import (
    Attempt,
    Cost,
    CostReport,
    DailyCost,
    DiagnosisCategory,
    HealthReport,
    JobList,
    JobRequest,
    JobStatus,
    JobView,
    Plan,
    SubmitResponse,
    TimelineEntry,
)
from functions.shared.observability import logger, metrics
from functions.shared.pricing import PriceUnknown, attempt_cost, on_demand_price
from functions.shared.provisioning import BatchPools, QueueStatus, pool_for
from functions.shared.selection import WORKFLOW_CANDIDATES, offering_key, plan, within_filters
from functions.shared.store import JobNotFound, JobStore
from functions.shared.waits import send_ready
from functions.shared.workflow import (
    DiagnoseInput,
    DiagnoseOutput,
    EnsureQueueInput,
    NoGpuTypeAvailable,
    RecordCostInput,
    RecordFailureInput,
    SelectInput,
    Selection,
    SubmitInput,
    WaitInput,
)

UNAVAILABLE_TTL_SECONDS = 1800
FINISH_GRACE_SECONDS = 600


class JobAlreadyFinished(Exception):
    """The job has ended; it cannot be cancelled."""


def store() -> JobStore:
    return JobStore(client("dynamodb"), settings().table_name)


@cache
def catalog() -> Catalog:
    return Catalog(client("ec2"))


def new_job_id() -> str:
    return uuid.uuid4().hex[:20]


# -- planning ---------------------------------------------------------------------------------
def plan_request(request: JobRequest) -> tuple[Plan, str]:
    """Rank every GPU offering for `request` against live availability; also say the catalog source."""
    gpu_types = catalog().gpu_types()
    snapshot = availability.snapshot(
        client("ec2"), settings().subnets, sorted(gpu_types), store().unavailable_offerings()
    )
    ranked = plan(request, gpu_types, snapshot, on_demand_price, arm64_ami=bool(settings().arm64_gpu_ami_id))
    return ranked, catalog().source


def select_gpu_type(payload: SelectInput) -> Selection:
    """SelectGpuType: the ranked offerings the workflow will try in order."""
    store().advance(payload.job_id, JobStatus.SELECTING, attempt=0)
    ranked, source = plan_request(payload.request)
    if not ranked.candidates:
        # Types the request's own filters left out say least about why nothing fits: show the others first.
        gpu_types = catalog().gpu_types()
        telling = sorted(
            ranked.rejected,
            key=lambda r: (
                r.instance_type not in gpu_types or not within_filters(payload.request, gpu_types[r.instance_type])
            ),
        )
        reasons = "; ".join(f"{r.instance_type}: {r.reason}" for r in telling[:5])
        raise NoGpuTypeAvailable(f"no GPU instance type fits the request ({reasons})")
    return Selection(candidates=ranked.candidates[:WORKFLOW_CANDIDATES], index=0, catalog=source)


# -- provisioning -----------------------------------------------------------------------------
def ensure_job_queue(payload: EnsureQueueInput) -> QueueStatus:
    """EnsureJobQueue: create or reuse the pool for the current candidate."""
    candidate = payload.selection.current()
    pool = pool_for(candidate, payload.request.arch, settings().resource_prefix)
    previous = payload.previous or {}
    checks = int(previous.get("checks", 0)) if previous.get("compute_environment") == pool.name else 0
    store().advance(
        payload.job_id,
        JobStatus.PROVISIONING,
        attempt=payload.selection.attempt,
        fields={"instance_type": candidate.instance_type, "gpu_model": candidate.gpu_model},
    )
    return BatchPools(client("batch"), settings()).ensure(pool, checks=checks)


def submit_batch_job(payload: SubmitInput) -> SubmittedJob:
    """SubmitBatchJob: one attempt per candidate; a retried call returns the attempt already made.

    The attempt is recorded before the Batch job exists, so an event that outruns this Lambda
    still finds its attempt (events find attempts by the Batch job's name alone).
    """
    candidate = payload.selection.current()
    attempt = payload.selection.attempt
    jobs = store()
    reserved = jobs.put_attempt(
        payload.job_id,
        attempt,
        {
            "instance_type": candidate.instance_type,
            "gpu_model": candidate.gpu_model,
            "instance_gpus": candidate.gpus,
            "capacity": candidate.capacity,
            "zones": candidate.zones,
            "job_queue": payload.queue.job_queue,
            "status": "SUBMITTED",
            "submitted_at": now_iso(),
        },
    )
    if reserved.get("batch_job_id"):
        return SubmittedJob(
            batch_job_id=reserved["batch_job_id"],
            job_queue=reserved["job_queue"],
            job_definition=reserved["job_definition"],
            attempt=attempt,
            instance_type=reserved["instance_type"],
            capacity=reserved["capacity"],
        )
    submitter = BatchSubmitter(client("batch"))
    # A retry after a submit whose record write failed finds the Batch job by its name: never two.
    submitted = submitter.find(payload.job_id, attempt, payload.queue.job_queue, candidate) or submitter.submit(
        payload.job_id, attempt, payload.request, candidate, payload.queue.job_queue
    )
    jobs.update_attempt(
        payload.job_id,
        attempt,
        {"batch_job_id": submitted.batch_job_id, "job_definition": submitted.job_definition},
    )
    if JobStatus(jobs.get_job(payload.job_id)["status"]).finished:
        # Cancelled while we were submitting: the cancel may not have seen this Batch job.
        client("batch").terminate_job(jobId=submitted.batch_job_id, reason="cancelled by request")
        raise JobAlreadyFinished(payload.job_id)
    jobs.advance(payload.job_id, JobStatus.RUNNABLE, attempt=attempt)
    return submitted


# -- waiting ----------------------------------------------------------------------------------
def park_wait(payload: WaitInput) -> list[str]:
    """WaitForJobToStart/ToFinish: store the token, then resume at once if the event came first."""
    jobs = store()
    return _resume(jobs, jobs.store_wait(payload.job_id, payload.phase, payload.attempt, payload.task_token))


def handle_batch_event(event: dict[str, Any]) -> dict[str, Any]:
    """job_events: record a Batch job state change on its attempt, timeline, and resume waits."""
    detail = event.get("detail") or {}
    parsed = parse_batch_job_name(detail.get("jobName", ""))
    if parsed is None:
        return {"ignored": "not a GPU Pilot job"}
    job_id, attempt = parsed
    batch_status = detail.get("status")
    if batch_status not in ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED"):
        return {"ignored": f"unknown status {batch_status!r}"}
    at = normalize_iso(event["time"]) if event.get("time") else now_iso()
    started_at = detail.get("startedAt")
    stopped_at = detail.get("stoppedAt")
    exit_code = (detail.get("container") or {}).get("exitCode")
    runtime = billed_seconds(detail)
    jobs = store()
    record = jobs.update_attempt(
        job_id,
        attempt,
        {
            "batch_status": batch_status,
            "batch_status_at": at,
            "status": batch_status,
            "status_reason": detail.get("statusReason"),
            "started_at": started_at,
            "stopped_at": stopped_at,
            "exit_code": exit_code,
            "runtime_seconds": runtime,
        },
        # A submit whose record write failed still gets its Batch job id, so it can be terminated.
        if_missing={"batch_job_id": detail.get("jobId")},
    )
    if record is None:
        # Stale or duplicate (EventBridge is at-least-once, and the sweep replays): nothing new to record,
        # but a redelivery after a failed write or SendTaskSuccess must still finish that work.
        try:
            record = jobs.get_job(job_id)
        except JobNotFound:
            return {"ignored": "not a job of this deployment", "job_id": job_id}
        recorded = (record.get("attempts") or {}).get(str(attempt)) or {}
        _advance_for_batch(jobs, job_id, attempt, recorded.get("batch_status"), recorded.get("batch_status_at") or at)
        return {"ignored": "stale or duplicate event", "job_id": job_id, "resumed": _resume(jobs, record)}
    moment = iso_from_millis(started_at) if batch_status == "RUNNING" and started_at else at
    _advance_for_batch(jobs, job_id, attempt, batch_status, moment)
    resumed = _resume(jobs, record)
    return {"job_id": job_id, "attempt": attempt, "status": batch_status, "resumed": resumed}


def _advance_for_batch(jobs: JobStore, job_id: str, attempt: int, batch_status: str | None, at: str) -> None:
    """Move the job to what its attempt's Batch status stands for (a no-op if it is there already).

    Final statuses are the workflow's to record (RecordCost/RecordFailure), with the cost.
    """
    if batch_status is None:
        return
    job_status = job_status_for_batch(batch_status)
    if not job_status.finished:
        jobs.advance(job_id, job_status, attempt=attempt, at=at)


def _resume(jobs: JobStore, record: dict[str, Any]) -> list[str]:
    """Send every satisfied wait's token, then forget the tokens that are spent (ours or already)."""
    resumed, spent = send_ready(client("stepfunctions"), record)
    for phase in resumed + spent:
        jobs.clear_wait(record["job_id"], phase, record["waits"][phase]["token"])
    return resumed


# -- diagnosis --------------------------------------------------------------------------------
def diagnose_stuck_job(payload: DiagnoseInput) -> DiagnoseOutput:
    """DiagnoseStuckJob: say why the attempt is still waiting; on a capacity cause, cancel and fall back."""
    batch = client("batch")
    described = batch.describe_jobs(jobs=[payload.batch_job.batch_job_id])["jobs"]
    job: dict[str, Any] = described[0] if described else {"status": "UNKNOWN"}
    environments = batch.describe_compute_environments(computeEnvironments=[payload.queue.compute_environment])
    environment = (environments.get("computeEnvironments") or [{}])[0]
    snapshot = StuckJobSnapshot.from_batch(
        {"jobId": payload.batch_job.batch_job_id} | job, environment, payload.queue.compute_environment, now_millis()
    )
    checks_spent = int((payload.previous or {}).get("checks", 0))
    jobs = store()
    attempt_record = (jobs.get_job(payload.job_id).get("attempts") or {}).get(str(payload.batch_job.attempt)) or {}
    if attempt_record.get("fell_back"):
        # A retry of a diagnosis that already cancelled this attempt: answer what it answered.
        return DiagnoseOutput.model_validate(attempt_record["fell_back"])
    if snapshot.status in BATCH_STARTED:
        # Its start event lost the race with the timeout (or never came): record what Batch says, so the
        # wait resumes at once, and spend no check.
        handle_batch_event({"detail-type": "Batch Job State Change", "time": now_iso(), "detail": job})
        return DiagnoseOutput(
            category=DiagnosisCategory.WAITING_FOR_SCALE_UP,
            reason=f"the job is {snapshot.status}: it started as the wait timed out",
            evidence={"batch_job_id": snapshot.batch_job_id, "status": snapshot.status},
            recommendation="None: the workflow waits for it again.",
            action="keep_waiting",
            next_index=payload.selection.index,
            checks=checks_spent,
        )
    diagnosis = diagnose(snapshot)
    action, next_index = remedy(diagnosis, payload.selection.index, len(payload.selection.candidates), checks_spent)
    result = DiagnoseOutput(
        **diagnosis.model_dump(),
        action=action,
        next_index=next_index,
        checks=0 if action == "fall_back" else checks_spent + 1,
    )
    fields: dict[str, Any] = {"diagnosis": diagnosis.model_dump(mode="json")}
    if action == "fall_back":
        # Written before the Batch job is cancelled, so a retried diagnosis repeats this answer.
        fields["fell_back"] = result.model_dump(mode="json")
    jobs.update_attempt(payload.job_id, payload.batch_job.attempt, fields)
    if action == "fall_back":
        candidate = payload.selection.current()
        for zone in candidate.zones:
            jobs.remember_unavailable(
                offering_key(candidate.capacity, candidate.instance_type, zone),
                diagnosis.category.value,
                UNAVAILABLE_TTL_SECONDS,
            )
        batch.terminate_job(
            jobId=payload.batch_job.batch_job_id,
            reason=f"GPU Pilot fell back: {diagnosis.category.value}"[:255],
        )
    metrics.add_metric(name="StuckJobDiagnoses", unit="Count", value=1)
    return result


# -- outcome ----------------------------------------------------------------------------------
def record_cost(payload: RecordCostInput) -> Cost:
    """RecordCost: price the attempt, and record the job's final status with its cost."""
    jobs = store()
    record = jobs.get_job(payload.job_id)
    attempt = (record.get("attempts") or {}).get(str(payload.batch_job.attempt)) or {}
    request = JobRequest.model_validate(record["request"])
    finished = payload.finished
    quote = on_demand_price(payload.batch_job.instance_type)
    if quote is None:
        raise PriceUnknown(f"no hourly price known for {payload.batch_job.instance_type}")
    cost = attempt_cost(
        quote, finished.billed_seconds(), request.gpus, int(attempt.get("instance_gpus") or request.gpus)
    )
    status = JobStatus.SUCCEEDED if finished.status == "SUCCEEDED" else JobStatus.FAILED
    at = iso_from_millis(finished.stopped_at) if finished.stopped_at else now_iso()
    fields: dict[str, Any] = {"cost": cost.model_dump()}
    if status == JobStatus.FAILED:
        fields["error"] = finished.status_reason or f"container exited with {finished.exit_code}"
    # Emitted only by the call that records the outcome, so a retried RecordCost never counts twice.
    if jobs.finish(payload.job_id, status, at=at, fields=fields):
        metrics.add_metric(name="JobCostUsd", unit="None", value=cost.usd)
        metrics.add_metric(name="JobRuntimeSeconds", unit="Seconds", value=cost.runtime_seconds)
        outcome = "JobsSucceeded" if status == JobStatus.SUCCEEDED else "JobsFailed"
        metrics.add_metric(name=outcome, unit="Count", value=1)
    return cost


def record_failure(payload: RecordFailureInput) -> dict[str, Any]:
    """RecordFailure: say on the job record why the workflow could not run the job."""
    state = payload.state
    error = state.get("error") or {}
    diagnosis = state.get("diagnosis") or {}
    if error:
        message = f"{error.get('Error', 'Error')}: {_cause_message(error.get('Cause'))}"
    elif diagnosis.get("category"):
        message = f"{diagnosis['category']}: {diagnosis.get('reason', '')}"
    else:
        message = "the workflow failed"
    jobs = store()
    recorded = jobs.finish(payload.job_id, JobStatus.FAILED, fields={"error": message[:1000]})
    if recorded:
        metrics.add_metric(name="JobsFailed", unit="Count", value=1)
    # Never leave a GPU attempt running (or waiting for a GPU) behind a failed workflow; the record
    # knows every attempt, including one whose SubmitBatchJob failed after Batch accepted it.
    terminate_live_attempts(jobs.get_job(payload.job_id), "GPU Pilot workflow failed")
    return {"job_id": payload.job_id, "error": message[:1000], "recorded": recorded}


def terminate_live_attempts(record: dict[str, Any], reason: str) -> list[str]:
    """Terminate every attempt of the record whose Batch job has not ended; returns their ids."""
    terminated = []
    for attempt in (record.get("attempts") or {}).values():
        if attempt.get("batch_job_id") and attempt.get("batch_status") not in ("SUCCEEDED", "FAILED"):
            client("batch").terminate_job(jobId=attempt["batch_job_id"], reason=reason)
            terminated.append(attempt["batch_job_id"])
    return terminated


def _cause_message(cause: Any) -> str:
    if isinstance(cause, str):
        try:
            parsed = json.loads(cause)
        except ValueError:
            return cause
        if isinstance(parsed, dict):
            return str(parsed.get("errorMessage") or parsed.get("Cause") or cause)
    return str(cause)


# -- API --------------------------------------------------------------------------------------
def start_job(request: JobRequest) -> SubmitResponse:
    """POST /jobs: record the job, then start its workflow (named after the job, so it starts once)."""
    job_id = new_job_id()
    jobs = store()
    jobs.create_job(job_id, request.name, request.model_dump(mode="json"))
    execution_input = {
        "job_id": job_id,
        "request": request.model_dump(mode="json"),
        "timeouts": {
            "stuck_after_seconds": max(1, round(request.stuck_after_minutes * 60)),
            # Batch may run the job RETRY_ATTEMPTS times, each up to its timeout after an image pull.
            "finish_after_seconds": RETRY_ATTEMPTS * (request.timeout_minutes * 60 + FINISH_GRACE_SECONDS),
        },
        "queue": {"checks": 0},
        "diagnosis": {"checks": 0},
    }
    try:
        execution = client("stepfunctions").start_execution(
            stateMachineArn=settings().state_machine_arn, name=job_id, input=json.dumps(execution_input)
        )
    except Exception as error:
        jobs.finish(job_id, JobStatus.FAILED, fields={"error": f"could not start the workflow: {error}"})
        raise
    jobs.set_execution_arn(job_id, execution["executionArn"])
    return SubmitResponse(job_id=job_id, status=JobStatus.SUBMITTED, execution_arn=execution["executionArn"])


IDEMPOTENCY_TTL_SECONDS = 24 * 3600


@cache
def idempotency_config() -> IdempotencyConfig:
    return IdempotencyConfig(
        event_key_jmespath="idempotency_key",
        payload_validation_jmespath="request",
        expires_after_seconds=IDEMPOTENCY_TTL_SECONDS,
    )


@cache
def _idempotent_start() -> Any:
    """`start_job` made idempotent by Powertools on (Idempotency-Key), validated against the body."""
    persistence = DynamoDBPersistenceLayer(
        table_name=settings().table_name,
        key_attr=constants.TABLE_PK,
        sort_key_attr=constants.TABLE_SK,
        static_pk_value="IDEMPOTENCY#submit_job",
        expiry_attr=constants.TTL_ATTRIBUTE,
        boto3_client=client("dynamodb"),
    )

    @idempotent_function(
        data_keyword_argument="submission",
        persistence_store=persistence,
        config=idempotency_config(),
        output_serializer=PydanticSerializer(SubmitResponse),
        key_prefix="submit_job",
    )
    def start(submission: dict[str, Any]) -> SubmitResponse:
        return start_job(JobRequest.model_validate(submission["request"]))

    return start


def submit_idempotently(request: JobRequest, idempotency_key: str) -> SubmitResponse:
    """POST /jobs with an Idempotency-Key: the same key and body return the same job."""
    submission = {"idempotency_key": idempotency_key, "request": request.model_dump(mode="json")}
    return _idempotent_start()(submission=submission)  # type: ignore[no-any-return]


def ordered_timeline(entries: list[dict[str, Any]]) -> list[TimelineEntry]:
    """The timeline in status order (as stored: a status is appended only when it moves the job on).

    Batch event times are whole seconds, so a status can read earlier than the one before it; no status
    happens before its predecessor, so each time is shown as at least the previous one.
    """
    timeline: list[TimelineEntry] = []
    for entry in entries:
        at = max(entry["at"], timeline[-1].at) if timeline else entry["at"]
        timeline.append(TimelineEntry(status=entry["status"], at=at))
    return timeline


def job_view(record: dict[str, Any]) -> JobView:
    """The public shape of a job record."""
    attempts = [
        Attempt(
            instance_type=a["instance_type"],
            capacity=a["capacity"],
            job_queue=a["job_queue"],
            batch_job_id=a.get("batch_job_id", ""),
            status=a.get("status", "SUBMITTED"),
            status_reason=a.get("status_reason"),
            diagnosis=a.get("diagnosis"),
        )
        for _, a in sorted((record.get("attempts") or {}).items(), key=lambda kv: int(kv[0]))
    ]
    timeline = ordered_timeline(record.get("timeline") or [])
    return JobView(
        job_id=record["job_id"],
        name=record["name"],
        status=record["status"],
        request=record["request"],
        instance_type=record.get("instance_type"),
        gpu_model=record.get("gpu_model"),
        attempts=attempts,
        cost=record.get("cost"),
        timeline=timeline,
        execution_arn=record.get("execution_arn"),
        error=record.get("error"),
        created_at=record["created_at"],
        updated_at=record["updated_at"],
    )


def get_job(job_id: str) -> JobView:
    return job_view(store().get_job(job_id))


def list_jobs(status: str | None, limit: int, next_token: str | None) -> JobList:
    records, token = store().list_jobs(status, limit, next_token)
    return JobList(jobs=[job_view(r) for r in records], next_token=token)


def cancel_job(job_id: str) -> JobView:
    """DELETE /jobs/{id}: stop the workflow and the Batch attempt; 409 once the job has ended."""
    jobs = store()
    record = jobs.get_job(job_id)
    if JobStatus(record["status"]).finished:
        raise JobAlreadyFinished(job_id)
    if not jobs.finish(job_id, JobStatus.CANCELLED, fields={"error": "cancelled by request"}):
        raise JobAlreadyFinished(job_id)
    # Read again after the cancel is recorded: an attempt submitted meanwhile is in this read, or its
    # SubmitBatchJob sees the cancel and terminates it itself. GPUs first, then the workflow.
    cancelled = jobs.get_job(job_id)
    terminate_live_attempts(cancelled, "cancelled by request")
    if record.get("execution_arn"):
        client("stepfunctions").stop_execution(
            executionArn=record["execution_arn"], error="Cancelled", cause="cancelled by request"
        )
    return job_view(cancelled)


# -- health -----------------------------------------------------------------------------------
def run_sweep() -> HealthReport:
    """Sweep: replay missed Batch events, find stuck jobs and INVALID pools, record and emit them."""
    jobs = store()
    batch = client("batch")
    prefix = settings().resource_prefix
    environments = {
        env["computeEnvironmentName"]: env
        for page in batch.get_paginator("describe_compute_environments").paginate()
        for env in page["computeEnvironments"]
        if env["computeEnvironmentName"].startswith(prefix + "-")
    }
    active = jobs.active_jobs(sweep.ACTIVE_STATUSES)
    latest = {r["job_id"]: (r, sweep.latest_attempt(r)) for r in active}
    by_batch_id = {a[1]["batch_job_id"]: job_id for job_id, (_, a) in latest.items() if a and a[1].get("batch_job_id")}
    described: list[dict[str, Any]] = []
    ids = list(by_batch_id)
    for start in range(0, len(ids), 100):
        described.extend(batch.describe_jobs(jobs=ids[start : start + 100])["jobs"])
    findings = [f for f in (sweep.invalid_environment_finding(e) for e in environments.values()) if f]
    reconciled = 0
    now_ms = now_millis()
    for batch_job in described:
        job_id = by_batch_id[batch_job["jobId"]]
        record, attempt = latest[job_id]
        try:
            if attempt and sweep.missed_event(attempt[1], batch_job):
                handle_batch_event({"detail-type": "Batch Job State Change", "time": now_iso(), "detail": batch_job})
                reconciled += 1
            elif _resume(jobs, record):
                reconciled += 1  # the event was recorded but its SendTaskSuccess was lost
        except Exception:
            logger.exception("could not reconcile job", extra={"job_id": job_id})
        pool = attempt[1].get("job_queue", "") if attempt else ""
        finding = sweep.stuck_finding(
            job_id, JobRequest.model_validate(record["request"]), batch_job, environments.get(pool, {}), now_ms
        )
        if finding:
            findings.append(finding)
    result = sweep.report(findings, reconciled)
    jobs.save_health(result.model_dump(mode="json"))
    stuck = sum(1 for f in findings if f.jobs and f.severity != "info")
    metrics.add_metric(name="StuckJobs", unit="Count", value=stuck)
    metrics.add_metric(
        name="InvalidComputeEnvironments",
        unit="Count",
        value=sum(1 for f in findings if f.kind.value == "COMPUTE_ENVIRONMENT_INVALID"),
    )
    metrics.add_metric(name="ReconciledEvents", unit="Count", value=reconciled)
    return result


def latest_health() -> HealthReport:
    saved = store().latest_health()
    if saved is None:
        return HealthReport(swept_at=None, findings=[], summary={"findings": 0})
    return HealthReport.model_validate(saved)


# -- costs ------------------------------------------------------------------------------------
def cost_report(date_from: str, date_to: str) -> CostReport:
    """GET /costs: daily cost of jobs created from `date_from` to `date_to` (YYYY-MM-DD, inclusive)."""
    days: dict[str, DailyCost] = {}
    for record in store().jobs_created_between(date_from, date_to):
        cost = record.get("cost")
        if not cost:
            continue
        date = record["created_at"][:10]
        day = days.setdefault(date, DailyCost(date=date, usd=0.0, by_gpu_type={}, by_job_name={}))
        usd = float(cost["usd"])
        gpu_type = record.get("instance_type") or "unknown"
        day.usd = round(day.usd + usd, 10)
        day.by_gpu_type[gpu_type] = round(day.by_gpu_type.get(gpu_type, 0.0) + usd, 10)
        day.by_job_name[record["name"]] = round(day.by_job_name.get(record["name"], 0.0) + usd, 10)
    ordered = [days[d] for d in sorted(days)]
    return CostReport(
        date_from=date_from, date_to=date_to, total_usd=round(sum(d.usd for d in ordered), 10), days=ordered
    )
