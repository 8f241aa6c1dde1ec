"""Every module of the product fits its room: over about 250 lines, a module holds two things and is split along
the seam that names them (issue 28)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 260
PRODUCT = ("gpupilot", "functions", "host_agent")


def product_modules() -> list[str]:
    return sorted(str(path.relative_to(ROOT)) for package in PRODUCT for path in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("relative", product_modules())
def test_no_module_of_the_product_grows_past_its_room(relative):
    # Given a module of gpupilot/, functions/ or host_agent/ / When counting its lines
    lines = len((ROOT / relative).read_text().splitlines())

    # Then it fits: a longer one is two modules
    assert lines <= LIMIT, f"{relative} has {lines} lines, over {LIMIT}: split it along the seam that names its parts"
