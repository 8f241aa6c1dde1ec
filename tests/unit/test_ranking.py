"""Quotas, spot signals, zones, spreading and warnings: what makes a plan honest about what will start."""

from __future__ import annotations

import itertools

from functions.shared.domain.capacity.market import MarketSignals, SignalGap
from functions.shared.domain.capacity.quotas import QuotaState
from functions.shared.domain.capacity.signals import placement_score_types
from functions.shared.domain.capacity.unavailable import offering_key
from functions.shared.domain.core.vocabulary import MarketSignal
from tests.unit.builders import ZONES, catalog, gpu_type, job_request, offered_everywhere, signals
from tests.unit.test_selection import A10G, A10G_2X, L4, T4, candidate_types, plan_for, rejection, spot_market

L4_2X = gpu_type("g6.2xlarge", gpu_model="L4", gpu_memory_gib=24.0, vcpus=8, memory_gib=32.0)
TABLE = {"g6.xlarge": 0.805, "g6.2xlarge": 0.978, "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g4dn.xlarge": 0.526}


def quotas(**values: float) -> MarketSignals:
    return MarketSignals(quotas={code.replace("_", "-"): QuotaState(code=code.replace("_", "-"), name=code, vcpus=v)
                                 for code, v in values.items()})  # fmt: skip


# -- quotas -------------------------------------------------------------------------------------
def test_a_zero_vcpu_quota_rejects_every_type_it_bounds_and_says_how_to_ask_for_more():
    result = plan_for({}, A10G, L4, table=TABLE, market=quotas(L_DB2E81BA=0))
    assert result.candidates == []
    reason = rejection(result, "g5.xlarge")
    assert "needs 4 vCPUs of on-demand quota L-DB2E81BA" in reason and "which is 0" in reason
    assert "request-service-quota-increase --service-code ec2 --quota-code L-DB2E81BA" in reason


def test_a_quota_bounds_on_demand_and_spot_separately():
    market = spot_market(g5_xlarge=0.3)
    market.quotas = quotas(L_DB2E81BA=0, L_3819A6DF=64).quotas
    result = plan_for({"capacity": "spot-first"}, A10G, table=TABLE, market=market)
    assert [(c.instance_type, c.capacity) for c in result.candidates] == [("g5.xlarge", "spot")]
    assert (
        result.candidates[0].quota_instances == 16 and "quota L-3819A6DF allows 16 at once" in result.candidates[0].why
    )


def test_a_quota_that_fits_one_instance_is_a_warning_and_lowers_the_score():
    result = plan_for({}, A10G_2X, table=TABLE, market=quotas(L_DB2E81BA=8))
    [only] = result.candidates
    assert (only.quota_instances, only.score) == (1, 0.5)
    assert any("allows 1 g5.2xlarge at once" in w for w in result.warnings)


def test_a_type_larger_than_the_pools_max_vcpus_is_rejected():
    result = plan_for({}, A10G, A10G_2X, table=TABLE, market=MarketSignals(max_vcpus=4))
    assert candidate_types(result) == ["g5.xlarge"]
    assert "8 vCPUs exceed the pools' maxvCpus 4" in rejection(result, "g5.2xlarge")


# -- spot signals --------------------------------------------------------------------------------
def test_a_low_placement_score_lowers_the_rank_and_warns():
    market = spot_market(g5_xlarge=0.30, g6_xlarge=0.30)
    market.placement_scores = {"g5.xlarge": {z: 2 for z in ZONES}, "g6.xlarge": {z: 9 for z in ZONES}}
    result = plan_for({"capacity": "spot"}, A10G, L4, table=TABLE, market=market)
    assert candidate_types(result) == ["g6.xlarge", "g5.xlarge"]
    assert "spot placement score 9/10" in result.candidates[0].why
    assert result.candidates[1].score == 0.2
    assert not any("placement score" in w for w in result.warnings)  # the first choice scores well


FOUR_SPOT = spot_market(g4dn_xlarge=0.20, g6_xlarge=0.30, g5_xlarge=0.40, g5_2xlarge=0.45)
FOUR_TYPES = catalog(T4, L4, A10G, A10G_2X)


