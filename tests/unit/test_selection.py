"""plan(): which GPU offerings can run a request, in what order, and why the others were left out."""

from __future__ import annotations

import itertools

from functions.shared.adapters.ec2 import load_snapshot
from functions.shared.adapters.prices import SnapshotPrices
from functions.shared.domain.capacity.market import AvailabilitySnapshot, MarketSignals
from functions.shared.domain.capacity.offers import Plan
from functions.shared.domain.capacity.planning import plan
from functions.shared.domain.capacity.unavailable import offering_key
from functions.shared.domain.capacity.warnings import plan_warnings, signal_warnings
from functions.shared.domain.core.money import PriceQuote
from tests.unit.builders import ZONES, catalog, gpu_type, job_request, offered_everywhere, signals


def snapshot_prices(types: dict) -> dict[str, float]:
    """The bundled us-east-1 on-demand prices of the types."""
    quotes = {t: SnapshotPrices().on_demand(t) for t in types}
    return {t: quote.hourly_usd for t, quote in quotes.items() if quote is not None}


A10G = gpu_type("g5.xlarge", gpu_model="A10G", gpu_memory_gib=24.0, vcpus=4, memory_gib=16.0)
A10G_2X = gpu_type("g5.2xlarge", gpu_model="A10G", gpu_memory_gib=24.0, vcpus=8, memory_gib=32.0)
L4 = gpu_type("g6.xlarge", gpu_model="L4", gpu_memory_gib=24.0, vcpus=4, memory_gib=16.0)
T4 = gpu_type("g4dn.xlarge", gpu_model="T4", gpu_memory_gib=16.0, vcpus=4, memory_gib=16.0)
T4G = gpu_type("g5g.xlarge", gpu_model="T4g", gpu_memory_gib=16.0, vcpus=4, memory_gib=8.0, arch="arm64")
A10G_4GPU = gpu_type("g5.12xlarge", gpu_model="A10G", gpus=4, gpu_memory_gib=24.0, vcpus=48, memory_gib=192.0)

PRICES = {"g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g6.xlarge": 0.805, "g4dn.xlarge": 0.526, "g5g.xlarge": 0.42}
PRICES["g5.12xlarge"] = 5.672


def plan_for(
    request_fields: dict,
    *types,
    availability: AvailabilitySnapshot | None = None,
    table=None,
    market: MarketSignals | None = None,
) -> Plan:
    """The plan and its warnings, as POST /plan makes them."""
    cat, request = catalog(*types), job_request(**request_fields)
    found = plan(request, signals(cat, availability, PRICES if table is None else table, market))
    gaps = market.unavailable if market else []
    return found.model_copy(update={"warnings": plan_warnings(found, request) + signal_warnings(gaps)})


def spot_market(**prices_by_type: float) -> MarketSignals:
    """Spot prices (the same in every zone) for the given types, written g5_xlarge=0.4."""
    return MarketSignals(
        spot_prices={
            name.replace("_", "."): {z: PriceQuote(hourly_usd=price, pricing="spot history") for z in ZONES}
            for name, price in prices_by_type.items()
        }
    )


def candidate_types(result: Plan) -> list[str]:
    return [c.instance_type for c in result.candidates]


def rejection(result: Plan, instance_type: str) -> str:
    reasons = [r.reason for r in result.rejected if r.instance_type == instance_type]
    assert len(reasons) == 1, f"expected one rejection of {instance_type}, got {result.rejected}"
    return reasons[0]


# -- fit --------------------------------------------------------------------------------------
def test_arm64_gpu_types_are_rejected_for_an_x86_request_with_the_reason():
    # Given an x86_64 request and a catalog with an arm64 (g5g) type
    # When planning
    result = plan_for({}, A10G, T4G)

    # Then the arm64 type is rejected because of its architecture
    assert candidate_types(result) == ["g5.xlarge"]
    assert rejection(result, "g5g.xlarge") == "arm64 instance, request is x86_64"


def test_arm64_request_gets_only_the_arm64_gpu_types():
    # Given an arm64 request
    # When planning over x86_64 types and one g5g
    result = plan_for({"arch": "arm64"}, A10G, L4, T4G)

    # Then only the g5g type is a candidate
    assert candidate_types(result) == ["g5g.xlarge"]
    assert {r.instance_type for r in result.rejected} == {"g5.xlarge", "g6.xlarge"}


