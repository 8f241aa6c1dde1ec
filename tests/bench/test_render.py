"""docs/benchmarks.md is rendered from the result files, every goal's verdict comes from its figure, the words never
disagree with the figures, and every bench has a test that shows it can fail."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench import REPO_ROOT, RESULTS_DIR, render
from bench.run import BENCHMARKS

# A figure that reads as a ratio ("1.53x"), and a date: a figure written out in the notes is history, with its date.
RATIO = re.compile(r"(?<![\w.])\d+(?:\.\d+)?x\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
VERDICT_WORDS = re.compile(r"\b(met|missed)\b", re.IGNORECASE)


def committed() -> list[dict[str, Any]]:
    return render.results()


def copy_results(directory: Path) -> None:
    for path in RESULTS_DIR.glob("*.json"):
        (directory / path.name).write_text(path.read_text())


def change(directory: Path, name: str, metric: str, **fields: Any) -> None:
    result = json.loads((directory / f"{name}.json").read_text())
    result["metrics"][metric] |= fields
    (directory / f"{name}.json").write_text(json.dumps(result))


def row(page: str, metric: str) -> list[str]:
    """The cells of `metric`'s row in the page's table (the first section that has one)."""
    line = next(line for line in page.splitlines() if line.startswith(f"| {metric} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def expected(found: dict[str, Any]) -> str:
    """The verdict a metric's figure and goal give, judged here apart from the renderer."""
    goal = found["goal"]
    figure, target = float(found[goal["of"]]), float(goal["target"])
    holds = {"<=": figure <= target, ">=": figure >= target, "==": figure == target}[goal["op"]]
    return "met" if holds else "missed"


def test_docs_benchmarks_is_what_the_result_files_render() -> None:
    # Given the committed result files / Then the committed page is exactly their rendering
    assert render.DOCUMENT.read_text() == render.render(), "docs/benchmarks.md is stale: run python -m bench.render"


def test_a_changed_result_file_changes_the_page(tmp_path: Path) -> None:
    # Given a copy of the result files with one metric moved
    copy_results(tmp_path)
    change(tmp_path, "plan", "aws_calls_warm", value=42)
    # Then the page rendered from them shows it, so the committed page no longer matches
    page = render.render(tmp_path)
    assert "| aws_calls_warm | 42 |" in page and page != render.DOCUMENT.read_text()


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_bench_has_a_result_file_with_its_words_a_goal_and_a_test_of_its_own(name: str) -> None:
    result = json.loads((RESULTS_DIR / f"{name}.json").read_text())
    assert result["summary"] and result["method"] and result["metrics"]
    assert any("goal" in found for found in result["metrics"].values()), f"{name}: no metric states a goal"
    assert (REPO_ROOT / "tests" / "bench" / f"test_{name}.py").exists()


def test_every_verdict_on_the_page_is_what_its_figure_and_goal_say() -> None:
    # Given the committed page and result files
    page = render.DOCUMENT.read_text()
    for result in committed():
        section = page.split(f"## {result['benchmark']}\n", 1)[1].split("\n## ", 1)[0]
        for name, found in result["metrics"].items():
            if "goal" not in found:
                continue
            # Then each row with a goal says what its figure and goal give, and the line under the table agrees
            assert row(section, name)[-1] == expected(found), (result["benchmark"], name, found)
            if expected(found) == "missed":
                assert name in section.split("**Goals:**", 1)[1].split("\n", 1)[0], (result["benchmark"], name)


def test_a_figure_that_crosses_its_goal_turns_its_verdict_and_the_words_that_cite_it(tmp_path: Path) -> None:
    # Given the result files, and a copy where the cold start's worst handler and the sweep's warm calls are within
    # their goals and the local-e2e one-at-a-time overhead over its goal
    copy_results(tmp_path)
    change(tmp_path, "cold_start", "worst_handler_ratio_vs_boto3_floor", ratio=1.21)
    calls = next(n for n in json.loads((tmp_path / "sweep.json").read_text())["metrics"] if "calls_warm" in n)
    change(tmp_path, "sweep", calls, value=200)
    change(tmp_path, "local_e2e", "overhead_seconds_median_one_at_a_time", value=3.5)
    # When the page is rendered from them
    page = render.render(tmp_path)
    # Then each row says so, and so do the notes that cite those figures
    assert row(page, "worst_handler_ratio_vs_boto3_floor")[-1] == "met"
    assert "The goal is met: the worst handler" in page and "is 1.21x its boto3 floor" in page
    assert row(page, calls)[-1] == "met" and "a warm sweep makes 200 against the budget" in page
    assert row(page, "overhead_seconds_median_one_at_a_time")[-1] == "missed"


def test_no_bench_writes_met_or_missed_in_its_own_words() -> None:
    # Given every committed result's words, as the bench wrote them (placeholders not yet filled)
    for result in committed():
        for field in ("summary", "method", "notes"):
            # Then "met" and "missed" are never the bench's: the page derives them from the figures and goals
            found = VERDICT_WORDS.findall(result.get(field) or "")
            assert not found, f"{result['benchmark']}.{field} says {found}: cite {{metric.verdict}} instead"


def test_a_ratio_the_notes_write_out_is_history_with_its_date() -> None:
    # Given every committed result's notes, as the bench wrote them
    for result in committed():
        for sentence in SENTENCE_END.split(result.get("notes") or ""):
            # Then a ratio they write out (not a placeholder the page fills) stands in a dated sentence: what the
            # current run shows is cited from its figures
            written = RATIO.findall(render.PLACEHOLDER.sub("", sentence))
            assert not written or DATE.search(sentence), f"{result['benchmark']}: {written} in {sentence!r}"


def test_a_placeholder_that_names_no_figure_fails_the_rendering(tmp_path: Path) -> None:
    # Given a result whose notes cite a metric field that does not exist
    copy_results(tmp_path)
    result = json.loads((tmp_path / "plan.json").read_text())
    result["notes"] = "It takes {aws_calls_warmest.value} calls."
    (tmp_path / "plan.json").write_text(json.dumps(result))
    # Then rendering refuses it rather than print the placeholder
    with pytest.raises(KeyError, match="aws_calls_warmest"):
        render.render(tmp_path)
