"""The web console as a person uses it: `gpupilot ui` against the local cloud, driven in a real headless Chromium.

One local cloud, one console and one browser serve the module's tests, in order: a console with no jobs, a job
waiting without capacity, a job that fell back, costs, the fleet, cancel, plan and submit, then keyboard, contrast
and a phone's width on every page. Any script error on a page fails its test. `make screenshots` writes the
screenshots to docs/console/.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import PHONE, WatchedPage, chromium, contrast_failures, sideways_overflow, tab_through, tab_to
from tests.e2e.conftest import GPUPILOT, RunningCloud, start_cloud, stop_cloud

pytestmark = pytest.mark.e2e

# g6.xlarge (the cheapest L4) has no capacity: a job held to it waits with Batch's reason; one free to fall back
# moves on.
WORLD = {"instance_types": {"g6.xlarge": {"capacity": "none"}}, "jobs": {"runtime_seconds": 3}}
JOB = {"image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["python", "train.py"], "ignore_unavailable": True}
WAITING = JOB | {"name": "held-to-g6", "instance_types": ["g6.xlarge"], "stuck_after_minutes": 30}
FALLING_BACK = JOB | {"name": "falls-back", "gpu_models": ["L4"], "stuck_after_minutes": 30}
DEADLINE_SECONDS = 90


class Console:
    def __init__(self, cloud: RunningCloud, url: str, context: Any) -> None:
        self.cloud, self.url, self.context = cloud, url.rstrip("/"), context
        self.jobs: dict[str, str] = {}

    def open(self, path: str, ready: str) -> WatchedPage:
        """A new tab on `path`, once `ready` (a selector) shows."""
        tab = WatchedPage(self.context)
        tab.page.goto(self.url + path)
        tab.page.wait_for_selector(ready, timeout=DEADLINE_SECONDS * 1000)
        return tab

    def submit(self, body: dict[str, Any]) -> str:
        answer = self.cloud.api.request("POST", "/jobs", body)
        assert answer.status == 202, answer.body
        return str(answer.body["job_id"])


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    folder = tmp_path_factory.mktemp("console")
    cloud = start_cloud(folder, WORLD)
    output = folder / "ui.out"
    with output.open("w") as sink:
        ui = subprocess.Popen(
            [GPUPILOT, "--endpoint", cloud.api_url, "ui", "--port", "0"], stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        url = wait_for_url(output, ui)
        with chromium() as context:
            yield Console(cloud, url, context)
    finally:
        ui.terminate()
        ui.wait(timeout=10)
        stop_cloud(cloud)


def wait_for_url(output: Path, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        printed = re.search(r"console on (\S+)", output.read_text())
        if printed:
            return printed.group(1)
        time.sleep(0.1)
    raise AssertionError("gpupilot ui did not print its URL:\n" + output.read_text())


@pytest.fixture
def tabs() -> Iterator[list[WatchedPage]]:
    """The tabs a test opens: none of them may have thrown a script error by its end."""
    opened: list[WatchedPage] = []
    yield opened
    errors = [error for tab in opened for error in tab.errors]
    for tab in opened:
        tab.page.close()
    assert errors == [], errors


def opened(tabs: list[WatchedPage], tab: WatchedPage) -> WatchedPage:
    tabs.append(tab)
    return tab


def test_with_no_jobs_the_jobs_page_says_so(console, tabs):
    # Given a local cloud where nothing was submitted
    # When a person opens the console
    tab = opened(tabs, console.open("/", "#job-list p.empty"))

    # Then the jobs page says there are none, and how to submit one
    assert "No jobs yet" in tab.page.inner_text("#job-list")


def test_the_jobs_page_lists_a_job_waiting_without_capacity_with_batchs_reason_and_marks_it_stuck(console, tabs):
    # Given a job held to a GPU type EC2 has no capacity for
    job_id = console.jobs["waiting"] = console.submit(WAITING)
    console.cloud.wait_for(job_id, {"RUNNABLE"}, DEADLINE_SECONDS)

    # When the jobs page shows it (it refreshes itself: Batch's reason comes with a later event)
    tab = opened(tabs, console.open("/", f'tr[data-key="{job_id}"]'))
    row = tab.page.locator(f'tr[data-key="{job_id}"]')
    row.filter(has_text="CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY").wait_for()

    # Then its row says why it waits, what happens next and when, and stands out as stuck
    assert "RUNNABLE" in row.inner_text() and "gives up at" in row.inner_text()
    assert row.get_attribute("class") == "stuck" and row.locator(".badge.stuck").inner_text() == "stuck"
    assert "g6.xlarge" in row.inner_text()
    tab.screenshot("jobs")


def test_the_job_page_shows_the_fallback_on_its_timeline_and_each_attempts_cost(console, tabs):
    # Given a job whose first choice has no capacity, which falls back and succeeds
    job_id = console.jobs["fell_back"] = console.submit(FALLING_BACK)
    job = console.cloud.wait_for(job_id, {"SUCCEEDED"}, DEADLINE_SECONDS)
    first, last = job["attempts"][0], job["attempts"][-1]

    # When its page is opened
    tab = opened(tabs, console.open(f"/jobs/{job_id}", "#job-body table"))
    page = tab.page
    page.wait_for_function("() => window.Chart && Chart.getChart(document.querySelector('.chart canvas'))")

    # Then the timeline's chart has a bar per attempt, the first on the type without capacity
    bars = page.evaluate("() => Chart.getChart(document.querySelector('.chart canvas')).data.labels")
    assert bars == [f"1: {first['instance_type']} on-demand", f"2: {last['instance_type']} on-demand"]
    # And the reason at the change says the fallback and its cause
    changes = page.locator("table", has_text="Each change of status").inner_text()
    assert f"falling back from {first['instance_type']} on-demand (INSUFFICIENT_CAPACITY)" in changes
    # And each attempt's cost is the API's, and the logs show what the attempt printed
    attempts = page.locator("table", has_text="Each attempt, in order").inner_text()
    assert "INSUFFICIENT_CAPACITY" in attempts and "SUCCEEDED" in attempts
    assert "exit code 0" in page.locator("#logs").inner_text()
    tab.screenshot("job")


def test_the_costs_page_shows_what_get_costs_says(console, tabs):
    # Given the costs the API reports, grouped by GPU type
    report = console.cloud.api.request("GET", "/costs", query={"group_by": "gpu_type"}).body
    assert report["total_usd"] > 0

    # When the costs page is opened
    tab = opened(tabs, console.open("/costs", "#costs-total"))
    page = tab.page

    # Then its total, and each group's cost, are the API's own numbers
    assert float(page.get_attribute("#costs-total", "data-usd") or "nan") == report["total_usd"]
    shown = page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('tr[data-key]')]"
        ".filter((row) => !row.dataset.key.startsWith('waste:'))"
        ".map((row) => [row.dataset.key, Number(row.querySelector('[data-usd]').dataset.usd)]))"
    )
    assert shown == {group["key"]: group["usd"] for group in report["groups"]}
    # And the chart stacks each day's spend by GPU type
    page.wait_for_function("() => window.Chart && Chart.getChart(document.querySelector('.chart canvas'))")
    stacked = page.evaluate(
        "() => Chart.getChart(document.querySelector('.chart canvas')).data.datasets.map(d => d.label)"
    )
    assert sorted(stacked) == sorted({t for day in report["days"] for t in day["by_gpu_type"]})
    tab.screenshot("costs")


def test_the_fleet_page_shows_the_last_sweeps_findings_by_severity(console, tabs):
    # Given a sweep of the pools the jobs used
    api = console.cloud.api
    sweep_id = api.request("POST", "/sweep").body["sweep_id"]
    deadline = time.monotonic() + DEADLINE_SECONDS
    while (report := api.request("GET", "/health", query={"sweep_id": sweep_id}).body)["status"] == "RUNNING":
        assert time.monotonic() < deadline, report
        time.sleep(0.5)
    assert report["findings"]

    # When the fleet page is opened
    tab = opened(tabs, console.open("/fleet", "#sweep-said"))
    page = tab.page

    # Then it shows that sweep, each finding by its kind and resource, and the count of each severity
    assert sweep_id in page.inner_text("#sweep-said")
    for finding in report["findings"]:
        assert page.locator(f'tr[data-key="{finding["kind"]}|{finding["resource"]}"]').count() == 1
    for severity in ("critical", "warning", "info"):
        expected = sum(1 for finding in report["findings"] if finding["severity"] == severity)
        assert page.inner_text(f'[data-severity="{severity}"]') == str(expected)
    tab.screenshot("fleet")


def test_cancel_asks_first_and_then_cancels_the_waiting_job_by_keyboard(console, tabs):
    # Given the job still waiting without capacity, on its page
    job_id = console.jobs["waiting"]
    tab = opened(tabs, console.open(f"/jobs/{job_id}", "#cancel"))
    page = tab.page

    # When a person presses Cancel job, then keeps it: nothing happens
    page.focus("#cancel")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.innerText") == "Keep it running"
    page.keyboard.press("Enter")
    assert console.cloud.api.request("GET", f"/jobs/{job_id}").body["status"] == "RUNNABLE"

    # And when they press it again and confirm
    page.focus("#cancel")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")

    # Then the job is cancelled, and its page says so
    console.cloud.wait_for(job_id, {"CANCELLED"}, DEADLINE_SECONDS)
    page.locator("h1 .badge", has_text="CANCELLED").wait_for()
    assert page.locator("#cancel").count() == 0


def test_the_plan_page_shows_candidates_and_rejections_and_submits_after_the_look_before_launch(console, tabs):
    # Given the plan the API makes for a pasted job file with one GPU model
    job_file = "name: planned\nimage: nvidia/cuda:12.4.1-base-ubuntu22.04\ncommand: [python, train.py]\n"
    plan = console.cloud.api.request("POST", "/plan", FALLING_BACK | {"name": "planned", "gpu_models": ["T4"]}).body
    tab = opened(tabs, console.open("/plan", "#plan-form"))
    page = tab.page

    # When a person pastes it, names the GPU model in the form, and plans
    page.click("#plan-form summary")
    page.fill("#job-file", job_file)
    page.fill("#field-gpu_models", "T4")
    page.click("button[type=submit]")
    page.wait_for_selector("#submit-job")

    # Then the candidates are the API's, in its order, with their prices, and the rejections are listed
    candidates = page.locator("table", has_text="Candidates, best first").locator("tbody tr")
    assert candidates.count() == len(plan["candidates"])
    assert plan["candidates"][0]["instance_type"] in candidates.first.inner_text()
    assert f"${plan['candidates'][0]['hourly_usd']}/h" in candidates.first.inner_text()
    tab.screenshot("plan")
    page.click("#plan-result details summary")
    rejected = page.locator("table", has_text="Left out, and why").locator("tbody tr")
    assert rejected.count() == len(plan["rejected"]) and rejected.first.is_visible()

    # And submitting shows the first choice and the fallbacks first, then opens the new job's page
    page.click("#submit-job")
    summary = page.locator("dialog pre.summary").inner_text()
    assert summary.startswith("first choice  " + plan["candidates"][0]["instance_type"])
    page.click("dialog button.primary")
    page.wait_for_url(re.compile(r".*/jobs/[0-9a-f]+$"))
    job_id = page.url.rsplit("/", 1)[1]
    assert console.cloud.api.request("GET", f"/jobs/{job_id}").body["name"] == "planned"


PAGES = {"jobs": ("/", "#job-list table"), "costs": ("/costs", "#costs-total"), "fleet": ("/fleet", "#sweep-said"),
         "plan": ("/plan", "#plan-form")}  # fmt: skip


def test_every_page_is_keyboard_navigable_readable_at_aa_contrast_and_fits_a_phone(console, tabs):
    for name, (path, ready) in PAGES.items():
        # Given each page, at 1280x800
        tab = opened(tabs, console.open(path, ready))
        page = tab.page

        # When a person tabs through it from the top
        reached = tab_through(page, 12)

        # Then the skip link comes first, then every page of the navigation, each focus visible
        names = [control["text"] for control in reached]
        assert names[:5] == ["Skip to content", "Jobs", "Costs", "Fleet", "Plan"], (name, names)
        assert [control for control in reached if not control["visible"]] == [], name
        # And every text passes WCAG AA contrast
        assert contrast_failures(page) == [], name
        # And at a phone's width nothing makes the page scroll sideways
        page.set_viewport_size(PHONE)
        page.wait_for_function(f"() => window.innerWidth === {PHONE['width']}")
        assert sideways_overflow(page) <= 0, name
        assert contrast_failures(page) == [], name
        if name == "jobs":
            page.evaluate("() => document.activeElement?.blur()")
            tab.screenshot("jobs-phone")

    # And from the jobs list, the keyboard alone opens a job
    tab = opened(tabs, console.open("/", "#job-list table"))
    link = tab_to(tab.page, lambda control: (control["href"] or "").startswith("/jobs/"))
    tab.page.keyboard.press("Enter")
    tab.page.wait_for_url(re.compile(".*" + re.escape(link["href"]) + "$"))
    tab.page.wait_for_selector("#job-body table")
    assert contrast_failures(tab.page) == []