def test_types_outside_the_instance_types_allow_list_are_rejected():
    # Given a request that allows only g6.xlarge
    # When planning
    result = plan_for({"instance_types": ["g6.xlarge"]}, A10G, L4, T4)

    # Then every other type is rejected for not being on the list
    assert candidate_types(result) == ["g6.xlarge"]
    assert rejection(result, "g5.xlarge") == "not in the request's instance_types"
    assert rejection(result, "g4dn.xlarge") == "not in the request's instance_types"


def test_gpu_models_filter_rejects_other_models_and_ignores_case():
    # Given a request for the 'l4' model, in lower case
    # When planning
    result = plan_for({"gpu_models": ["l4"]}, A10G, L4, T4)

    # Then L4 is kept and the others are rejected naming their model
    assert candidate_types(result) == ["g6.xlarge"]
    assert rejection(result, "g5.xlarge") == "GPU model A10G not in the request's gpu_models"


def test_gpu_model_preference_order_beats_price():
    # Given A10G preferred over the cheaper L4 and T4 preferred last
    # When planning
    result = plan_for({"gpu_models": ["A10G", "L4", "T4"]}, A10G, L4, T4)

    # Then candidates follow the preference order, not the price order
    assert candidate_types(result) == ["g5.xlarge", "g6.xlarge", "g4dn.xlarge"]


def test_the_preferred_model_goes_first_and_the_next_attempt_tries_another_family():
    # Given two A10G sizes and A10G preferred over L4
    # When planning
    result = plan_for({"gpu_models": ["A10G", "L4"]}, A10G_2X, A10G, L4)

    # Then the cheaper A10G first, then the L4 (a g5 shortage would likely stop the larger g5 too), then it
    assert candidate_types(result) == ["g5.xlarge", "g6.xlarge", "g5.2xlarge"]


def test_gpu_types_with_fewer_gpus_than_requested_are_rejected_with_the_reason():
    # Given a request for 4 GPUs
    # When planning over a 1-GPU and a 4-GPU type
    result = plan_for({"gpus": 4}, A10G, A10G_4GPU)

    # Then only the 4-GPU type fits
    assert candidate_types(result) == ["g5.12xlarge"]
    assert rejection(result, "g5.xlarge") == "1 GPU, request needs 4"


def test_gpu_types_below_requested_memory_are_rejected_with_the_reason():
    # Given a request for at least 20 GiB per GPU
    # When planning over a 16 GiB T4 and a 24 GiB A10G
    result = plan_for({"min_gpu_memory_gib": 20}, A10G, T4)

    # Then the T4 is rejected naming both sizes
    assert candidate_types(result) == ["g5.xlarge"]
    assert rejection(result, "g4dn.xlarge") == "16.0 GiB per GPU, request needs 20.0"


def test_gpu_memory_exactly_as_requested_fits():
    # Given a request for exactly the T4's 16 GiB
    # When planning
    result = plan_for({"min_gpu_memory_gib": 16}, T4)

    # Then the T4 fits
    assert candidate_types(result) == ["g4dn.xlarge"]


def test_gpu_types_with_fewer_vcpus_than_requested_are_rejected_with_the_reason():
    # Given a request for 8 vCPUs
    # When planning over a 4-vCPU and an 8-vCPU type
    result = plan_for({"vcpus": 8}, A10G, A10G_2X)

    # Then the 4-vCPU type is rejected
    assert candidate_types(result) == ["g5.2xlarge"]
    assert rejection(result, "g5.xlarge") == "4 vCPUs, request needs 8"


def test_memory_request_above_what_is_left_after_the_host_reserve_is_rejected():
    # Given a 16 GiB host, of which 90% (14.4 GiB) is usable by jobs, and a request for 15 GiB
    # When planning
    result = plan_for({"memory_gib": 15}, A10G)

    # Then it is rejected although 15 < 16, naming the usable memory
    assert result.candidates == []
    assert rejection(result, "g5.xlarge") == "14.4 GiB usable memory, request needs 15.0"


def test_memory_request_within_the_usable_memory_fits():
    # Given a 16 GiB host and a request for 14 GiB (under the 14.4 GiB usable)
    # When planning
    result = plan_for({"memory_gib": 14}, A10G)

    # Then the type is a candidate
    assert candidate_types(result) == ["g5.xlarge"]


