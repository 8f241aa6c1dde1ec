"""The API's job routes: submit (idempotent by its key), read, explain, logs, cancel and list."""

from __future__ import annotations

from pydantic import BaseModel

from functions.api.resolver import MAX_LOG_TOKEN, MAX_PAGE, _caller, _listed_team, _ports, _request_body, _whole, app
from functions.shared.adapters.idempotency import submit_idempotently
from functions.shared.api.refusals import MAX_INTEGER_DIGITS, NumberTooLong
from functions.shared.api.responses import BadRequest
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.jobs.views import SubmitResponse
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.usecases.jobs import logs, queries, submit


# -- operations: one per route of functions/shared/api/contract.py, each answering its response model ---
def submit_job() -> BaseModel:
    key = app.current_event.headers.get("Idempotency-Key")  # Powertools headers are case-insensitive
    request = _request_body()
    if key is not None and not (1 <= len(key) <= 256):
        raise BadRequest("Idempotency-Key", "Idempotency-Key must be 1-256 characters")
    ports = _ports()

    started: list[SubmitResponse] = []

    def start(checked: JobRequest) -> SubmitResponse:
        started.append(submit.start_job(checked, ports, key=key, caller=_caller()))
        return started[-1]

    if not key:
        return start(request)
    answer = submit_idempotently(ports.settings.table_name, start, request, key, app.lambda_context)
    # Nothing started in this call: the key's first call did, and its answer is replayed.
    return answer if started else answer.model_copy(update={"already_submitted": True})


def get_job(job_id: str) -> BaseModel:
    explain = app.current_event.get_query_string_value("explain")
    if explain not in (None, "true", "false"):
        raise BadRequest("explain", "explain must be true or false")
    if explain == "true":
        return queries.explain_job(job_id, _ports(), _caller())
    return queries.get_job(job_id, _ports(), _caller())


def job_logs(job_id: str) -> BaseModel:
    raw_attempt = app.current_event.get_query_string_value("attempt")
    if raw_attempt is not None and not (raw_attempt.isascii() and raw_attempt.isdecimal() and raw_attempt.strip("0")):
        raise BadRequest("attempt", "attempt must be a whole number, 1 or more")
    if raw_attempt is not None and len(raw_attempt) > MAX_INTEGER_DIGITS:
        raise BadRequest("attempt", NumberTooLong("attempt", len(raw_attempt)).message)
    # Any other whole number is an attempt the job may not have: a 404 naming it, as the OpenAPI document allows.
    attempt = int(raw_attempt) if raw_attempt is not None else None
    token = app.current_event.get_query_string_value("next_token")
    if token is not None and not (1 <= len(token) <= MAX_LOG_TOKEN and token.isprintable()):
        raise BadRequest("next_token", "next_token is not one this API issued")
    return logs.job_logs(job_id, attempt, token, _ports(), _caller())


def cancel_job(job_id: str) -> BaseModel:
    return queries.cancel_job(job_id, _ports(), _caller())


def list_jobs() -> BaseModel:
    status = app.current_event.get_query_string_value("status")
    if status is not None and status not in JobStatus.__members__:
        raise BadRequest("status", f"status must be one of {', '.join(JobStatus.__members__)}")
    limit = _whole("limit", 20, 1, MAX_PAGE)
    token = app.current_event.get_query_string_value("next_token")
    return queries.list_jobs(JobStatus(status) if status else None, limit, token, _ports(), _listed_team())
