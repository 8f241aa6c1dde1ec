"""The HTTP API's routes, in one table: the api handler registers them, the stack declares them in API
Gateway, and the OpenAPI document (docs/openapi.json, api/openapi.py) is written from them, so the three cannot
drift."""

from __future__ import annotations

from typing import Any

from functions.shared.api.routes import QueryParam, Route
from functions.shared.domain.capacity.offers import Plan
from functions.shared.domain.core.vocabulary import Action, JobStatus
from functions.shared.domain.cost.report import CostReport
from functions.shared.domain.diagnosis.findings import HealthReport, SweepStarted
from functions.shared.domain.jobs.logs import JobLogs
from functions.shared.domain.jobs.views import JobList, JobView, SubmitResponse
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.reservations.offerings import MAX_BLOCK_DAYS, MAX_BLOCK_INSTANCES
from functions.shared.domain.reservations.views import OfferingList, PurchaseRequest, ReservationList, ReservationView
from functions.shared.domain.teams.audit import AuditList
from functions.shared.domain.teams.config import TEAM_NAME
from functions.shared.domain.teams.identity import Caller
from functions.shared.domain.teams.views import TeamList

# A health sweep id: what POST /sweep returns, and what GET /health?sweep_id= takes.
SWEEP_ID_PATTERN = r"^[\x21-\x7e]{1,64}$"
# A Capacity Block lasts 1 to 14 days, or whole weeks up to 182 days (DescribeCapacityBlockOfferings).
BLOCK_DAYS_SCHEMA: dict[str, Any] = {
    "type": "integer",
    "anyOf": [{"minimum": 1, "maximum": 14}, {"enum": list(range(21, MAX_BLOCK_DAYS + 1, 7))}],
}

API_TITLE = "GPU Pilot"
API_VERSION = "1"
# API Gateway's IAM authorization as OpenAPI spells it: requests signed with SigV4.
SIGV4 = {"type": "apiKey", "name": "Authorization", "in": "header", "x-amazon-apigateway-authtype": "awsSigv4"}