# -- price ------------------------------------------------------------------------------------
def test_gpu_type_without_a_known_price_is_a_candidate_after_the_priced_ones_when_the_request_allows_it():
    # Given a price table that does not know g6.xlarge
    # When planning a request that allows unpriced types
    result = plan_for({"allow_unpriced": True}, A10G, L4, table={"g5.xlarge": 1.006})

    # Then g6.xlarge is still tried, after the priced g5, and says it has no price
    assert candidate_types(result) == ["g5.xlarge", "g6.xlarge"]
    unpriced = result.candidates[1]
    assert (unpriced.hourly_usd, unpriced.pricing) == (None, None)
    assert "no known price" in unpriced.why


def test_a_budget_rejects_a_type_without_a_known_price():
    result = plan_for({"max_hourly_usd": 5}, A10G, L4, table={"g5.xlarge": 1.006})
    assert candidate_types(result) == ["g5.xlarge"]
    assert rejection(result, "g6.xlarge") == "no known on-demand price to hold against max_hourly_usd $5.0"


def test_gpu_type_above_max_hourly_usd_is_rejected_naming_both_prices():
    # Given a budget of $0.9/h
    # When planning over a $1.006/h A10G and a $0.805/h L4
    result = plan_for({"max_hourly_usd": 0.9}, A10G, L4)

    # Then the A10G is rejected for its price
    assert candidate_types(result) == ["g6.xlarge"]
    assert rejection(result, "g5.xlarge") == "on-demand $1.006/h exceeds max_hourly_usd $0.9"


def test_gpu_type_priced_exactly_at_max_hourly_usd_fits():
    # Given a budget equal to the L4 price
    # When planning
    result = plan_for({"max_hourly_usd": 0.805}, L4)

    # Then the L4 is a candidate
    assert candidate_types(result) == ["g6.xlarge"]


# -- zones and remembered unavailability --------------------------------------------------------
def test_gpu_type_not_offered_in_the_zones_is_rejected_naming_the_zones():
    # Given availability where g6.xlarge is offered nowhere
    availability = AvailabilitySnapshot(zones=ZONES, offered={"g5.xlarge": ZONES})

    # When planning
    result = plan_for({}, A10G, L4, availability=availability)

    # Then g6.xlarge is rejected, naming the zones it was looked for in
    assert candidate_types(result) == ["g5.xlarge"]
    assert rejection(result, "g6.xlarge") == "not offered in us-east-1a, us-east-1b"


def test_offerings_in_zones_outside_the_pool_zones_do_not_count():
    # Given g5.xlarge offered only in a zone the pool does not use
    availability = AvailabilitySnapshot(zones=ZONES, offered={"g5.xlarge": ["us-east-1f"]})

    # When planning
    result = plan_for({}, A10G, availability=availability)

    # Then it is rejected as not offered
    assert result.candidates == []
    assert rejection(result, "g5.xlarge") == "not offered in us-east-1a, us-east-1b"


def test_candidate_lists_only_the_zones_that_offer_its_type():
    # Given g5.xlarge offered in one of the two zones
    availability = AvailabilitySnapshot(zones=ZONES, offered={"g5.xlarge": ["us-east-1b"]})

    # When planning
    result = plan_for({}, A10G, availability=availability)

    # Then its candidate names only that zone
    assert result.candidates[0].zones == ["us-east-1b"]


def test_offering_remembered_as_unavailable_removes_its_zone_from_the_candidate():
    # Given on-demand g5.xlarge remembered as unavailable in us-east-1a
    availability = offered_everywhere(["g5.xlarge"], unavailable={offering_key("on-demand", "g5.xlarge", "us-east-1a")})

    # When planning
    result = plan_for({}, A10G, availability=availability)

    # Then the candidate keeps only us-east-1b
    assert result.candidates[0].zones == ["us-east-1b"]


def test_gpu_type_unavailable_in_every_zone_is_rejected_for_that_capacity():
    # Given on-demand g5.xlarge remembered as unavailable in both zones
    unavailable = {offering_key("on-demand", "g5.xlarge", zone) for zone in ZONES}
    availability = offered_everywhere(["g5.xlarge", "g6.xlarge"], unavailable=unavailable)

    # When planning
    result = plan_for({}, A10G, L4, availability=availability)

    # Then g5.xlarge is rejected naming the capacity and zones
    assert candidate_types(result) == ["g6.xlarge"]
    assert rejection(result, "g5.xlarge") == "on-demand capacity recently unavailable in us-east-1a, us-east-1b"


