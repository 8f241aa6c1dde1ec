"""Terminal rendering of a job (its cost line and its timeline), of a plan and of the costs."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.cost.attempts import Cost, attempt_cost, total_cost
from gpupilot.cli.render import costs, job_summary, status_line


def job(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "job_id": "0123456789abcdef0123",
        "name": "train",
        "status": "SUCCEEDED",
        "instance_type": "g5.12xlarge",
        "gpu_model": "A10G",
        "attempts": [
            {
                "instance_type": "g5.12xlarge",
                "capacity": "on-demand",
                "job_queue": "gpupilot-od-x8664-g5-12xlarge",
                "batch_job_id": "batch-1",
                "status": "SUCCEEDED",
            }
        ],
        "cost": {
            "usd": 0.15,
            "hourly_usd": 1.2,
            "runtime_seconds": 1800,
            "gpu_share": 0.25,
            "pricing": "on-demand us-east-1 price snapshot of 2025-08-01",
        },
        "timeline": [
            {"status": "SUBMITTED", "at": "2024-05-01T12:00:00.000Z"},
            {"status": "RUNNING", "at": "2024-05-01T12:03:10.250Z"},
            {"status": "SUCCEEDED", "at": "2024-05-01T12:33:10.250Z"},
        ],
    }
    return base | overrides


def line(summary: str, key: str) -> str:
    [found] = [row for row in summary.splitlines() if row.startswith(key + " ")]
    return found


def test_summary_shows_the_cost_and_how_it_was_computed():
    # Given / When
    summary = job_summary(job())

    # Then the cost line shows dollars = hourly x runtime x share, and the price source
    assert line(summary, "cost").split(None, 1)[1] == (
        "$0.150000 = $1.2/h x 1800 s x 0.25 share by GPUs (on-demand us-east-1 price snapshot of 2025-08-01)"
    )
    assert line(summary, "runtime").endswith("30.0 min")
    # And what it added to the bill (a cost priced before the API said: all of it)
    assert line(summary, "marginal").split(None, 1)[1] == "$0.150000 added to the bill"


def test_summary_of_a_reclaimed_job_says_what_its_reclaims_lost_and_what_resuming_saved():
    # Given a job whose cost says one reclaim took 180 s of work and resuming saved 420 s
    reclaims = {"count": 1, "lost_seconds": 180.0, "lost_usd": 0.009, "saved_seconds": 420.0,
                "saved_by_resume_usd": 0.021}  # fmt: skip
    summary = job_summary(job(cost=job()["cost"] | {"reclaims": reclaims}))

    # Then its summary says both, in seconds and dollars, below the cost; a job never reclaimed says nothing of it
    assert line(summary, "reclaims").split(None, 1)[1] == (
        "1 reclaim lost 180 s of work ($0.009000); resuming from its checkpoint saved 420 s ($0.021000)"
    )
    assert "reclaims" not in job_summary(job())


PRODUCT = re.compile(r"\$([\d.]+) = \$([\d.]+)/h x ([\d.]+) s x ([\d.e-]+) share by GPUs")


def multiplies_out(text: str) -> bool:
    """Whether a printed `$usd = $hourly/h x runtime s x share` is its own product, to the printed millionth."""
    usd, hourly, seconds, share = PRODUCT.search(text).groups()  # type: ignore[union-attr]
    product = Decimal(hourly) * Decimal(seconds) / 3600 * Decimal(share)
    return product.quantize(Decimal("1e-6")) == Decimal(usd)


def test_a_cost_over_several_attempts_is_the_sum_of_its_attempts_each_line_multiplying_out_as_printed():
    # Given a job whose spot attempt ran 606.5 s at $0.2104/h before it was reclaimed, then 1 of the 3 GPUs of an
    # on-demand instance for 10 min 01.25 s at $0.526/h (priced as the domain prices them)
    spot = attempt_cost(PriceQuote(hourly_usd=0.2104, pricing="spot"), 606.5).model_dump()
    third = attempt_cost(PriceQuote(hourly_usd=0.526, pricing="on-demand"), 601.25, share=(1 / 3, "gpus"))
    attempts = [job()["attempts"][0] | {"capacity": "spot", "status": "FAILED", "cost": spot},
                job()["attempts"][0] | {"cost": third.model_dump()}]  # fmt: skip
    total = total_cost([Cost.model_validate(spot), third])
    assert total is not None

    # When its summary is printed
    summary = job_summary(job(attempts=attempts, cost=total.model_dump()))

    # Then the cost row is the sum of its attempts, and each attempt's row multiplies out as printed
    assert line(summary, "cost").split(None, 1)[1] == f"${total.usd:.6f}, the sum of its 2 priced attempts (each below)"
    assert multiplies_out(line(summary, "attempt 1")) and multiplies_out(line(summary, "attempt 2"))
    assert "x 606.5 s x 1 share" in line(summary, "attempt 1")


def test_summary_of_a_job_on_part_of_an_instance_shows_what_the_whole_instance_cost():
    # Given a job that held a quarter of its instance, which cost $0.60 meanwhile
    cost = job()["cost"] | {"instance_usd": 0.6}

    # When / Then the summary shows the instance's cost, and where the rest of it is counted
    assert line(job_summary(job(cost=cost)), "instance").split(None, 1)[1] == (
        "$0.600000  (the rest is unused_share waste unless other jobs shared it)"
    )


def test_summary_shows_the_timeline_in_order_with_times_of_day():
    # Given / When
    summary = job_summary(job())

    # Then
    assert line(summary, "timeline").endswith(
        "SUBMITTED 12:00:00.000 -> RUNNING 12:03:10.250 -> SUCCEEDED 12:33:10.250"
    )


def test_summary_shows_the_gpu_type_queue_and_attempts():
    # Given / When
    summary = job_summary(job())

    # Then
    assert line(summary, "GPU type").endswith("g5.12xlarge (A10G, on-demand)")
    assert line(summary, "queue").endswith("gpupilot-od-x8664-g5-12xlarge")
    assert line(summary, "attempts").endswith("1")


SPOT_LEFT = {
    "instance_type": "g4dn.xlarge", "capacity": "spot", "capacity_type": "spot", "job_queue": "gpupilot-sp-g4dn",
    "batch_job_id": "batch-1", "status": "FAILED",
    "cost": {"usd": 0.0, "hourly_usd": 0.2104, "runtime_seconds": 0, "gpu_share": 1, "pricing": "spot us-east-1a"},
}  # fmt: skip


def test_while_a_fallback_s_pool_is_made_the_summary_describes_that_attempt_and_lists_the_one_it_left():
    # Given a job that left its spot attempt and provisions its on-demand attempt 2 (no entry yet)
    waiting = job(status="PROVISIONING", instance_type="g4dn.xlarge", gpu_model="T4", attempt=2,
                  capacity_type="on-demand", attempts=[SPOT_LEFT], cost=SPOT_LEFT["cost"])  # fmt: skip

    # When its summary is printed
    summary = job_summary(waiting)

    # Then its rows are attempt 2's: on-demand, no queue or Batch job of the spot attempt, no spot price as its cost
    assert line(summary, "GPU type").endswith("g4dn.xlarge (T4, on-demand)")
    assert line(summary, "queue").endswith(" -") and line(summary, "batch job").endswith(" -")
    assert line(summary, "attempts").endswith("2")
    assert line(summary, "cost").split(None, 1)[1] == (
        "$0, what attempt 1 cost (below); attempt 2's cost is added when it ends"
    )
    assert not [row for row in summary.splitlines() if row.startswith("runtime ")]
    # And the attempt it left is on its own row, with its own price
    assert line(summary, "attempt 1").split(None, 2)[2].startswith("g4dn.xlarge spot  FAILED  $0 = $0.2104/h")


def test_a_job_s_gpu_type_row_says_how_the_attempt_it_is_on_is_billed_when_an_answer_has_no_word_for_it():
    # Given an answer from before the API said the attempt the job is on (no `attempt`, no `capacity_type`)
    summary = job_summary(job(attempts=[SPOT_LEFT, job()["attempts"][0]]))
    # Then its latest attempt's
    assert line(summary, "GPU type").endswith("(A10G, on-demand)")


def test_each_batch_retry_of_an_attempt_says_its_host_why_and_the_quarantine_and_the_note_reads_as_one():
    # Given an attempt that Batch ran again after a host failed it, that host quarantined since
    retried = {"batch_attempt": 1, "host": "i-0bad", "reason": "Task failed to start; CannotStartContainerError: hook",
               "quarantined_at": "2024-05-01T12:03:00.000Z"}  # fmt: skip
    attempts = [job()["attempts"][0] | {"batch_retries": [retried]}]
    timeline = [*job()["timeline"][:2], {"status": "RUNNING", "at": "2024-05-01T12:03:00.000Z",
                                          "reason": "host i-0bad quarantined: it failed 2 different jobs"},
                job()["timeline"][2]]  # fmt: skip

    # When its summary is printed
    summary = job_summary(job(attempts=attempts, timeline=timeline))

    # Then the retry has a row of its own under its attempt's: where, why, the quarantine
    rows = summary.splitlines()
    assert rows[rows.index(line(summary, "attempt 1")) + 1] == line(summary, "retried")
    assert line(summary, "retried").split(None, 1)[1] == (
        "Batch attempt 1 on host i-0bad: Task failed to start; CannotStartContainerError: hook; host i-0bad "
        "quarantined at 12:03:00 UTC; Batch ran it again"
    )
    # And the timeline says the note, not a status twice
    assert line(summary, "timeline").endswith(
        "RUNNING 12:03:10.250 -> host i-0bad quarantined 12:03:00.000 -> SUCCEEDED 12:33:10.250"
    )


def test_summary_of_an_unfinished_job_has_no_cost_line():
    # Given / When
    summary = job_summary(job(status="RUNNING", cost=None))

    # Then
    assert not [row for row in summary.splitlines() if row.startswith(("cost ", "runtime "))]


def test_summary_shows_each_attempts_diagnosis():
    # Given a first attempt that fell back for lack of capacity
    first = job()["attempts"][0] | {
        "instance_type": "g6.xlarge",
        "diagnosis": {"category": "INSUFFICIENT_CAPACITY", "reason": "AWS Batch says: CAPACITY:..."},
    }
    summary = job_summary(job(attempts=[first, *job()["attempts"]]))

    # Then
    assert line(summary, "diagnosis g6.xlarge").endswith("INSUFFICIENT_CAPACITY: AWS Batch says: CAPACITY:...")


def test_summary_of_a_waiting_job_says_why_and_what_happens_next_and_when():
    # Given a job waiting on Batch's capacity verdict, its fallback due at 12:41:07
    waiting = job(
        status="RUNNABLE",
        cost=None,
        reason="CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        next_action={"action": "fall_back", "at": "2026-11-22T12:41:07.250Z",
                     "candidate": {"instance_type": "g6.xlarge", "capacity": "on-demand"}},
    )  # fmt: skip

    # When / Then
    summary = job_summary(waiting)
    assert line(summary, "waiting").endswith("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    assert line(summary, "next").endswith("falls back to g6.xlarge (on-demand) at 12:41:07 UTC unless it starts")


def test_the_progress_line_of_a_waiting_job_says_when_it_gives_up_when_no_candidate_is_left():
    waiting = job(status="RUNNABLE", reason="r", next_action={"action": "give_up", "at": "2026-11-22T12:41:07.250Z"})
    assert status_line(waiting, 65).endswith("waiting: r; gives up at 12:41:07 UTC unless it starts")


def test_summary_shows_each_attempt_priced_with_batchs_words_for_each_reclaimed_host():
    # Given a spot attempt EC2 reclaimed, then an on-demand attempt that succeeded, both priced
    reclaimed = job()["attempts"][0] | {
        "instance_type": "g6.xlarge", "capacity": "spot", "status": "FAILED",
        "host_terminations": ["Host EC2 (instance i-0abc) terminated."],
        "cost": {"usd": 0.0012, "hourly_usd": 0.35, "runtime_seconds": 12.0, "gpu_share": 1.0, "pricing": "spot"},
    }  # fmt: skip
    summary = job_summary(job(attempts=[reclaimed, *job()["attempts"]]))

    # Then the first attempt's line names its capacity, its end, its cost and the host's termination
    assert line(summary, "attempt 1").split(None, 2)[2] == (
        "g6.xlarge spot  FAILED  $0.001200 = $0.35/h x 12 s x 1 share by GPUs  Host EC2 (instance i-0abc) terminated."
    )
    assert line(summary, "attempt 2").split(None, 2)[2].startswith("g5.12xlarge on-demand  SUCCEEDED")


def test_the_plan_table_shows_price_capacity_score_why_and_warnings():
    from gpupilot.cli.render import plan_table

    plan = {
        "candidates": [
            {"instance_type": "g5.xlarge", "gpus": 1, "gpu_model": "A10G", "gpu_memory_gib": 24.0, "vcpus": 4,
             "capacity": "spot", "hourly_usd": 0.4, "score": 0.9, "why": "$0.4/h; spot placement score 9/10"},
            {"instance_type": "g6.xlarge", "gpus": 1, "gpu_model": "L4", "gpu_memory_gib": 24.0, "vcpus": 4,
             "capacity": "on-demand", "hourly_usd": None, "score": 0.5, "why": "no known price"},
        ],
        "rejected": [{"instance_type": "p5.48xlarge", "reason": "..."}],
        "warnings": ["g5.xlarge is offered in one zone only (us-east-1a): a shortage there stops it"],
    }  # fmt: skip
    printed = plan_table(plan)
    lines = printed.splitlines()
    assert lines[0].split() == [
        "#",
        "GPU",
        "type",
        "GPUs",
        "GiB/GPU",
        "vCPU",
        "capacity",
        "$/hour",
        "marginal",
        "score",
        "why",
    ]
    assert "spot" in lines[2] and "0.4000" in lines[2] and "placement score 9/10" in lines[2]
    assert "?" in lines[3] and "no known price" in lines[3]
    assert lines[-1] == "  warning: g5.xlarge is offered in one zone only (us-east-1a): a shortage there stops it"


def test_a_reserved_candidate_shows_its_rate_and_that_it_adds_nothing_in_the_plan_and_the_submit_summary():
    from gpupilot.cli.render import launch_summary, plan_table

    # Given a plan whose first candidate is an ODCR at the on-demand rate, adding nothing to the bill
    reserved = {"instance_type": "g5.xlarge", "gpus": 1, "gpu_model": "A10G", "gpu_memory_gib": 24.0, "vcpus": 4,
                "capacity": "on-demand", "capacity_type": "reserved", "hourly_usd": 1.006, "marginal_hourly_usd": 0.0,
                "score": 1.0, "why": "reserved: cr-0123456789abcdef0"}  # fmt: skip
    on_demand = reserved | {"capacity_type": "on-demand", "hourly_usd": 0.8048, "marginal_hourly_usd": 0.8048,
                            "instance_type": "g6.xlarge", "gpu_model": "L4", "why": "$0.8048/h"}  # fmt: skip

    # When the plan and the submit's summary are printed
    rows = plan_table({"candidates": [reserved, on_demand], "rejected": []}).splitlines()
    summary = launch_summary([reserved, on_demand], [])

    # Then the reservation's row says reserved, its rate, and 0 beside it; the on-demand one its price twice
    assert rows[2].split()[6:9] == ["reserved", "1.0060", "0"]
    assert rows[3].split()[6:9] == ["on-demand", "0.8048", "0.8048"]
    assert summary.splitlines()[0] == "first choice  g5.xlarge (1x A10G, reserved) $1.0060/h, adds $0/h for this job"
    assert summary.splitlines()[1] == "fallbacks     g6.xlarge (1x L4, on-demand) $0.8048/h"


COSTS = {
    "from": "2026-11-23",
    "to": "2026-11-23",
    "total_usd": 0.5,
    "days": [{"date": "2026-11-23", "usd": 0.5, "by_gpu_type": {"g6.xlarge": 0.5}, "by_job_name": {"train": 0.5}}],
    "groups": [],
    "waste": {"usd": 0.125, "by_reason": {"idle": 0.025, "never_registered": 0.1}, "by_pool": {"p": 0.125}},
}


def test_the_costs_table_shows_the_waste_by_reason_next_to_the_total():
    lines = costs(COSTS).splitlines()
    assert lines[-2] == "total $0.500000  marginal $0.500000"
    assert lines[-1] == (
        "waste $0.125000  (instances, or shares of them, that served no job; not in the total): "
        "never_registered $0.100000, idle $0.025000"
    )


def test_the_grouped_costs_table_shows_the_waste_too_and_no_waste_reads_as_zero():
    report = COSTS | {"group_by": "gpu_type", "groups": [{"key": "g6.xlarge", "usd": 0.5, "attempts": 1}]}
    assert costs(report).splitlines()[-1].startswith("waste $0.125000  ")
    assert costs(COSTS | {"waste": {"usd": 0.0, "by_reason": {}, "by_pool": {}}}).splitlines()[-1] == (
        "waste $0.000000  (instances, or shares of them, that served no job; not in the total)"
    )


def test_explained_summary_says_which_regions_and_markets_were_tried_and_why_each_was_left():
    # Given a job allowed only us-east-1 that failed on its one attempt there for lack of capacity
    failed = job(
        status="FAILED",
        cost=None,
        request={"regions": ["us-east-1"]},
        attempts=[
            job()["attempts"][0]
            | {"status": "FAILED", "region": "us-east-1", "diagnosis": {"category": "INSUFFICIENT_CAPACITY",
                                                                      "reason": "AWS Batch says: CAPACITY:..."}}
        ],
    )  # fmt: skip
    # When `status --explain` shows it
    summary = job_summary(failed, explain=True)
    # Then it says where the attempt went, on which market, why it left, and the regions the job allowed
    assert line(summary, "tried").split(None, 1)[1] == (
        "on-demand g5.12xlarge in us-east-1 (INSUFFICIENT_CAPACITY)  [regions allowed: us-east-1]"
    )


def test_the_plan_table_names_each_candidates_region_and_each_region_left_out():
    from gpupilot.cli.render import plan_table

    plan = {
        "candidates": [
            {"instance_type": "g5.xlarge", "gpus": 1, "gpu_model": "A10G", "gpu_memory_gib": 24.0, "vcpus": 4,
             "capacity": "on-demand", "hourly_usd": 1.0, "score": 1.0, "why": "in us-west-2; $1.0/h",
             "region": "us-west-2"},
        ],
        "rejected": [],
        "warnings": [],
        "regions": [{"region": "us-west-2", "candidates": 1, "left_out": None},
                    {"region": "eu-west-1", "candidates": 0, "left_out": "no quota (L-DB2E81BA is 0 vCPUs)"}],
    }  # fmt: skip
    printed = plan_table(plan)
    assert printed.splitlines()[2].split()[2] == "us-west-2"
    assert "region eu-west-1 left out: no quota (L-DB2E81BA is 0 vCPUs)" in printed


def test_submit_says_the_first_choices_region_and_each_fallbacks_when_they_are_in_several():
    from gpupilot.cli.render import launch_summary

    # Given a first choice in us-west-2 and a fallback at home
    west = {"instance_type": "g5.xlarge", "gpus": 1, "gpu_model": "A10G", "capacity": "on-demand", "hourly_usd": 1.0,
            "region": "us-west-2"}  # fmt: skip
    home = west | {"hourly_usd": 1.006, "region": "us-east-1"}
    printed = launch_summary([west, home], []).splitlines()
    # Then the first choice says its region, and the fallback says its own
    assert printed[0] == "first choice  g5.xlarge (1x A10G, on-demand) $1.0000/h for this job, in us-west-2"
    assert printed[1] == "fallbacks     g5.xlarge (1x A10G, on-demand) $1.0060/h in us-east-1"


def test_attempt_rows_name_regions_only_for_a_job_of_several_regions():
    # Given a job that fell back from us-east-1 to us-west-2, and the same job had both attempts been at home
    first = job()["attempts"][0] | {"status": "FAILED", "region": "us-east-1"}
    second = job()["attempts"][0] | {"region": "us-west-2"}
    moved = job_summary(job(attempts=[first, second]))
    stayed = job_summary(job(attempts=[first, second | {"region": "us-east-1"}]))
    # Then the moved job's rows say where each attempt ran; the home-only one's read as before regions
    assert line(moved, "attempt 2").split(None, 2)[2].startswith("g5.12xlarge on-demand us-west-2  SUCCEEDED")
    assert line(stayed, "attempt 2").split(None, 2)[2].startswith("g5.12xlarge on-demand  SUCCEEDED")
    assert " in us-east-1 " not in line(stayed, "tried")


# -- output that fits --------------------------------------------------------------------------------------------
LONG_WHY = "$3.912/h for this job, cheapest of 4 types that fit; offered in 2 zones; quota allows 2 at once; " * 2
WIDE_PLAN = {
    "candidates": [{"instance_type": "g4dn.12xlarge", "gpus": 4, "gpu_model": "T4", "gpu_memory_gib": 16.0, "vcpus": 48,
                    "capacity": "on-demand", "hourly_usd": 3.912, "score": 0.9, "why": LONG_WHY}],
    "rejected": [],
    "warnings": [],
}  # fmt: skip


@pytest.fixture
def terminal_of():
    from gpupilot.cli import render

    yield render.fit_to
    render.fit_to(None)


def test_at_80_columns_the_plan_s_why_goes_under_its_row_in_full_wrapped(terminal_of):
    from gpupilot.cli.render import plan_table

    terminal_of(80)
    lines = plan_table(WIDE_PLAN).splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[0].split()[-1] == "score" and lines[2].split()[:4] == ["1", "g4dn.12xlarge", "4x", "T4"]
    assert "3.9120" in lines[2] and "…" not in lines[2]
    assert lines[3].startswith("    why: $3.912/h for this job") and lines[4].startswith("      ")
    assert " ".join(" ".join(lines[3:]).split()).startswith("why: " + " ".join(LONG_WHY.split()))


def test_without_a_terminal_width_the_plan_s_why_is_in_full(terminal_of):
    from gpupilot.cli.render import plan_table

    terminal_of(None)
    assert LONG_WHY.strip() in plan_table(WIDE_PLAN)


LISTED = {
    "jobs": [
        {"job_id": "cd2bbd832282e6e965b6", "name": "a-very-long-job-name-" * 6, "status": "SUCCEEDED",
         "instance_type": "g4dn.12xlarge", "cost": {"usd": 0.000224}, "created_at": "2026-11-27T08:45:45.947Z"},
        {"job_id": "0123456789abcdef0123", "name": "short", "status": "RUNNABLE", "instance_type": "p4de.24xlarge",
         "cost": None, "created_at": "2026-11-27T09:01:02.000Z"},
    ]
}  # fmt: skip


def test_at_80_columns_the_job_list_cuts_only_the_name_never_an_id_a_status_or_a_price(terminal_of):
    from gpupilot.cli.render import job_list

    terminal_of(80)
    lines = job_list(LISTED).splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[2].split()[0] == "cd2bbd832282e6e965b6" and lines[2].split()[1].endswith("…")
    assert lines[2].split()[2:] == ["SUCCEEDED", "g4dn.12xlarge", "0.000224", "11-27", "08:45Z"]
    assert lines[3].split() == ["0123456789abcdef0123", "short", "RUNNABLE", "p4de.24xlarge", "-", "11-27", "09:01Z"]
    assert "(--wide for the full name)" in lines[4]


def test_at_80_columns_costs_grouped_by_job_name_cut_only_the_name(terminal_of):
    terminal_of(80)
    report = COSTS | {"group_by": "job_name", "total_usd": 1.5,
                      "groups": [{"key": "n" * 120, "attempts": 2, "usd": 1.5}]}  # fmt: skip
    lines = costs(report).splitlines()
    assert max(map(len, lines)) <= 80 and lines[2].split()[1:] == ["2", "1.500000", "1.500000"]
    assert lines[2].endswith("1.500000") and "(--wide for the full job_name)" in lines[3]


SWEEP = {
    "sweep_id": "sweep-1",
    "swept_at": "2026-11-24T10:00:00Z",
    "summary": {"findings": 2, "reconciled_events": 1, "ECS_AGENT_NOT_REGISTERED": 1, "IDLE_POOL": 1, "live_jobs": 3},
    "findings": [
        {"severity": "CRITICAL", "kind": "ECS_AGENT_NOT_REGISTERED", "resource": "gpupilot-od-x8664-g5-xlarge",
         "jobs": ["job-1"], "recommendation": "Check the instance role and the route to ECS. " * 6},
        {"severity": "INFO", "kind": "IDLE_POOL", "resource": "gpupilot-od-x8664-g6-xlarge", "jobs": [],
         "recommendation": "Nothing to do: it is retired after its idle hours."},
    ],
}  # fmt: skip


def test_a_sweep_s_summary_reads_as_words_not_a_dict(terminal_of):
    from gpupilot.cli.render import health

    first = health(SWEEP).splitlines()[0]
    assert first == ("sweep sweep-1 at 2026-11-24T10:00:00Z: 2 findings (1 ECS_AGENT_NOT_REGISTERED, 1 IDLE_POOL); "
                     "3 live jobs; 1 missed Batch events reconciled")  # fmt: skip
    assert "{" not in first


def test_each_finding_is_a_line_with_its_recommendation_under_it_wrapped_to_the_terminal(terminal_of):
    from gpupilot.cli.render import health

    terminal_of(80)
    lines = health(SWEEP).splitlines()
    critical = next(i for i, line in enumerate(lines) if line.startswith("  CRITICAL"))
    assert lines[critical].split() == ["CRITICAL", "ECS_AGENT_NOT_REGISTERED", "gpupilot-od-x8664-g5-xlarge", "jobs",
                                       "job-1"]  # fmt: skip
    assert lines[critical + 1].startswith("      Check the instance role")
    assert max(map(len, lines)) <= 80
    assert lines[-1] == "      Nothing to do: it is retired after its idle hours."


def test_the_default_costs_are_by_day_and_their_rows_add_up_to_the_total():
    report = COSTS | {
        "total_usd": 0.75,
        "days": [{"date": "2026-11-22", "usd": 0.25, "by_gpu_type": {"g5.xlarge": 0.25}, "by_job_name": {"a": 0.25}},
                 {"date": "2026-11-23", "usd": 0.5, "by_gpu_type": {"g6.xlarge": 0.5}, "by_job_name": {"b": 0.5}}],
    }  # fmt: skip
    rows = costs(report).splitlines()[2:4]
    assert [row.split()[:2] for row in rows] == [["2026-11-22", "0.250000"], ["2026-11-23", "0.500000"]]


def test_costs_show_beside_each_row_and_the_total_what_it_added_to_the_bill_and_why_it_is_less():
    # Given a day of $0.75, of which an attempt on reserved capacity ($0.25) added nothing to the bill
    report = COSTS | {"total_usd": 0.75, "marginal_usd": 0.5, "group_by": "capacity_type", "groups": [
        {"key": "on-demand", "usd": 0.5, "marginal_usd": 0.5, "attempts": 1},
        {"key": "reserved", "usd": 0.25, "marginal_usd": 0.0, "attempts": 1}]}  # fmt: skip

    # When the costs are printed
    lines = costs(report).splitlines()

    # Then each capacity type's row says its cost and what it added, and the total says why they differ
    assert lines[0].split() == ["capacity_type", "attempts", "usd", "marginal"]
    assert [row.split() for row in lines[2:4]] == [["on-demand", "1", "0.500000", "0.500000"],
                                                   ["reserved", "1", "0.250000", "0.000000"]]  # fmt: skip
    assert lines[-2].startswith("total $0.750000  marginal $0.500000  (reserved capacity is paid for whether used")


def test_summary_names_the_reservation_an_attempt_ran_in_its_rate_and_that_it_added_nothing_to_the_bill():
    # Given an attempt on an On-Demand Capacity Reservation, priced at its rate, adding nothing to the bill
    cost = job()["cost"] | {"marginal_usd": 0.0, "marginal_hourly_usd": 0.0}
    reserved = job()["attempts"][0] | {"reservation": "cr-0123456789abcdef0", "capacity_type": "reserved", "cost": cost}

    # When its summary is printed
    summary = job_summary(job(attempts=[reserved], cost=cost))

    # Then its GPU type and its attempt say it was reserved, in which reservation, at what cost and what it added
    assert line(summary, "GPU type").endswith("(A10G, reserved)")
    assert "g5.12xlarge reserved in cr-0123456789abcdef0  SUCCEEDED  $0.150000 = $1.2/h x 1800 s" in summary
    assert line(summary, "attempt 1").endswith(", adds $0")
    assert line(summary, "marginal").split(None, 1)[1] == (
        "$0 added to the bill: cr-0123456789abcdef0 paid for whether used or not"
    )
