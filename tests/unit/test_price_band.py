"""Ranking by what the account pays: the price of the instance a job would start, a price band around the cheapest
candidate, unpriced types last, and a first choice held against the cheap types that fit but are blocked. Over
the bundled catalog and us-east-1 snapshot prices, so the figures are the ones a user would meet."""

from __future__ import annotations

from typing import Any

from functions.shared.adapters.ec2 import load_snapshot
from functions.shared.domain.capacity.market import MarketSignals
from functions.shared.domain.capacity.offers import Plan
from functions.shared.domain.capacity.planning import plan
from functions.shared.domain.capacity.quotas import QUOTA_NAMES, QuotaState
from functions.shared.domain.capacity.unavailable import offering_key
from functions.shared.domain.capacity.warnings import plan_warnings
from functions.shared.domain.core.money import PriceQuote
from tests.unit.builders import ZONES, job_request, offered_everywhere, signals
from tests.unit.test_selection import snapshot_prices

CATALOG = load_snapshot()
PRICES = snapshot_prices(CATALOG)
EIGHT_GPU_TYPES = {t for t, gpu in CATALOG.items() if gpu.gpus == 8}


def plan_of(market: MarketSignals | None = None, unavailable: set[str] | None = None, **fields: Any) -> Plan:
    """The plan of a request over the bundled catalog, offered in both zones, and its warnings."""
    request = job_request(**fields)
    availability = offered_everywhere(CATALOG, unavailable=unavailable or set())
    found = plan(request, signals(CATALOG, availability, PRICES, market))
    return found.model_copy(update={"warnings": plan_warnings(found, request)})


def quotas(**values: float) -> MarketSignals:
    """vCPU quotas by code, written L_DB2E81BA=0."""
    codes = {name.replace("_", "-"): value for name, value in values.items()}
    return MarketSignals(quotas={c: QuotaState(code=c, name=QUOTA_NAMES[c], vcpus=v) for c, v in codes.items()})


def priced(result: Plan) -> list[str]:
    return [c.instance_type for c in result.candidates if c.hourly_usd is not None]


# -- the price of the instance, not of a GPU ---------------------------------------------------------------------
def test_a_one_gpu_job_needing_40_gib_per_gpu_starts_on_the_cheapest_instance_not_the_cheapest_gpu_hour():
    # Given a 1-GPU job needing 40 GiB of GPU memory: g6e (one 44.7 GiB L40S, $1.861/h) and 8-GPU p4d/p4de fit,
    # and p4d's A100s cost less per GPU-hour ($2.74) than the g6e's one
    # When planning
    result = plan_of(gpus=1, min_gpu_memory_gib=40)

    # Then the first choice is the cheapest instance, and every priced fallback is a 1-GPU type within 3x of it
    first = result.candidates[0]
    assert (first.instance_type, first.hourly_usd, first.price_ratio) == ("g6e.xlarge", 1.861, 1.0)
    assert all(CATALOG[t].gpus == 1 and PRICES[t] <= 3 * 1.861 for t in priced(result))
    assert not EIGHT_GPU_TYPES & set(priced(result))


def test_an_instance_beyond_the_price_band_is_rejected_naming_price_band_and_how_to_widen_it():
    # Given the same 40 GiB job: the 1-GPU p5.4xlarge costs $6.88/h, 3.7x the g6e.xlarge
    # When planning with the default band (3)
    result = plan_of(min_gpu_memory_gib=40)

    # Then p5.4xlarge and the 8-GPU types are left out, naming price_band and the band that would allow them
    [p5] = [r for r in result.rejected if r.instance_type == "p5.4xlarge"]
    assert p5.field == "price_band"
    assert (
        p5.reason == "on-demand $6.88/h is 3.7x the cheapest candidate, beyond price_band 3 (widen it to 3.7 to try it)"
    )
    assert {r.instance_type for r in result.rejected if r.field == "price_band"} >= {"p4d.24xlarge", "p4de.24xlarge"}


def test_a_wider_price_band_lets_a_pricier_one_gpu_type_in_and_still_no_eight_gpu_one():
    # Given the 40 GiB job with price_band 3.7
    # When planning
    result = plan_of(min_gpu_memory_gib=40, price_band=3.7)

    # Then p5.4xlarge is a fallback, the 8-GPU types are not
    assert "p5.4xlarge" in priced(result) and not EIGHT_GPU_TYPES & set(priced(result))