def test_spot_unavailability_does_not_remove_on_demand_zones():
    # Given spot g5.xlarge unavailable everywhere
    unavailable = {offering_key("spot", "g5.xlarge", zone) for zone in ZONES}
    availability = offered_everywhere(["g5.xlarge"], unavailable=unavailable)

    # When planning an on-demand request
    result = plan_for({"capacity": "on-demand"}, A10G, availability=availability)

    # Then the on-demand candidate keeps both zones
    assert [(c.capacity, c.zones) for c in result.candidates] == [("on-demand", ZONES)]


def test_offering_key_joins_capacity_type_and_zone():
    # Given / When / Then: the memory's key format that the store writes and plan() reads
    assert offering_key("spot", "g5.xlarge", "us-east-1a") == "spot:g5.xlarge:us-east-1a"


# -- capacity ---------------------------------------------------------------------------------
def test_on_demand_request_yields_only_on_demand_candidates():
    # Given / When: an on-demand request over two types
    result = plan_for({"capacity": "on-demand"}, A10G, L4)

    # Then every candidate is on-demand
    assert {c.capacity for c in result.candidates} == {"on-demand"}
    assert len(result.candidates) == 2


def test_spot_request_yields_only_spot_candidates_priced_at_spot_rates():
    # Given / When: a spot request over two types whose spot prices are known
    result = plan_for({"capacity": "spot"}, A10G, L4, market=spot_market(g5_xlarge=0.30, g6_xlarge=0.35))

    # Then every candidate is spot, priced from spot history, cheapest first
    assert [(c.instance_type, c.capacity, c.hourly_usd) for c in result.candidates] == [
        ("g5.xlarge", "spot", 0.30),
        ("g6.xlarge", "spot", 0.35),
    ]
    assert result.candidates[0].pricing == "spot history"


def test_a_spot_candidate_is_priced_at_the_lowest_latest_price_among_its_zones():
    market = MarketSignals(
        spot_prices={
            "g5.xlarge": {
                "us-east-1a": PriceQuote(hourly_usd=0.41, pricing="spot us-east-1a"),
                "us-east-1b": PriceQuote(hourly_usd=0.38, pricing="spot us-east-1b"),
                "us-east-1c": PriceQuote(hourly_usd=0.10, pricing="a zone the deployment does not use"),
            }
        }
    )
    [spot] = plan_for({"capacity": "spot"}, A10G, market=market).candidates
    assert (spot.hourly_usd, spot.pricing) == (0.38, "spot us-east-1b")


def test_spot_first_tries_each_type_on_spot_then_on_demand_before_the_next_type():
    # Given / When: a spot-first request over two types
    result = plan_for({"capacity": "spot-first"}, A10G, L4, market=spot_market(g5_xlarge=0.30, g6_xlarge=0.35))

    # Then each type is tried on spot, then on on-demand, the best type first
    assert [(c.instance_type, c.capacity) for c in result.candidates] == [
        ("g5.xlarge", "spot"),
        ("g5.xlarge", "on-demand"),
        ("g6.xlarge", "spot"),
        ("g6.xlarge", "on-demand"),
    ]


def test_spot_first_keeps_on_demand_when_spot_is_remembered_unavailable():
    # Given spot g5.xlarge unavailable in every zone
    unavailable = {offering_key("spot", "g5.xlarge", zone) for zone in ZONES}
    availability = offered_everywhere(["g5.xlarge"], unavailable=unavailable)

    # When planning spot-first
    result = plan_for({"capacity": "spot-first"}, A10G, availability=availability)

    # Then the on-demand offering remains and the spot one is rejected with its reason
    assert [(c.instance_type, c.capacity) for c in result.candidates] == [("g5.xlarge", "on-demand")]
    assert rejection(result, "g5.xlarge") == "spot capacity recently unavailable in us-east-1a, us-east-1b"


# -- order and scores -------------------------------------------------------------------------
def test_cheapest_on_demand_offering_comes_first_by_default():
    # Given a default request and types priced 1.006, 0.805 and 0.526
    # When planning
    result = plan_for({}, A10G, L4, T4)

    # Then candidates are cheapest first, on-demand, with their quoted prices
    assert [(c.instance_type, c.hourly_usd) for c in result.candidates] == [
        ("g4dn.xlarge", 0.526),
        ("g6.xlarge", 0.805),
        ("g5.xlarge", 1.006),
    ]
    assert result.candidates[0].capacity == "on-demand"


