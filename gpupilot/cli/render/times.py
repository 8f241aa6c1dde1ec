"""How the CLI says a moment (its time of day, in UTC) and a while (how long a job has waited)."""

from __future__ import annotations


def clock(at: str) -> str:
    return at[11:23] if len(at) >= 23 else at


def utc(at: str) -> str:
    """`12:41:07 UTC` from an ISO time."""
    return f"{at[11:19]} UTC" if len(at) >= 19 else at


def elapsed(seconds: float) -> str:
    """`42 s`, `3 min 05 s`, `2 h 07 min`."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
