"""POST /plan, the check of POST /jobs and SelectGpuType when the market will not say: a quota, a price or a
placement score AWS refuses (an organisation's policy, a daily limit, throttling past the retries) is a warning
naming the signal and AWS's error; the plan still ranks, with the missing signal counted as unknown."""

from __future__ import annotations

from typing import Any

import pytest

from functions.shared.domain.core.errors import NoCandidate, SignalUnavailable
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.jobs.steps import NoGpuTypeAvailable, SelectInput
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import plan_request, select_gpu_type
from functions.shared.usecases.jobs.submit import start_job
from tests.unit.usecases.conftest import JOB_ID, REQUEST, create_job

T4_FAMILY = ["g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge"]


def request(**fields: Any) -> JobRequest:
    return JobRequest.model_validate(REQUEST | fields)


def refuse_every_signal(ports: Ports) -> None:
    """AWS refuses every market signal selection reads."""
    ports.availability.scores_error = SignalUnavailable("GetSpotPlacementScores", "UnauthorizedOperation")
    ports.prices.spot_error = SignalUnavailable("DescribeSpotPriceHistory", "UnauthorizedOperation")
    ports.prices.price_list_error = SignalUnavailable("GetProducts", "AccessDeniedException")
    for code in ("L-DB2E81BA", "L-3819A6DF"):
        ports.quotas.refused[code] = SignalUnavailable("GetServiceQuota", "AccessDeniedException")


def test_a_refused_placement_score_call_is_a_warning_and_spot_is_ranked_without_it(ports):
    # Given EC2 refusing GetSpotPlacementScores (an organisation's policy)
    ports.availability.scores_error = SignalUnavailable("GetSpotPlacementScores", "UnauthorizedOperation")
    ports.prices.spot_table = dict.fromkeys(T4_FAMILY, 0.2)

    # When planning a spot job three T4 types could run
    found = plan_request(request(capacity="spot", instance_types=T4_FAMILY), ports)

    # Then every type is still a candidate, unscored, and the warning names the signal and AWS's error
    assert sorted(c.instance_type for c in found.candidates) == sorted(T4_FAMILY)
    assert all(c.placement_score is None for c in found.candidates)
    assert (
        "spot placement scores could not be read (GetSpotPlacementScores: UnauthorizedOperation): "
        "spot offerings are ranked without them"
    ) in found.warnings


def test_a_quota_service_quotas_will_not_tell_rejects_nothing_and_is_a_warning(ports):
    # Given Service Quotas refusing the on-demand G quota, and the spot G one at 0
    ports.quotas.refused["L-DB2E81BA"] = SignalUnavailable("GetServiceQuota", "AccessDeniedException")
    ports.quotas.values["L-3819A6DF"] = 0

    # When planning a spot-first job on a T4
    found = plan_request(request(capacity="spot-first", instance_types=["g4dn.xlarge"]), ports)

    # Then on-demand stays a candidate (unknown is not zero), spot is refused by the quota it could read
    assert [(c.instance_type, c.capacity) for c in found.candidates] == [("g4dn.xlarge", CapacityType.ON_DEMAND)]
    assert found.candidates[0].quota_code is None
    [spot] = [r.reason for r in found.rejected if r.instance_type == "g4dn.xlarge"]
    assert "spot quota L-3819A6DF" in spot
    assert (
        "vCPU quotas L-DB2E81BA could not be read (GetServiceQuota: AccessDeniedException): "
        "not checked, so a type they bound may wait for quota"
    ) in found.warnings


def test_spot_prices_that_cannot_be_read_leave_spot_unpriced_and_are_a_warning(ports):
    # Given spot price history throttled past botocore's retries
    ports.prices.spot_error = SignalUnavailable("DescribeSpotPriceHistory", "RequestLimitExceeded")

    # When planning a spot-first job
    found = plan_request(request(capacity="spot-first", instance_types=["g4dn.xlarge"]), ports)

    # Then spot is still tried first, without a price; on-demand keeps its own
    spot, on_demand = found.candidates
    assert (spot.capacity, spot.hourly_usd, on_demand.capacity) == ("spot", None, "on-demand")
    assert on_demand.hourly_usd is not None
    assert (
        "spot prices could not be read (DescribeSpotPriceHistory: RequestLimitExceeded): "
        "spot offerings are ranked as unpriced"
    ) in found.warnings


def test_a_price_list_that_cannot_be_read_is_a_warning_and_the_snapshot_prices_the_plan(ports):
    # Given the AWS Price List refusing GetProducts
    ports.prices.price_list_error = SignalUnavailable("GetProducts", "AccessDeniedException")

    # When planning an on-demand job
    found = plan_request(request(instance_types=["g4dn.xlarge"]), ports)

    # Then it is priced from the bundled snapshot, and the warning says why
    [only] = found.candidates
    assert only.hourly_usd is not None and "price snapshot" in (only.pricing or "")
    assert any(
        w.startswith("on-demand prices could not be read (GetProducts: AccessDeniedException)") for w in found.warnings
    )