ROUTES: tuple[Route, ...] = (
    Route(
        "submit_job",
        "POST",
        "/jobs",
        "Submit a GPU job; it is picked a GPU type, provisioned, watched and priced",
        SubmitResponse,
        status=202,
        body=JobRequest,
        errors=(400, 409, 422),
        headers=(
            QueryParam(
                "Idempotency-Key",
                "The same key and body return the same job (24 h); 409 IN_PROGRESS with Retry-After while the "
                "first call runs; 422 for the same key with another body",
                {"type": "string", "minLength": 1, "maxLength": 256},
            ),
        ),
        action=Action.SUBMIT,
    ),
    Route(
        "list_jobs",
        "GET",
        "/jobs",
        "List jobs, newest first",
        JobList,
        query=(
            QueryParam("status", "Only jobs in this status", {"enum": [s.value for s in JobStatus]}),
            QueryParam("limit", "Page size, 1-100 (default 20)", {"type": "integer", "minimum": 1, "maximum": 100}),
            QueryParam("next_token", "The next_token of the previous page"),
            QueryParam(
                "team",
                "Only that team's jobs (an admin; anyone else lists its own team's)",
                {"type": "string", "pattern": TEAM_NAME},
            ),
        ),
        action=Action.READ,
    ),
    Route(
        "get_job",
        "GET",
        "/jobs/{job_id}",
        "A job: status, why it waits, attempts, timeline, cost",
        JobView,
        query=(
            QueryParam(
                "explain",
                "true: diagnose the job's wait now, from its pool's evidence",
                {"type": "string", "enum": ["true", "false"]},
            ),
        ),
        errors=(400, 404),
        action=Action.READ,
    ),
    Route(
        "cancel_job",
        "DELETE",
        "/jobs/{job_id}",
        "Cancel a job: stops its workflow and terminates its Batch job. The job is not removed: it stays readable, "
        "with status CANCELLED",
        JobView,
        status=202,
        errors=(404, 409),
        action=Action.CANCEL,
    ),
    Route(
        "job_logs",
        "GET",
        "/jobs/{job_id}/logs",
        "What an attempt printed (its log stream), oldest first, a page at a time; the local cloud's are simulated",
        JobLogs,
        query=(
            QueryParam("attempt", "From 1 (default: the latest that ran)", {"type": "integer", "minimum": 1}),
            QueryParam("next_token", "The next_token of the previous page: the lines written since"),
        ),
        errors=(400, 404),
        action=Action.LOGS,
    ),
    Route(
        "plan",
        "POST",
        "/plan",
        "Rank GPU offerings for a request; launches nothing",
        Plan,
        body=JobRequest,
        action=Action.PLAN,
    ),
    Route(
        "health",
        "GET",
        "/health",
        "The latest finished health sweep, or the one named by sweep_id (status RUNNING until it ends)",
        HealthReport,
        query=(
            QueryParam(
                "sweep_id",
                "A sweep started by POST /sweep",
                {"type": "string", "minLength": 1, "maxLength": 64, "pattern": SWEEP_ID_PATTERN},
            ),
        ),
        errors=(400, 404),
        action=Action.HEALTH,
    ),
    Route(
        "sweep",
        "POST",
        "/sweep",
        "Start a health sweep in the sweep function; read it with GET /health?sweep_id=",
        SweepStarted,
        status=202,
        errors=(),
        action=Action.SWEEP,
    ),
    Route(
        "costs",
        "GET",
        "/costs",
        "What every ended attempt cost: per day by GPU type, job name and capacity type, or by group_by; "
        "Accept: text/csv for one row per attempt",
        CostReport,
        query=(
            QueryParam(
                "from", "First day, YYYY-MM-DD (default: 30 days before `to`)", {"type": "string", "format": "date"}
            ),
            QueryParam("to", "Last day, YYYY-MM-DD (default: today)", {"type": "string", "format": "date"}),
            QueryParam(
                "group_by",
                "Group the total by",
                {"type": "string", "enum": ["day", "gpu_type", "job_name", "capacity_type", "region", "team", "owner"]},
            ),
        ),
        csv=True,
        action=Action.COSTS,
    ),
    Route(
        "list_reservations",
        "GET",
        "/reservations",
        "The account's Capacity Reservations and Capacity Blocks in the region: what each holds, what of it is idle, "
        "and what its idle hours have cost",
        ReservationList,
        errors=(503,),
        action=Action.RESERVATIONS,
    ),
    Route(
        "list_block_offerings",
        "GET",
        "/reservations/offerings",
        "The Capacity Blocks for ML EC2 offers now for instance_type, count and days, with their start, end and "
        "upfront fee (listed for an hour: what POST /reservations/purchase may buy)",
        OfferingList,
        query=(
            QueryParam(
                "instance_type",
                "The GPU type (required), e.g. p5.48xlarge",
                {"type": "string", "minLength": 1, "maxLength": 64},
                required=True,
            ),
            QueryParam(
                "count",
                f"Instances, 1-{MAX_BLOCK_INSTANCES} (default 1)",
                {"type": "integer", "minimum": 1, "maximum": MAX_BLOCK_INSTANCES},
            ),
            QueryParam("days", "Days: 1-14, or whole weeks up to 182 (default 1)", BLOCK_DAYS_SCHEMA),
        ),
        errors=(400, 503),
        action=Action.RESERVATIONS,
    ),
    Route(
        "purchase_block",
        "POST",
        "/reservations/purchase",
        "Buy a listed Capacity Block (its fee is charged at once): admins only, in a deployment with a ceiling "
        "(max_capacity_block_upfront_usd) the fee must not exceed, with confirm and a max_upfront_usd likewise",
        ReservationView,
        status=201,
        body=PurchaseRequest,
        errors=(400, 403, 409),
        action=Action.PURCHASE,
    ),
    Route(
        "whoami",
        "GET",
        "/whoami",
        "Who the API takes the caller for: its IAM principal, its team and its role (admin, member or viewer)",
        Caller,
        errors=(),
        action=Action.WHOAMI,
    ),
    Route(
        "list_teams",
        "GET",
        "/teams",
        "Each team's budget, what it spent today and this month, what its unfinished jobs hold committed, and its GPUs "
        "in use against its cap (an admin: every team; anyone else: its own)",
        TeamList,
        errors=(),
        action=Action.TEAMS,
    ),
    Route(
        "audit",
        "GET",
        "/audit",
        "The audit log (admins): a line per action that changed something or was refused for permission or budget, "
        "oldest first",
        AuditList,
        query=(
            QueryParam("from", "First day, YYYY-MM-DD (default: `to`)", {"type": "string", "format": "date"}),
            QueryParam(
                "to",
                "Last day, YYYY-MM-DD (default: today; at most 31 days from `from`)",
                {"type": "string", "format": "date"},
            ),
        ),
        action=Action.AUDIT,
    ),
)
