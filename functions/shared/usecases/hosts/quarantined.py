"""What a quarantine leaves behind: from when the host's cost is waste (`bad_host`), and a note on the timeline of
every GPU Pilot job the host failed."""

from __future__ import annotations

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.hosts.evidence import HostFault
from functions.shared.domain.hosts.quarantine import (
    HostCase,
    QuarantineRecord,
    describe_quarantine,
    last_success_on,
    success_lookback,
    waste_since,
)
from functions.shared.observability import logger
from functions.shared.ports import Ports

SUCCESSES_READ = 2000  # at most, the job records read to find a quarantined host's last success


def waste_from(case: HostCase, ports: Ports) -> str | None:
    """From when the host's cost is waste: since the last GPU Pilot job that succeeded on it ended (the jobs created
    since its launch, or a window before its first failure, read once per host quarantined: a rare event)."""
    looked_since = success_lookback(case, ports.settings.bad_host_window_seconds)
    if looked_since is None or case.container_instance_arn is None:
        return waste_since(case)
    try:
        records = ports.jobs.jobs_created_between(looked_since, now_iso(), max_items=SUCCESSES_READ)
    except Exception:
        logger.exception("could not read the jobs that ran on a quarantined host", extra={"instance": case.instance_id})
        return waste_since(case)
    if len(records) >= SUCCESSES_READ:
        return waste_since(case)  # the newest were not read: a success among them would be missed
    return waste_since(case, last_success_on(records, case.container_instance_arn), looked_since)


def note_jobs(record: QuarantineRecord, faults: list[HostFault], ports: Ports) -> None:
    """The timeline of every GPU Pilot job the host failed says so."""
    note = describe_quarantine(record)
    for job_id in sorted({f.job_id for f in faults if f.job_id}):
        try:
            ports.jobs.note_host(job_id, ports.jobs.get_job(job_id).status, record.instance, note, record.at)
        except Exception:
            logger.exception("could not note the quarantine on a job", extra={"job_id": job_id})
