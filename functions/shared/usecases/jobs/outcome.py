"""RecordCost and RecordFailure: how the job ended, what it cost, and no GPU left running behind it."""

from __future__ import annotations

import json
from typing import Any

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus, MetricName
from functions.shared.domain.cost.attempts import Cost, total_cost
from functions.shared.domain.jobs.current import failure_words
from functions.shared.domain.jobs.records import AttemptRecord, JobRecord
from functions.shared.domain.jobs.steps import RecordCostInput, RecordFailureInput, WaitResult
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.cost.pricing import record_attempt_cost
from functions.shared.usecases.jobs.gpu_idle import charge_gpu_idle
from functions.shared.usecases.teams.budgets import settle

MAX_ERROR_CHARS = 1000


def record_cost(payload: RecordCostInput, ports: Ports) -> Cost | None:
    """Price the final attempt, and record the job's final status with its cost: every attempt's (once).
    A type without a known price ends without a cost (and says so in its log), never without its status."""
    number = payload.batch_job.attempt
    finished = payload.finished
    updated = ports.jobs.update_attempt(
        payload.job_id,
        number,
        {},
        if_missing={
            "runtime_seconds": finished.billed_seconds(),
            "started_at": finished.started_at,
            "stopped_at": finished.stopped_at,
        },
    )
    record_attempt_cost(payload.job_id, number, ports, record=updated)
    record = ports.jobs.get_job(payload.job_id)
    if (priced := record.attempts.get(number)) is not None:
        charge_gpu_idle(payload.job_id, number, priced, ports)  # the agent's last report may have come first
    cost = total_cost([a.cost for _, a in record.ordered_attempts() if a.cost is not None])
    if cost is None:
        logger.warning("no hourly price known: the job is recorded without a cost",
                       extra={"instance_type": payload.batch_job.instance_type})  # fmt: skip
    status = JobStatus.SUCCEEDED if finished.status == BatchStatus.SUCCEEDED else JobStatus.FAILED
    fields: dict[str, Any] = {"cost": cost}
    reason = f"exited with {finished.exit_code}" if finished.exit_code is not None else None
    if status == JobStatus.FAILED:
        fields["error"] = reason = failed_attempt_message(number, record.attempts.get(number), finished)
    # Emitted only by the call that records the outcome, so a retried RecordCost never counts twice.
    if ports.jobs.finish(payload.job_id, status, at=finished.stopped_at or now_iso(), fields=fields, reason=reason):
        if cost is not None:
            ports.metrics.add(MetricName.JOB_COST_USD, cost.usd, unit="None")
            ports.metrics.add(MetricName.JOB_RUNTIME_SECONDS, cost.runtime_seconds, unit="Seconds")
        ports.metrics.add(MetricName.JOBS_SUCCEEDED if status == JobStatus.SUCCEEDED else MetricName.JOBS_FAILED, 1)
    if record.commitment is not None:
        # What it cost stays spent; the rest of its commitment goes back to its team's budget.
        settle(payload.job_id, ports)
    return cost


def failed_attempt_message(number: int, attempt: AttemptRecord | None, finished: WaitResult) -> str:
    """Which attempt failed and why: `attempt 2 (g5.xlarge on-demand) exited with 1: <Batch's reasons>` (the words the
    job's view gives its outcome as soon as Batch ended the attempt)."""
    return failure_words(number, attempt, finished.exit_code, finished.status_reason)


def record_failure(payload: RecordFailureInput, ports: Ports) -> dict[str, Any]:
    """Say on the job record why the workflow could not run the job, attempt by attempt."""
    record = ports.jobs.get_job(payload.job_id)
    # Where else the job could have run (SelectGpuType's words) is said last, kept whole however long the attempts run.
    elsewhere = (payload.state.get("selection") or {}).get("elsewhere")
    hint = f" | {elsewhere}" if elsewhere else ""
    message = failure_message(payload.state, record, ports.settings.several_regions)[: MAX_ERROR_CHARS - len(hint)]
    message += hint
    recorded = ports.jobs.finish(payload.job_id, JobStatus.FAILED, fields={"error": message}, reason=message)
    if recorded:
        ports.metrics.add(MetricName.JOBS_FAILED, 1)
    # Never leave a GPU attempt running (or waiting for a GPU) behind a failed workflow; the record
    # knows every attempt, including one whose SubmitBatchJob failed after Batch accepted it.
    failed = ports.jobs.get_job(payload.job_id)
    terminate_live_attempts(failed, "GPU Pilot workflow failed", ports)
    settle(payload.job_id, ports, failed)
    return {"job_id": payload.job_id, "error": message, "recorded": recorded}


def terminate_live_attempts(record: JobRecord, reason: str, ports: Ports) -> list[str]:
    """Terminate every attempt of the record whose Batch job has not ended; returns their ids."""
    terminated = []
    for _, attempt in record.ordered_attempts():
        if attempt.live and attempt.batch_job_id:
            ports.in_region(attempt.region).batch.terminate_job(attempt.batch_job_id, reason)
            terminated.append(attempt.batch_job_id)
    return terminated


def failure_message(state: dict[str, Any], record: JobRecord, regional: bool = False) -> str:
    """Why the workflow stopped (its error, or the last diagnosis), then what each attempt came to (`regional`:
    and in which region)."""
    error = state.get("error") or {}
    diagnosis = state.get("diagnosis") or (state.get("queue") or {}).get("diagnosis") or {}
    if error:
        cause = f"{error.get('Error', 'Error')}: {_cause_message(error.get('Cause'))}"
    elif diagnosis.get("category"):
        cause = f"{diagnosis['category']}: {diagnosis.get('reason', '')}"
    else:
        cause = "the workflow failed"
    attempts = [f"{number}. {attempt_summary(attempt, regional)}" for number, attempt in record.ordered_attempts()]
    return cause + (f" | attempts: {'; '.join(attempts)}" if attempts else "")


def attempt_summary(attempt: AttemptRecord, regional: bool = False) -> str:
    """`g5.xlarge on-demand: INSUFFICIENT_CAPACITY` / `... exit code 1` / `... FAILED`, then (`regional`: in a
    deployment of several regions) its region when known: `(us-west-2)`."""
    if attempt.diagnosis is not None:
        outcome = attempt.diagnosis.category.value
    elif attempt.exit_code is not None:
        outcome = f"exit code {attempt.exit_code}"
    else:
        outcome = attempt.status.value
    where = f" ({attempt.region})" if attempt.region and regional else ""
    return f"{attempt.instance_type} {attempt.capacity.value}: {outcome}{where}"


def _cause_message(cause: Any) -> str:
    if isinstance(cause, str):
        try:
            parsed = json.loads(cause)
        except ValueError:
            return cause
        if isinstance(parsed, dict):
            return str(parsed.get("errorMessage") or parsed.get("Cause") or cause)
    return str(cause)
