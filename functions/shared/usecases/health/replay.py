"""The sweep's replays of the Batch events its records missed: many at once, in calls that grow with pages of 100
jobs, not with jobs. Each event is recorded as record_batch_event (track.py) records one, with the same
conditional writes, in the same order: the attempt's update, the job's status, the price of an ended attempt, then
the waits (judged after the write, as the wait protocol asks)."""

from __future__ import annotations

from collections.abc import Sequence

from functions.shared.domain.core.vocabulary import WaitPhase
from functions.shared.domain.fleet.batch import BatchJobEvent
from functions.shared.domain.jobs.records import ActiveJob, JobRecord
from functions.shared.domain.jobs.writes import AttemptUpdate, JobWrite
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.cost.pricing import unpriced_cost
from functions.shared.usecases.jobs.track import advance_recorded, attempt_update, catch_up, send_satisfied


def replay_batch_events(
    events: Sequence[BatchJobEvent], ports: Ports, along: Sequence[JobWrite] = ()
) -> tuple[int, list[bool]]:
    """The sweep's replays: many Batch events, each recorded as record_batch_event records one, in calls that grow
    with pages of 100 jobs, not with jobs: the attempts' updates written together (with the `along` writes), the
    records read back together (waits are judged after the write, as the wait protocol asks), the ended
    attempts priced together, the verdicts and spent tokens written together. Returns how many events it replayed, and
    whether each `along` write applied."""
    updates = [(event, update) for event in events if isinstance(update := attempt_update(event), AttemptUpdate)]
    written = ports.jobs.write_many([update for _, update in updates] + list(along))
    records = ports.jobs.get_jobs([update.job_id for _, update in updates])
    costs: list[JobWrite] = []
    resumable: list[JobRecord] = []
    for (event, update), applied in zip(updates, written[: len(updates)], strict=True):
        record = records.get(update.job_id)
        if record is None or update.number not in record.attempts:
            continue
        try:
            if not applied:
                answer, record = catch_up(event, update.number, record, ports)
                if "resumed" not in answer:
                    continue
            else:
                advance_recorded(event, update.number, record, ports)
                cost = unpriced_cost(record, update.number, ports) if update.fields["batch_status"].ended else None
                if cost is not None:
                    costs.append(AttemptUpdate(update.job_id, update.number, {}, if_missing={"cost": cost}))
            resumable.append(record)
        except Exception:
            # One job's trouble must not stop the replay of the others.
            logger.exception("could not replay the event", extra={"job_id": update.job_id})
    if costs:
        ports.jobs.write_many(costs)
    _resume_many(resumable, ports)
    return len(updates), written[len(updates) :]


def _resume_many(records: Sequence[JobRecord | ActiveJob], ports: Ports) -> list[list[WaitPhase]]:
    """resume, for many records: every satisfied wait's token sent, then the verdicts that resumed waits and the
    spent tokens written together."""
    resumed: list[list[WaitPhase]] = []
    spent: list[JobWrite] = []
    for record in records:
        try:
            phases, cleared = send_satisfied(record, ports)
        except Exception:
            logger.exception("could not resume the job's waits", extra={"job_id": record.job_id})
            phases, cleared = [], []
        resumed.append(phases)
        spent += cleared
    if spent:
        ports.jobs.write_many(spent)
    return resumed
