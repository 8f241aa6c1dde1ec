"""How the CLI says money: a cost as a product that multiplies out as printed, a price with what it adds to the bill,
and how an attempt or a candidate is billed. The API's numbers are exact (functions/shared/domain/core/money.py):
what is printed of them is each number in full, so that a reader's multiplication gives the printed total."""

from __future__ import annotations

from typing import Any

SHARE_BY = {"gpus": "GPUs", "vcpus": "vCPUs", "memory": "memory", "instance": "instance"}


def number(value: float) -> str:
    """A number in full, as short as it reads back exactly: 607, 0.526, 0.16666666666666666."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def dollars(usd: float) -> str:
    """An amount to a millionth of a dollar (`$0.000292`); nothing is `$0`."""
    return "$0" if usd == 0 else f"${usd:.6f}"


def product(cost: dict[str, Any]) -> str:
    """`$0.087886 = $0.526/h x 601.5 s x 1 share by GPUs`: the cost, and the numbers that make it, each in full."""
    share_by = SHARE_BY.get(cost.get("share_by") or "gpus", "GPUs")
    return (
        f"{dollars(cost['usd'])} = ${number(cost['hourly_usd'])}/h x {number(cost['runtime_seconds'])} s x "
        f"{number(cost['gpu_share'])} share by {share_by}"
    )


def added(cost: dict[str, Any]) -> float:
    """What the cost added to the bill (a cost priced before the API said so: all of it)."""
    marginal = cost.get("marginal_usd")
    return float(cost["usd"] if marginal is None else marginal)


def billed_as(item: dict[str, Any]) -> str:
    """How an attempt or a candidate is billed: on-demand, spot, reserved or capacity-block."""
    return str(item.get("capacity_type") or item["capacity"])


def hourly(candidate: dict[str, Any]) -> str:
    """`$0.8048/h`, or `$1.0060/h, adds $0/h` for a reservation: its price, and what it adds where that differs."""
    price = "price unknown" if candidate.get("hourly_usd") is None else f"${candidate['hourly_usd']:.4f}/h"
    marginal = candidate.get("marginal_hourly_usd")
    if marginal is not None and marginal != candidate.get("hourly_usd"):
        price += f", adds ${number(marginal)}/h"
    return price


def marginal_cell(candidate: dict[str, Any]) -> str:
    """The plan table's `marginal` column: what an hour of it adds to the bill (? when unknown)."""
    marginal = candidate.get("marginal_hourly_usd")
    return "?" if marginal is None else ("0" if marginal == 0 else f"{marginal:.4f}")


def reclaims(said: dict[str, Any]) -> str:
    """`1 reclaim lost 180 s of work ($0.009000); resuming from its checkpoint saved 420 s ($0.021000)`."""
    count = f"{said['count']} reclaim{'s' if said['count'] != 1 else ''}"
    lost = f"{count} lost {said['lost_seconds']:g} s of work ({dollars(said['lost_usd'])})"
    saved = f"{said['saved_seconds']:g} s ({dollars(said['saved_by_resume_usd'])})"
    return f"{lost}; resuming from its checkpoint saved {saved}"