def test_an_eight_gpu_type_a_wide_band_allows_says_what_share_of_it_the_job_pays_for():
    # Given a band wide enough for p4d.24xlarge (11.8x the g6e.xlarge)
    # When planning the 40 GiB job
    result = plan_of(min_gpu_memory_gib=40, price_band=12)

    # Then its why says its price is for the whole instance, of which the job uses one GPU
    [p4d] = [c for c in result.candidates if c.instance_type == "p4d.24xlarge"]
    assert p4d.why.startswith("$21.96/h for this job (1 of its 8 GPUs), 12x the cheapest")


def test_a_one_gpu_job_never_falls_back_to_an_eight_gpu_type_by_default():
    # Given a default 1-GPU request over the whole catalog
    # When planning
    result = plan_of()

    # Then it starts on the cheapest instance, and no priced candidate costs more than 3x it
    assert (result.candidates[0].instance_type, result.candidates[0].hourly_usd) == ("g4dn.xlarge", 0.526)
    assert all(PRICES[t] <= 3 * 0.526 for t in priced(result))
    assert not EIGHT_GPU_TYPES & set(priced(result))


# -- unknown prices -------------------------------------------------------------------------------------------------
def test_candidates_without_a_known_price_come_after_every_priced_one_smallest_first_with_a_warning():
    # Given the bundled prices, which do not know the g7e, p5e and p6-b300 types
    # When planning a 1-GPU job needing 40 GiB per GPU (g6e, g7e, and 8-GPU P types fit) that allows unpriced types
    result = plan_of(min_gpu_memory_gib=40, allow_unpriced=True)

    # Then every priced candidate comes first, then the unpriced ones, the fewest GPUs first (no other family's
    # 8-GPU type cuts in), and a warning says so
    prices = [c.hourly_usd for c in result.candidates]
    first_unpriced = prices.index(None)
    assert all(p is not None for p in prices[:first_unpriced]) and all(p is None for p in prices[first_unpriced:])
    gpus = [c.gpus for c in result.candidates[first_unpriced:]]
    assert gpus == sorted(gpus) and gpus[0] == 1
    assert any(w.startswith("no known price for g7e.2xlarge, g7e.4xlarge") for w in result.warnings), result.warnings
    assert "no known price" in result.candidates[first_unpriced].why


def test_the_band_leaves_out_an_unpriced_type_no_priced_candidate_has_as_many_of_its_gpus_naming_allow_unpriced():
    # Given the bundled prices: p5e.48xlarge (8 H200s) has none, p5en.48xlarge (8 H200s too) costs $63.30/h, and the
    # 8-GPU p4d.24xlarge ($21.96/h) is beyond the band of a 1-GPU job
    # When planning a 1-GPU job that does not allow unpriced types
    result = plan_of()

    # Then no candidate is of unknown price (p5e is not tried while p4d, priced, is left out)
    assert all(c.hourly_usd is not None for c in result.candidates)
    assert "p4d.24xlarge" in {r.instance_type for r in result.rejected if r.field == "price_band"}
    # And p5e is left out by the band, naming allow_unpriced and the priced H200 type beyond it
    [p5e] = [r for r in result.rejected if r.instance_type == "p5e.48xlarge"]
    assert (p5e.field, p5e.region) == ("allow_unpriced", None)
    assert p5e.reason == (
        "no known on-demand price, and p5en.48xlarge, priced with as many of its GPUs (8 H200 GPUs), is beyond "
        "price_band (allow_unpriced to try it anyway)"
    )
    # And a type whose GPUs no priced type has (the RTX PRO Server 6000 of g7e) says so
    [g7e] = [r for r in result.rejected if r.instance_type == "g7e.2xlarge"]
    assert g7e.reason.startswith("no known on-demand price, and no priced candidate has as many of its GPUs")