def test_select_gpu_type_ranks_when_no_market_signal_can_be_read(ports):
    # Given AWS refusing every market signal
    refuse_every_signal(ports)
    parsed = create_job(ports, capacity="spot-first", instance_types=T4_FAMILY)

    # When the workflow selects / Then it has every offering to try, spot first, and nothing failed
    selection = select_gpu_type(SelectInput(job_id=JOB_ID, request=parsed), ports)
    assert [(c.instance_type, c.capacity) for c in selection.candidates[:2]] == [
        ("g4dn.xlarge", CapacityType.SPOT),
        ("g4dn.xlarge", CapacityType.ON_DEMAND),
    ]
    assert len(selection.candidates) == 6


def test_a_job_is_accepted_with_a_warning_for_each_market_signal_aws_refused(ports):
    # Given AWS refusing every market signal
    refuse_every_signal(ports)

    # When a spot-first job is submitted
    response = start_job(request(capacity="spot-first", instance_types=T4_FAMILY), ports)

    # Then it starts, and its warnings name each call and error
    assert ports.workflow.executions
    for call in (
        "GetSpotPlacementScores: UnauthorizedOperation",
        "DescribeSpotPriceHistory: UnauthorizedOperation",
        "GetProducts: AccessDeniedException",
        "GetServiceQuota: AccessDeniedException",
    ):
        assert sum(call in w for w in response.warnings) == 1, (call, response.warnings)


def test_placement_scores_are_asked_for_three_types_when_the_job_would_try_fewer(ports):
    # Given a spot job that may try one offering, and three T4 types that fit
    ports.prices.spot_table = dict.fromkeys(T4_FAMILY, 0.2)

    # When planning
    plan_request(request(capacity="spot", instance_types=T4_FAMILY, max_attempts=1), ports)

    # Then the one it would try is scored with the next two, so that AWS's score means something
    assert ports.availability.asked_scores == [sorted(T4_FAMILY)]


def test_placement_scores_are_not_asked_when_fewer_than_three_types_fit(ports):
    # Given a spot job only two types can run, both scored 1 if asked (as AWS scores one or two types)
    ports.availability.scores = {"g4dn.xlarge": 1, "g4dn.2xlarge": 1}
    ports.prices.spot_table = dict.fromkeys(T4_FAMILY, 0.2)

    # When planning
    found = plan_request(request(capacity="spot", instance_types=T4_FAMILY[:2]), ports)

    # Then no score is asked for, none demotes spot, and no low-score warning is given
    assert ports.availability.asked_scores == []
    assert all(c.placement_score is None and c.score > 0.5 for c in found.candidates)
    assert not any("placement score" in w for w in found.warnings)


# -- what the account pays ----------------------------------------------------------------------------------------
def test_a_job_whose_cheap_types_are_all_blocked_by_quota_is_refused_naming_price_band_and_the_cheapest_fix(ports):
    # Given a new account: no on-demand G and VT vCPUs, so the cheapest type that can start is a P instance
    ports.quotas.values["L-DB2E81BA"] = 0

    # When a 1-GPU job with no other constraint is submitted
    with pytest.raises(NoCandidate) as refused:
        start_job(request(), ports)

    # Then it is refused on price_band, saying what blocks the cheap types, how much more the first choice costs,
    # and both ways out; the first rejection is the smallest quota increase; nothing started
    error = refused.value
    assert (error.field, error.headline) == ("price_band", "no GPU offering within price_band 3 can start")
    assert error.message.startswith(
        "G and VT types blocked by quota L-DB2E81BA (0 vCPUs): first choice p5.4xlarge costs 13x g4dn.xlarge"
    )
    assert "Send price_band 13.1 or more to run it" in error.message
    assert "--quota-code L-DB2E81BA --desired-value 8" in error.message
    assert (error.rejected[0].instance_type, error.rejected[0].field) == ("g4dn.xlarge", "capacity")
    assert not ports.workflow.executions


def test_a_job_that_widens_price_band_runs_on_the_pricier_type_and_is_told_loudly(ports):
    # Given no on-demand G and VT vCPUs
    ports.quotas.values["L-DB2E81BA"] = 0

    # When the job widens price_band past the first choice's 13.1x
    response = start_job(request(price_band=14), ports)

    # Then it starts, and its first warning says what it costs against the blocked cheap type
    assert ports.workflow.executions
    assert response.warnings[0].startswith("G and VT types blocked by quota L-DB2E81BA (0 vCPUs)")
    assert "13x g4dn.xlarge" in response.warnings[0]


def test_select_gpu_type_fails_a_job_whose_cheap_types_were_blocked_since_it_was_accepted(ports):
    # Given a job accepted while its cheap types could start, and the G and VT quota at 0 by the time it selects
    parsed = create_job(ports)
    ports.quotas.values["L-DB2E81BA"] = 0

    # When the workflow selects / Then it does not run at 13x what it was accepted for
    with pytest.raises(NoGpuTypeAvailable, match="price_band"):
        select_gpu_type(SelectInput(job_id=JOB_ID, request=parsed), ports)


def test_a_request_nothing_can_serve_names_the_smallest_quota_increase_first(ports):
    # Given no on-demand G, VT or P vCPUs
    ports.quotas.values.update({"L-DB2E81BA": 0, "L-417A185B": 0})

    # When a job is submitted / Then the refusal's message and list start with the cheapest fix
    with pytest.raises(NoCandidate) as refused:
        start_job(request(), ports)
    assert refused.value.field == "capacity"
    assert refused.value.message.startswith("g4dn.xlarge: needs 4 vCPUs of on-demand quota L-DB2E81BA")
