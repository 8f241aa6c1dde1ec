"""A job's control-plane cost, counted on the deployed ASL and handlers: a 10-hour job's state transitions and Lambda
invocations are a 1-minute job's; and a workflow that polls Batch on a timer shows a cost growing with runtime."""

from __future__ import annotations

import pytest

from bench import control_plane

pytestmark = pytest.mark.bench
# Simulated time 1200x faster (the bench's trick): the 10-hour job runs 30 real seconds, its workflow's Wait states
# and timeouts pass as fast, so a workflow that woke on a timer would wake as often per simulated hour as on AWS.
SPEEDUP = 1200
# The polling variant's polls are its Wait states' count in real seconds: at 1200x a 60 s wait is 50 ms, shorter than
# a poll's own work on a loaded machine (18 polls of 60 seen there). At 300x a wait is 200 ms, and the simulated hour
# 12 real seconds: a busy machine still polls through it.
POLLING_SPEEDUP = 300


def test_a_ten_hour_job_costs_the_control_plane_what_a_one_minute_job_costs() -> None:
    # Given a 1-minute and a 10-hour job through the deployed ASL and handlers, one after the other in one local cloud
    runs = control_plane.run_session_process((60, 36000), SPEEDUP, (control_plane.DEPLOYED,))
    short, long = runs[control_plane.DEPLOYED]
    assert [r["job_status"] for r in (short, long)] == ["SUCCEEDED", "SUCCEEDED"], runs
    # Then the 10-hour job entered the same states as often and invoked the same functions as often: ratio 1.00
    assert long["state_transitions"] / short["state_transitions"] == 1.0, (
        short["states_entered"],
        long["states_entered"],
    )
    assert long["states_entered"] == short["states_entered"]
    assert long["lambda_invocations_by_handler"] == short["lambda_invocations_by_handler"]
    assert long["lambda_invocations"] / short["lambda_invocations"] == 1.0


def test_a_polling_workflow_s_transitions_grow_with_the_job_s_runtime_where_the_deployed_one_s_do_not() -> None:
    # Given the bench at a small size: a 1-minute and a 1-hour job, 300x faster, through the deployed ASL and
    # through a variant that polls DescribeJobs every 60 s
    result = control_plane.run(short_runtime=60, long_runtime=3600, speedup=POLLING_SPEEDUP)
    # Then the polling variant polled through the simulated hour (its 60 s waits passed 300x faster too:
    # 60 polls at most; on real time, one)
    polls = result["details"]["runs"]["polling_1h"]["states_entered"]["PollBatchJob"]
    assert polls >= 20, result["details"]["runs"]["polling_1h"]["states_entered"]
    # And its 1h/1min transitions ratio is far above the deployed workflow's (about 12 against 1)
    deployed = result["metrics"]["transitions_ratio_1h_vs_1min"]["value"]
    polling = result["metrics"]["polling_asl_transitions_ratio_1h_vs_1min"]["value"]
    assert polling >= 4 * deployed, result["metrics"]