def test_an_unpriced_type_with_as_many_of_the_same_gpus_as_a_priced_candidate_is_a_candidate_and_says_which():
    # Given an 8-GPU job allowed up to 8x the cheapest: p5en.48xlarge (8 H200s, $63.30/h) is within the band
    # When planning
    result = plan_of(gpus=8, min_gpu_memory_gib=100, price_band=8)

    # Then p5e.48xlarge (8 H200s, no known price) is a candidate after the priced ones, saying what bounds it
    [p5e] = [c for c in result.candidates if c.instance_type == "p5e.48xlarge"]
    assert (p5e.hourly_usd, p5e.comparable_to) == (None, "p5en.48xlarge")
    assert p5e.why.startswith("no known price; as many H200 GPUs as p5en.48xlarge: after every priced type")
    assert result.candidates[-1].instance_type != "p5en.48xlarge"
    # And the B300 type, whose GPUs no priced type has, is not
    assert "p6-b300.48xlarge" not in {c.instance_type for c in result.candidates}
    assert any(w.startswith("no known price for p5e.48xlarge: tried after every priced candidate; each has as many")
               for w in result.warnings), result.warnings  # fmt: skip


def test_allow_unpriced_lets_in_an_unpriced_type_the_band_would_leave_out_and_says_so():
    # Given the 1-GPU job of the default band, which leaves p5e.48xlarge out
    # When it allows unpriced types
    result = plan_of(allow_unpriced=True)

    # Then p5e.48xlarge is a candidate, after every priced one, and its why names allow_unpriced
    [p5e] = [c for c in result.candidates if c.instance_type == "p5e.48xlarge"]
    assert p5e.comparable_to is None and "allowed by allow_unpriced" in p5e.why
    assert "p5e.48xlarge" not in {r.instance_type for r in result.rejected}


def test_a_spot_offering_whose_spot_price_is_unknown_stays_a_candidate_when_its_type_has_an_on_demand_price():
    # Given spot prices that could not be read (none known) and on-demand prices for the types
    # When planning a spot job
    result = plan_of(capacity="spot", instance_types=["g4dn.xlarge", "g6.xlarge"])

    # Then its offerings are still candidates (only the market's price is unknown, not the type's)
    assert [c.instance_type for c in result.candidates] == ["g4dn.xlarge", "g6.xlarge"]


# -- spot and GPU model preference ----------------------------------------------------------------------------------
SPOT_AT_40_PERCENT = {
    t: {z: PriceQuote(hourly_usd=round(0.4 * price, 4), pricing="spot") for z in ZONES} for t, price in PRICES.items()
}


def test_spot_first_holds_on_demand_against_on_demand_so_it_keeps_its_on_demand_fallbacks():
    # Given spot at 40% of on-demand
    # When planning a spot-first job
    result = plan_of(MarketSignals(spot_prices=SPOT_AT_40_PERCENT), capacity="spot-first")

    # Then on-demand g5.xlarge ($1.006/h, 1.9x the cheapest on-demand) stays, although 4.8x the cheapest spot offer
    [g5] = [c for c in result.candidates if (c.instance_type, c.capacity) == ("g5.xlarge", "on-demand")]
    assert g5.price_ratio == round(1.006 / 0.526, 4)
    cheapest_type = [c for c in result.candidates if c.instance_type == "g4dn.xlarge"]
    assert result.candidates[:2] == cheapest_type, "spot then on-demand of the cheapest type first"


def test_spot_is_held_against_on_demand_too_so_a_new_accounts_spot_first_job_gets_no_pricey_eight_gpu_spot_host():
    # Given a new account: no spot G and VT, P4 or P5 vCPUs (spot P6 has no published quota), on-demand G allowed
    market = quotas(L_3819A6DF=0, L_7212CCBC=0, L_C4BD4855=0)
    market.spot_prices = SPOT_AT_40_PERCENT

    # When planning a spot-first 1-GPU job
    result = plan_of(market, capacity="spot-first")

    # Then the only priced spot offering left, an 8-GPU p6-b200, is no candidate: it costs 87x the cheapest on-demand
    # one (the unpriced p6-b300 stays, last, as every unpriced offering does)
    assert not [c for c in result.candidates if c.capacity == "spot" and c.hourly_usd is not None]
    reasons = [r.reason for r in result.rejected if r.instance_type == "p6-b200.48xlarge"]
    assert any(reason.startswith("spot $45.57/h is 86.6x the cheapest candidate") for reason in reasons)
    assert result.candidates[0].instance_type == "g4dn.xlarge" and result.outside_band is None


