"""The job store's writes as UpdateItem parameters, one function per kind of write: the single methods of the
job store send one (job_store.py), the sweep sends many in transactions (job_batches.py); each is exactly as
conditional either way."""

from __future__ import annotations

from typing import Any

from functions.shared import constants as c
from functions.shared.adapters.dynamodb_codec import serialize
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.vocabulary import JobStatus, WaitPhase
from functions.shared.domain.jobs.lifecycle import batch_rank, status_rank
from functions.shared.domain.jobs.records import AttemptRecord, TimelineEntry
from functions.shared.domain.jobs.writes import AttemptUpdate, JobFinish, JobWrite


def update_of(write: JobWrite) -> dict[str, Any]:
    """A write's UpdateItem, as its single form makes it (no ReturnValues)."""
    if isinstance(write, AttemptUpdate):
        return attempt_update(write.number, write.fields, write.if_missing)
    if isinstance(write, JobFinish):
        return advance_update(write.status, 0, None, write.fields, write.reason)
    return clear_wait_update(write.phase, write.token)


def advance_update(
    status: JobStatus, attempt: int, at: str | None, fields: dict[str, Any] | None, reason: str | None
) -> dict[str, Any]:
    """The job moves to `status`, appended to its timeline, unless it is already past it."""
    entry = TimelineEntry(status=status, at=at or now_iso(), reason=reason)
    names = {"#status": "status", "#pk": c.TABLE_PK}
    values = {
        ":status": serialize(status),
        ":rank": serialize(status_rank(status, attempt)),
        ":entry": serialize([entry]),
        ":now": serialize(now_iso()),
    }
    sets = [
        "#status = :status",
        "status_rank = :rank",
        "timeline = list_append(timeline, :entry)",
        "updated_at = :now",
    ]
    for index, (name, value) in enumerate((fields or {}).items()):
        names[f"#f{index}"] = name
        values[f":f{index}"] = serialize(value)
        sets.append(f"#f{index} = :f{index}")
    expression = "SET " + ", ".join(sets)
    if status.finished:
        # Out of the sparse index of unfinished jobs: the sweep's working set holds only live jobs.
        names |= {"#apk": c.GSI2_PK, "#ask": c.GSI2_SK}
        expression += " REMOVE #apk, #ask"
    return {
        "UpdateExpression": expression,
        "ConditionExpression": "attribute_exists(#pk) AND status_rank < :rank",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def attempt_update(
    number: int,
    fields: dict[str, Any],
    if_missing: dict[str, Any] | None = None,
    timeline_reason: tuple[int, str, str] | None = None,
) -> dict[str, Any]:
    """An attempt's fields set (a Batch status only forward), `if_missing` ones only where unset."""
    unknown = (set(fields) | set(if_missing or {})) - set(AttemptRecord.model_fields)
    if unknown:
        raise ValueError(f"not attempt fields: {sorted(unknown)}")
    names = {"#n": str(number), "#pk": c.TABLE_PK}
    values: dict[str, Any] = {":now": serialize(now_iso())}
    sets = ["updated_at = :now"]
    for index, (name, value) in enumerate((if_missing or {}).items()):
        if value is None:
            continue
        names[f"#m{index}"] = name
        values[f":m{index}"] = serialize(value)
        sets.append(f"attempts.#n.#m{index} = if_not_exists(attempts.#n.#m{index}, :m{index})")
    condition = "attribute_exists(#pk) AND attribute_exists(attempts.#n)"
    if fields.get("batch_status") is not None:
        fields = fields | {"batch_rank": batch_rank(fields["batch_status"])}
        values[":rank"] = serialize(fields["batch_rank"])
        condition += " AND (attribute_not_exists(attempts.#n.batch_rank) OR attempts.#n.batch_rank < :rank)"
    if fields.get("agent_report_sequence") is not None:
        # The host agent's reports are snapshots: one overtaken by a later one changes nothing.
        values[":seq"] = serialize(fields["agent_report_sequence"])
        condition += (
            " AND (attribute_not_exists(attempts.#n.agent_report_sequence) OR attempts.#n.agent_report_sequence < :seq)"
        )
    for index, (name, value) in enumerate(fields.items()):
        if value is None:
            continue
        names[f"#f{index}"] = name
        values[f":f{index}"] = serialize(value)
        sets.append(f"attempts.#n.#f{index} = :f{index}")
    if timeline_reason is not None:
        index, why, learnt = timeline_reason
        values |= {":why": serialize(why), ":learnt": serialize(learnt)}
        sets.append(f"timeline[{int(index)}].reason = :why, timeline[{int(index)}].reason_at = :learnt")
    return {
        "UpdateExpression": "SET " + ", ".join(sets),
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def clear_wait_update(phase: WaitPhase, token: str) -> dict[str, Any]:
    """The wait's token forgotten, unless a newer wait has replaced it."""
    return {
        "UpdateExpression": "REMOVE waits.#phase",
        "ConditionExpression": "waits.#phase.#token = :token",
        "ExpressionAttributeNames": {"#phase": phase.value, "#token": "token"},
        "ExpressionAttributeValues": {":token": {"S": token}},
    }
