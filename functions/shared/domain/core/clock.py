"""Time, one convention inside: ISO 8601 UTC strings with milliseconds and `Z` (sortable as text).

Batch reports epoch milliseconds and events carry whole seconds; both are converted here, at the edge.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """`moment` as UTC ISO 8601 with milliseconds and Z."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso() -> str:
    """The current UTC time, ISO 8601 with milliseconds and Z."""
    return iso(now())


def iso_from_millis(millis: float) -> str:
    """ISO time of an epoch-milliseconds timestamp, as Batch reports its times."""
    return iso(datetime.fromtimestamp(millis / 1000, tz=UTC))


def parse_iso(value: str) -> datetime:
    """A UTC datetime from any ISO 8601 text (naive text is taken as UTC); ValueError when not ISO."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def normalize_iso(value: str, default: str | None = None) -> str:
    """Any ISO 8601 time as our convention; `default` (else now) when the text is not a time."""
    try:
        return iso(parse_iso(value))
    except (ValueError, TypeError):
        return default or now_iso()


def seconds_between(start: str, end: str) -> float:
    """Seconds from `start` to `end` (ISO), never negative."""
    return max(0.0, (parse_iso(end) - parse_iso(start)).total_seconds())


def age_seconds(since: str, at: str | None = None) -> float:
    """Seconds from `since` until `at` (default: now)."""
    return seconds_between(since, at or now_iso())