def test_with_gpu_models_each_model_is_held_against_its_own_cheapest():
    # Given L4 preferred over T4 (whose g4dn.xlarge is far cheaper than any L4)
    # When planning
    result = plan_of(gpu_models=["L4", "T4"])

    # Then the L4s are not priced out by the T4: the first choice is the cheapest L4
    assert result.candidates[0].instance_type == "g6.xlarge" and result.candidates[0].price_ratio == 1.0
    assert result.outside_band is None


# -- the cheap types are all blocked -----------------------------------------------------------------------------------
def test_with_no_g_and_vt_quota_the_first_choice_is_held_against_the_cheapest_blocked_type():
    # Given a new account: no on-demand G and VT vCPUs
    # When planning a 1-GPU job with no other constraint
    result = plan_of(quotas(L_DB2E81BA=0))

    # Then the first choice is the cheapest P instance, and the plan says loudly what it costs against g4dn.xlarge
    first = result.candidates[0]
    assert (first.instance_type, first.hourly_usd) == ("p5.4xlarge", 6.88)
    outside = result.outside_band
    assert outside is not None
    assert (outside.cheapest_type, outside.cheapest_usd, outside.needed_band) == ("g4dn.xlarge", 0.526, 13.1)
    assert outside.refused
    assert outside.blocked_by == ["G and VT types blocked by quota L-DB2E81BA (0 vCPUs)"]
    assert result.warnings[0] == (
        "G and VT types blocked by quota L-DB2E81BA (0 vCPUs): first choice p5.4xlarge costs 13x g4dn.xlarge "
        "($6.88/h against $0.526/h), beyond price_band 3: POST /jobs refuses it unless price_band is at least 13.1"
    )


def test_a_band_wide_enough_for_the_first_choice_allows_it_and_still_says_so_loudly():
    # Given no on-demand G and VT vCPUs, and a request whose band allows the first choice's 13.1x
    # When planning
    result = plan_of(quotas(L_DB2E81BA=0), price_band=13.1)

    # Then it is not refused, and the plan still says first what blocks the cheap types and what it costs
    assert result.candidates[0].instance_type == "p5.4xlarge"
    assert result.outside_band is not None and not result.outside_band.refused
    assert result.warnings[0].endswith("13x g4dn.xlarge ($6.88/h against $0.526/h), within price_band 13.1: "
                                       "this job pays that")  # fmt: skip


def test_cheap_types_remembered_unavailable_block_them_too():
    # Given every type under $3/h remembered unavailable on-demand in both zones
    cheap = {t for t, price in PRICES.items() if price < 3}
    unavailable = {offering_key("on-demand", t, z) for t in cheap for z in ZONES}

    # When planning
    result = plan_of(unavailable=unavailable)

    # Then the first choice is held against g4dn.xlarge, and the plan names the shortage
    assert result.outside_band is not None and result.outside_band.cheapest_type == "g4dn.xlarge"
    assert result.outside_band.blocked_by[0].startswith("g4dn.xlarge, g4dn.2xlarge and ")
    assert result.outside_band.blocked_by[0].endswith(" recently unavailable")


def test_a_blocked_cheap_type_within_the_band_of_the_first_choice_is_no_breach():
    # Given g4dn.xlarge remembered unavailable: the next cheapest, g4dn.2xlarge, is 1.4x it
    unavailable = {offering_key("on-demand", "g4dn.xlarge", z) for z in ZONES}
    assert plan_of(unavailable=unavailable).outside_band is None


# -- the cheapest fix first ------------------------------------------------------------------------------------------
def test_a_refusal_lists_the_smallest_quota_increase_that_would_let_the_job_run_first():
    # Given no on-demand G, VT or P vCPUs: nothing can start
    # When planning a 1-GPU job
    result = plan_of(quotas(L_DB2E81BA=0, L_417A185B=0))

    # Then the first rejection is the cheapest type of the smallest increase (4 vCPUs), with its command, and the
    # quota fixes come before every other reason, by the vCPUs each needs
    assert result.candidates == []
    first = result.rejected[0]
    assert (first.instance_type, first.field) == ("g4dn.xlarge", "capacity")
    assert "--quota-code L-DB2E81BA --desired-value 8" in first.reason
    quota_fixes = [r for r in result.rejected if "--quota-code" in r.reason]
    assert result.rejected[: len(quota_fixes)] == quota_fixes
    needed = [CATALOG[r.instance_type].vcpus for r in quota_fixes]
    assert needed == sorted(needed)
