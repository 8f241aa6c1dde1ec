"""An in-memory JobStore with the same conditional semantics as the DynamoDB one (tests/contract checks)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from functions.shared.adapters.page_tokens import decode_token, encode_token, list_position
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import JobAlreadyExists, JobNotFound
from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus, WaitPhase
from functions.shared.domain.jobs.lifecycle import batch_rank, status_rank
from functions.shared.domain.jobs.records import ActiveJob, AttemptRecord, JobRecord, Ownership, TimelineEntry, Wait
from functions.shared.domain.jobs.retries import BatchRetry
from functions.shared.domain.jobs.writes import AttemptUpdate, JobFinish, JobWrite
from functions.shared.domain.requests.job_request import JobRequest


class FakeJobStore:
    def __init__(self) -> None:
        self.records: dict[str, JobRecord] = {}
        self.hosts_noted: dict[str, set[str]] = {}
        self.lock = threading.RLock()
        self._lock = self.lock
        # The teams' budget ledger (tests/fakes/teams.py): a job's commitment is written with it, in one write.
        self.budgets: Any = None

    def _get(self, job_id: str) -> JobRecord:
        if job_id not in self.records:
            raise JobNotFound(job_id)
        return self.records[job_id]

    def create_job(self, job_id: str, request: JobRequest, ownership: Ownership | None = None) -> JobRecord:
        with self._lock:
            if job_id in self.records:
                raise JobAlreadyExists(job_id)
            if ownership is not None and ownership.commitment is not None:
                self.budgets.commit(ownership.commitment, ownership.commitment.usd)
            at = now_iso()
            record = JobRecord(
                job_id=job_id,
                name=request.name,
                status=JobStatus.SUBMITTED,
                status_rank=0,
                request=request,
                timeline=[TimelineEntry(status=JobStatus.SUBMITTED, at=at)],
                created_at=at,
                updated_at=at,
                **(ownership.model_dump() if ownership else {}),
            )
            self.records[job_id] = record
            return record.model_copy(deep=True)

    def get_job(self, job_id: str) -> JobRecord:
        with self._lock:
            return self._get(job_id).model_copy(deep=True)

    def list_jobs(
        self, status: JobStatus | None, limit: int, next_token: str | None, team: str | None = None
    ) -> tuple[list[JobRecord], str | None]:
        # Tokens as the DynamoDB store issues them: the position the page ended at, in list order.
        after = decode_token(next_token) if next_token is not None else None
        with self._lock:
            ordered = sorted(self.records.values(), key=lambda r: list_position(r.created_at, r.job_id), reverse=True)
            matching = [
                r
                for r in ordered
                if (status is None or r.status == status)
                and (team is None or r.team == team)
                and (after is None or list_position(r.created_at, r.job_id) < after)
            ]
            page = matching[:limit]
            more = len(matching) > limit
            token = encode_token(list_position(page[-1].created_at, page[-1].job_id)) if more else None
            return [r.model_copy(deep=True) for r in page], token

    def set_execution_arn(self, job_id: str, execution_arn: str) -> None:
        with self._lock:
            self._get(job_id).execution_arn = execution_arn

    def advance(
        self,
        job_id: str,
        status: JobStatus,
        attempt: int,
        at: str | None = None,
        fields: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> bool:
        with self._lock:
            record = self._get(job_id)
            rank = status_rank(status, attempt)
            if record.status_rank >= rank:
                return False
            updated = record.model_dump() | {
                "status": status,
                "status_rank": rank,
                "timeline": [*record.timeline, TimelineEntry(status=status, at=at or now_iso(), reason=reason)],
                "updated_at": now_iso(),
            }
            self.records[job_id] = JobRecord.model_validate(updated | _plain(fields or {}))
            return True

    def finish(
        self,
        job_id: str,
        status: JobStatus,
        at: str | None = None,
        fields: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> bool:
        return self.advance(job_id, status, attempt=0, at=at, fields=fields, reason=reason)

    def put_attempt(self, job_id: str, number: int, attempt: AttemptRecord) -> AttemptRecord:
        with self._lock:
            record = self._get(job_id)
            if number not in record.attempts:
                record.attempts[number] = attempt.model_copy(deep=True)
            return record.attempts[number].model_copy(deep=True)

    def update_attempt(
        self,
        job_id: str,
        number: int,
        fields: dict[str, Any],
        if_missing: dict[str, Any] | None = None,
        timeline_reason: tuple[int, str, str] | None = None,
    ) -> JobRecord | None:
        unknown = (set(fields) | set(if_missing or {})) - set(AttemptRecord.model_fields)
        if unknown:
            raise ValueError(f"not attempt fields: {sorted(unknown)}")
        with self._lock:
            record = self.records.get(job_id)
            if record is None or number not in record.attempts:
                return None
            attempt = record.attempts[number]
            updates = {k: v for k, v in fields.items() if v is not None}
            if fields.get("batch_status") is not None:
                rank = batch_rank(fields["batch_status"])
                if attempt.batch_rank is not None and attempt.batch_rank >= rank:
                    return None
                updates["batch_rank"] = rank
            sequence = fields.get("agent_report_sequence")
            if sequence is not None and (attempt.agent_report_sequence or -1) >= sequence:
                return None
            for name, value in (if_missing or {}).items():
                if value is not None and getattr(attempt, name) is None:
                    updates[name] = value
            record.attempts[number] = AttemptRecord.model_validate(attempt.model_dump() | _plain(updates))
            if timeline_reason is not None:
                index, why, learnt = timeline_reason
                record.timeline[index].reason, record.timeline[index].reason_at = why, learnt
            record.updated_at = now_iso()
            return record.model_copy(deep=True)

    def note_reason(
        self,
        job_id: str,
        number: int,
        status: BatchStatus,
        reason: str,
        timeline_index: int | None = None,
        at: str | None = None,
    ) -> JobRecord | None:
        with self._lock:
            record = self.records.get(job_id)
            attempt = record.attempts.get(number) if record else None
            if record is None or attempt is None or attempt.batch_status != status:
                return None
            attempt.status_reason = reason
            if timeline_index is not None:
                record.timeline[timeline_index].reason = reason
                record.timeline[timeline_index].reason_at = at or now_iso()
            return record.model_copy(deep=True)

    def note_host(self, job_id: str, status: JobStatus, instance_id: str, reason: str, at: str) -> bool:
        with self._lock:
            record = self.records.get(job_id)
            noted = self.hosts_noted.setdefault(job_id, set())
            if record is None or instance_id in noted:
                return False
            noted.add(instance_id)
            record.timeline.append(TimelineEntry(status=status, at=at, reason=reason))
            return True

    def note_retries(self, job_id: str, number: int, retries: list[BatchRetry]) -> bool:
        with self._lock:
            record = self.records.get(job_id)
            attempt = record.attempts.get(number) if record else None
            if record is None or attempt is None or len(attempt.batch_retries) >= len(retries):
                return False
            attempt.batch_retries = [r.model_copy() for r in retries]
            record.updated_at = now_iso()
            return True

    def store_wait(self, job_id: str, phase: WaitPhase, wait: Wait) -> JobRecord:
        with self._lock:
            record = self._get(job_id)
            record.waits[phase] = wait
            return record.model_copy(deep=True)

    def clear_wait(self, job_id: str, phase: WaitPhase, token: str) -> None:
        with self._lock:
            record = self.records.get(job_id)
            if record is not None and phase in record.waits and record.waits[phase].token == token:
                del record.waits[phase]

    def get_jobs(self, job_ids: Sequence[str]) -> dict[str, JobRecord]:
        with self._lock:
            return {i: self.records[i].model_copy(deep=True) for i in job_ids if i in self.records}

    def write_many(self, writes: Sequence[JobWrite]) -> list[bool]:
        applied = []
        for write in writes:
            if isinstance(write, AttemptUpdate):
                applied.append(
                    self.update_attempt(write.job_id, write.number, write.fields, write.if_missing) is not None
                )
            elif isinstance(write, JobFinish):
                applied.append(self.finish(write.job_id, write.status, fields=write.fields, reason=write.reason))
            else:
                with self._lock:
                    record = self.records.get(write.job_id)
                    wait = record.waits.get(write.phase) if record else None
                    applied.append(wait is not None and wait.token == write.token)
                self.clear_wait(write.job_id, write.phase, write.token)
        return applied

    def active_jobs(self, max_items: int = 20000) -> list[ActiveJob]:
        with self._lock:
            active = [r for r in self.records.values() if not r.status.finished]
            active.sort(key=lambda r: r.created_at, reverse=True)
            return [
                ActiveJob.model_validate(
                    r.model_dump(include={"job_id", "attempts", "waits", "execution_arn"})
                    | {"stuck_after_minutes": r.request.stuck_after_minutes}
                )
                for r in active[:max_items]
            ]

    def jobs_created_between(self, start: str, end: str, max_items: int = 5000) -> list[JobRecord]:
        with self._lock:
            # As the index's sort key compares: from `start`, to `end` and anything it is the start of.
            found = [r for r in self.records.values() if start <= r.created_at and r.created_at[: len(end)] <= end]
            found.sort(key=lambda r: r.created_at)
            return [r.model_copy(deep=True) for r in found[:max_items]]


def _plain(fields: dict[str, Any]) -> dict[str, Any]:
    """Field values as the record model takes them (models as dicts)."""
    return {k: (v.model_dump() if hasattr(v, "model_dump") else v) for k, v in fields.items()}