def test_candidate_carries_the_gpu_shape_of_its_type():
    # Given / When: planning over the 4-GPU A10G type
    result = plan_for({"gpus": 2}, A10G_4GPU)

    # Then the candidate describes that type
    best = result.candidates[0]
    assert (best.gpu_model, best.gpus, best.gpu_memory_gib, best.vcpus, best.memory_gib) == ("A10G", 4, 24.0, 48, 192.0)


def test_best_candidate_scores_one_and_scores_never_increase_down_the_list():
    # Given a default (cheapest first) request over four types
    # When planning
    result = plan_for({}, A10G, A10G_2X, L4, T4)

    # Then the best scores 1.0 and each next one scores lower
    scores = [c.score for c in result.candidates]
    assert scores[0] == 1.0
    assert all(later < earlier for earlier, later in itertools.pairwise(scores))


def test_scores_fall_with_the_instance_price_relative_to_the_cheapest_candidate():
    # Given two types, the second twice the price of the first
    # When planning
    result = plan_for({}, A10G, L4, table={"g6.xlarge": 1.0, "g5.xlarge": 2.0})

    # Then the second scores half, and says what it costs this job against the cheapest
    assert [c.score for c in result.candidates] == [1.0, 0.5]
    assert [c.price_ratio for c in result.candidates] == [1.0, 2.0]
    assert result.candidates[1].why.startswith("$2/h for this job, 2.0x the cheapest")


def test_model_preference_beats_price_and_each_model_is_priced_against_its_own_cheapest():
    # Given A10G ($1.006) preferred over the cheaper L4 ($0.805)
    # When planning
    result = plan_for({"gpu_models": ["A10G", "L4"]}, A10G, L4)

    # Then the preferred A10G goes first although the L4 is cheaper, each the cheapest of its model
    assert candidate_types(result) == ["g5.xlarge", "g6.xlarge"]
    assert [c.price_ratio for c in result.candidates] == [1.0, 1.0]


def test_nothing_fits_gives_no_candidates_and_rejects_every_type():
    # Given a request for 8 GPUs and only 1- and 4-GPU types
    # When planning
    result = plan_for({"gpus": 8}, A10G, A10G_4GPU)

    # Then there are no candidates and both types are rejected
    assert result.candidates == []
    assert sorted(r.instance_type for r in result.rejected) == ["g5.12xlarge", "g5.xlarge"]


def test_every_catalog_type_ends_up_either_a_candidate_or_rejected():
    # Given the bundled catalog, the bundled prices, and every type offered in every zone
    gpu_catalog = load_snapshot()
    availability = offered_everywhere(gpu_catalog)

    # When planning a default request
    result = plan(job_request(), signals(gpu_catalog, availability, snapshot_prices(gpu_catalog)))

    # Then each catalog type is in exactly one of the two lists
    chosen = {c.instance_type for c in result.candidates}
    rejected = {r.instance_type for r in result.rejected}
    assert chosen.isdisjoint(rejected)
    assert chosen | rejected == set(gpu_catalog)
    assert chosen, "the bundled snapshot should have at least one fit for a 1-GPU x86 job"


def test_graviton_gpus_are_rejected_when_no_nvidia_ami_for_arm64_is_configured():
    # Given an arm64 request and a deployment without a custom Graviton NVIDIA AMI
    cat = catalog(A10G, T4G)
    result = plan(job_request(arch="arm64"), signals(cat, table=PRICES, arm64_ami=False))
    # Then g5g is not offered, and the reason says why
    assert candidate_types(result) == []
    assert rejection(result, "g5g.xlarge").startswith("Graviton GPU: AWS Batch has no NVIDIA AMI for arm64")


def test_gpu_families_no_batch_nvidia_ami_supports_are_rejected_with_the_reason():
    # Given p3dn (V100), which Batch's AL2023 NVIDIA AMI does not support
    cat = {t: g for t, g in load_snapshot().items() if t in ("p3dn.24xlarge", "g5.xlarge")}
    result = plan(job_request(), signals(cat, table=snapshot_prices(cat)))
    assert candidate_types(result) == ["g5.xlarge"]
    assert rejection(result, "p3dn.24xlarge").startswith("no AWS Batch NVIDIA AMI supports this family")