def test_placement_scores_are_asked_for_the_spot_types_tried_and_enough_others_to_make_three():
    # A spot-first job that tries two offerings (the cheapest type on spot, then on-demand): that type, then the
    # next two spot types
    tried_two = job_request(capacity="spot-first", max_attempts=2)
    assert placement_score_types(tried_two, signals(FOUR_TYPES, table=TABLE, market=FOUR_SPOT)) == [
        "g4dn.xlarge",
        "g6.xlarge",
        "g5.xlarge",
    ]
    # Four spot types tried: all four, nothing added
    tried_all = job_request(capacity="spot", max_attempts=6)
    assert placement_score_types(tried_all, signals(FOUR_TYPES, table=TABLE, market=FOUR_SPOT)) == [
        "g4dn.xlarge",
        "g6.xlarge",
        "g5.xlarge",
        "g5.2xlarge",
    ]


def test_placement_scores_are_not_asked_for_fewer_than_three_spot_types_or_when_none_is_tried():
    two = catalog(T4, L4)
    assert placement_score_types(job_request(capacity="spot"), signals(two, table=TABLE, market=FOUR_SPOT)) == []
    on_demand = job_request(capacity="on-demand")
    assert placement_score_types(on_demand, signals(FOUR_TYPES, table=TABLE, market=FOUR_SPOT)) == []


# -- signals that could not be read -------------------------------------------------------------
def test_each_signal_that_could_not_be_read_is_one_warning_naming_the_call_and_the_error():
    # Given two quotas and the placement scores AWS refused
    denied = {"signal": MarketSignal.VCPU_QUOTAS, "operation": "GetServiceQuota", "code": "AccessDeniedException"}
    market = MarketSignals(
        unavailable=[
            SignalGap(**denied, subject="L-DB2E81BA"),
            SignalGap(**denied, subject="L-417A185B"),
            SignalGap(
                signal=MarketSignal.PLACEMENT_SCORES, operation="GetSpotPlacementScores", code="MaxConfigLimitExceeded"
            ),
        ]
    )

    # When planning / Then one warning per signal and error, the quotas listed, and the plan ranks all the same
    result = plan_for({}, A10G, L4, table=TABLE, market=market)
    assert candidate_types(result) == ["g6.xlarge", "g5.xlarge"]
    assert result.warnings[-2:] == [
        "vCPU quotas L-DB2E81BA, L-417A185B could not be read (GetServiceQuota: AccessDeniedException): "
        "not checked, so a type they bound may wait for quota",
        "spot placement scores could not be read (GetSpotPlacementScores: MaxConfigLimitExceeded): "
        "spot offerings are ranked without them",
    ]


# -- zones -------------------------------------------------------------------------------------
def test_a_requests_zones_restrict_the_candidates_zones_and_leave_out_types_offered_elsewhere():
    availability = offered_everywhere(["g5.xlarge"])
    availability.offered["g6.xlarge"] = ["us-east-1b"]
    result = plan_for({"zones": ["us-east-1a"]}, A10G, L4, table=TABLE, availability=availability)
    assert [(c.instance_type, c.zones) for c in result.candidates] == [("g5.xlarge", ["us-east-1a"])]
    assert rejection(result, "g6.xlarge") == "not offered in us-east-1a"
    assert any("offered in one zone only (us-east-1a)" in w for w in result.warnings)


def test_recent_unavailability_shows_in_why_score_and_warnings():
    availability = offered_everywhere(["g6.xlarge"], unavailable={offering_key("on-demand", "g6.xlarge", ZONES[0])})
    [candidate] = plan_for({}, L4, table=TABLE, availability=availability).candidates
    assert candidate.unavailable_zones == [ZONES[0]] and f"recently unavailable in {ZONES[0]}" in candidate.why
    assert candidate.score == 0.25  # one zone of two left (0.5), and one zone only (0.5)


# -- spreading ---------------------------------------------------------------------------------
def test_attempts_alternate_families_so_one_familys_shortage_costs_one_attempt():
    result = plan_for({}, L4, L4_2X, A10G, A10G_2X, T4, table=TABLE)
    families = [c.family for c in result.candidates]
    assert candidate_types(result) == ["g4dn.xlarge", "g6.xlarge", "g5.xlarge", "g6.2xlarge", "g5.2xlarge"]
    assert all(a != b for a, b in itertools.pairwise(families))


def test_every_candidate_of_one_family_is_a_warning():
    result = plan_for({}, L4, L4_2X, table=TABLE)
    assert any("every candidate is a g6" in w for w in result.warnings)
