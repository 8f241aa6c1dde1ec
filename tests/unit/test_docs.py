"""The README fits a screen or two and links into docs/, every link between them resolves, every former README
section has a page, and the CLI reference is the CLI's own help."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpupilot.clidoc import PAGE, rendered

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Where each section of the former 800-line README went (a reader's bookmark of it still has a page).
FORMER_SECTIONS = {
    "Local cloud": "docs/local-cloud.md",
    "CLI": "docs/cli.md",
    "CUDA smoke test": "docs/cli.md",
    "HTTP API": "docs/http-api.md",
    "Picking a GPU that will start": "docs/how-it-works.md",
    "Security": "docs/security.md",
    "How it works": "docs/how-it-works.md",
    "Layout": "docs/how-it-works.md",
    "Tests": "docs/how-it-works.md",
    "Benchmarks": "docs/benchmarks.md",
    "Deploying": "docs/deploying.md",
}


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6} (.+)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_the_readme_fits_a_screen_or_two():
    assert len((REPO / "README.md").read_text().splitlines()) <= 120


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_local_link_resolves_to_a_file_and_heading(page: Path):
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{page.name} links to {target}: no such file"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.name} links to {target}: no such heading"


@pytest.mark.parametrize(("section", "doc"), FORMER_SECTIONS.items())
def test_every_former_readme_section_has_its_page_and_the_readme_links_to_it(section: str, doc: str):
    assert (REPO / doc).exists(), section
    assert f"]({doc})" in (REPO / "README.md").read_text(), f"the README does not link to {doc} ({section})"


def test_the_cli_reference_is_the_cli_s_own_help():
    # Given the committed page / When its reference is written anew / Then nothing changes (else: make cli-reference)
    page = PAGE.read_text()
    assert rendered(page) == page, "docs/cli.md is stale: run `make cli-reference`"
    assert "## gpupilot logs" in page and "--stuck-after-minutes" in page
