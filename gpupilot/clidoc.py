"""The CLI reference (docs/cli.md) below its marker, written from the CLI's own help, so it cannot drift from it.

`python -m gpupilot.clidoc` rewrites it (`make cli-reference`); `--check` exits 1 when the page is stale (a test
runs the same comparison). Everything above the marker is prose, kept as it is.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gpupilot.cli import build_parser

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
MARKER = (
    "<!-- Generated below from the CLI's own help by `python -m gpupilot.clidoc` (make cli-reference): edit the help "
    "in gpupilot/cli/ (one module per command group), not this page; a test fails when it is stale. -->"
)
# Help is formatted at a fixed width, so the page does not depend on the terminal that wrote it.
HELP_COLUMNS = "100"


def reference() -> str:
    """Every command's --help, in the order `gpupilot --help` lists them."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        parser = build_parser()
        sections = [("gpupilot", parser.format_help())]
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sections += [(f"gpupilot {name}", sub.format_help()) for name, sub in commands.choices.items()]
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "".join(f"\n## {title}\n\n```text\n{text.rstrip()}\n```\n" for title, text in sections)


def rendered(page: str) -> str:
    """The page with everything below its marker replaced by the reference."""
    prose, found, _ = page.partition(MARKER)
    if not found:
        raise ValueError(f"{PAGE} has no marker line: {MARKER}")
    return prose + MARKER + "\n" + reference()


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    page = PAGE.read_text()
    fresh = rendered(page)
    if check:
        if fresh != page:
            print(f"{PAGE} is stale: run `make cli-reference`", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(fresh)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
