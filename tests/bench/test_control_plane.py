"""The control-plane bench can fail: a workflow that polls Batch on a timer shows a cost growing with runtime."""

from __future__ import annotations

import pytest

from bench import control_plane

pytestmark = pytest.mark.bench


def test_a_polling_workflow_s_transitions_grow_with_the_job_s_runtime_where_the_deployed_one_s_do_not() -> None:
    # Given the bench at a small size: a 1-minute and a 1-hour job, 1200x faster, through the deployed ASL and
    # through a variant that polls DescribeJobs every 60 s
    result = control_plane.run(short_runtime=60, long_runtime=3600, speedup=1200)
    # Then the polling variant polled through the simulated hour (its 60 s waits passed 1200x faster too:
    # 60 polls at most; on real time, one)
    polls = result["details"]["runs"]["polling_1h"]["states_entered"]["PollBatchJob"]
    assert polls >= 20, result["details"]["runs"]["polling_1h"]["states_entered"]
    # And its 1h/1min transitions ratio is far above the deployed workflow's (about 12 against 1)
    deployed = result["metrics"]["transitions_ratio_1h_vs_1min"]["value"]
    polling = result["metrics"]["polling_asl_transitions_ratio_1h_vs_1min"]["value"]
    assert polling >= 4 * deployed, result["metrics"]
