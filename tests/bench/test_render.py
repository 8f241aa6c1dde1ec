"""docs/benchmarks.md is rendered from the result files, and every bench has a test that shows it can fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import REPO_ROOT, RESULTS_DIR, render
from bench.run import BENCHMARKS


def test_docs_benchmarks_is_what_the_result_files_render() -> None:
    # Given the committed result files / Then the committed page is exactly their rendering
    assert render.DOCUMENT.read_text() == render.render(), "docs/benchmarks.md is stale: run python -m bench.render"


def test_a_changed_result_file_changes_the_page(tmp_path: Path) -> None:
    # Given a copy of the result files with one metric moved
    for path in RESULTS_DIR.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    changed = json.loads((tmp_path / "plan.json").read_text())
    changed["metrics"]["aws_calls_warm"]["value"] = 42
    (tmp_path / "plan.json").write_text(json.dumps(changed))
    # Then the page rendered from them shows it, so the committed page no longer matches
    page = render.render(tmp_path)
    assert "| aws_calls_warm | 42 |" in page and page != render.DOCUMENT.read_text()


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_bench_has_a_result_file_with_its_words_and_a_test_of_its_own(name: str) -> None:
    result = json.loads((RESULTS_DIR / f"{name}.json").read_text())
    assert result["summary"] and result["method"] and result["metrics"]
    assert (REPO_ROOT / "tests" / "bench" / f"test_{name}.py").exists()
