"""How the CLI's text fits the terminal: tables whose rows stay readable at its width, and text wrapped under its
label. Without a width (a pipe, a file, CI logs, or --wide) everything is in full, one row or value to a line."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

# The width output is fitted to: the terminal's (set by the CLI), or None for no limit.
_width: int | None = None
# The least a cut column keeps (with its ellipsis): a name cut shorter tells nothing.
FLEXIBLE_MIN_WIDTH = 8
# Where a value moved under its row starts (its label first), and where its next lines start.
UNDER_LEAD = "    "
UNDER_INDENT = "      "
GAP = "  "


def fit_to(width: int | None) -> None:
    """Fit tables and text from now on to `width` columns (None: no limit, every cell in full)."""
    global _width
    _width = width


def width() -> int | None:
    """The width output is fitted to (None: no limit)."""
    return _width


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], flexible: str | None = None, beneath: str | None = None
) -> str:
    """Plain text columns. Wider than the terminal, a row gives up what reads as well elsewhere, in this order: its
    `beneath` column (free text) goes under it, wrapped, after its label; its `flexible` column (a name) is cut with an
    ellipsis, down to FLEXIBLE_MIN_WIDTH; then its rightmost columns go under it too. An id, a status or a price is
    never cut, and --wide (or a pipe) has every cell on its row."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    kept = list(range(len(headers)))
    names = list(headers)

    def too_wide() -> bool:
        return _width is not None and _row_width(kept, widths) > _width

    if too_wide() and beneath in names:
        kept.remove(names.index(str(beneath)))
    if too_wide() and flexible in names:
        column = names.index(str(flexible))
        room = int(_width or 0) - _row_width([i for i in kept if i != column], widths) - len(GAP)
        widths[column] = max(room, min(FLEXIBLE_MIN_WIDTH, widths[column]))
    while too_wide() and len(kept) > 1:
        kept.pop()
    lines = [_row(cells[0], kept, widths), GAP.join("-" * widths[i] for i in kept)]
    under = [i for i in range(len(headers)) if i not in kept]
    for row in cells[1:]:
        lines.append(_row(row, kept, widths))
        lines.extend(wrapped(f"{headers[i]}: {row[i]}", UNDER_INDENT, UNDER_LEAD) for i in under if row[i])
    if any(len(row[i]) > widths[i] for row in cells[1:] for i in kept):
        lines.append(f"  (--wide for the full {flexible})")
    return "\n".join(lines)


def _row_width(columns: list[int], widths: list[int]) -> int:
    return sum(widths[i] for i in columns) + len(GAP) * (len(columns) - 1)


def _row(cells: list[str], columns: list[int], widths: list[int]) -> str:
    shown = [cells[i] if len(cells[i]) <= widths[i] else cells[i][: widths[i] - 1] + "…" for i in columns]
    return GAP.join(value.ljust(widths[i]) for i, value in zip(columns, shown, strict=True)).rstrip()


def wrapped(text: str, indent: str, lead: str | None = None) -> str:
    """`text` after `lead` (default: `indent`), its next lines indented, wrapped at the terminal's width (in full,
    on one line, when there is none). Words break at spaces, never at their hyphens (a flag, a region, a pool name
    stay whole), unless one is longer than a line."""
    first = indent if lead is None else lead
    if _width is None:
        return first + text
    return textwrap.fill(
        text,
        width=max(_width, len(indent) + 20),
        initial_indent=first,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )


def listed(items: Sequence[str], separator: str, indent: str, lead: str) -> str:
    """`items` joined by `separator` after `lead`, wrapped at the terminal's width between items (never inside one
    that fits a line), the next lines indented: a timeline whose entries read whole."""
    if _width is None or not items:
        return lead + separator.join(items)
    lines, line = [], lead + items[0]
    for item in items[1:]:
        if len(line) + len(separator) + len(item) <= _width:
            line += separator + item
        else:
            lines.append(line + separator.rstrip())
            line = indent + item
    return "\n".join([*lines, line])
