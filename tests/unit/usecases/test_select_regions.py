"""Selection across capacity regions: each region's offerings weighed with its own signals (zones, quotas, prices)
and ranked together; a request's `regions` allow-list (default: the deployment's default_regions, else home); each
region left out with its reason; the memory of unavailable offerings keyed by region; pools built in the
candidate's region."""

from __future__ import annotations

from typing import Any

import pytest

from functions.shared.domain.capacity.unavailable import UnavailableOffering, offering_key
from functions.shared.domain.core.errors import RequestRefused
from functions.shared.domain.core.vocabulary import CapacityType, DiagnosisCategory
from functions.shared.domain.jobs.steps import EnsureQueueInput
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import plan_request
from functions.shared.usecases.pools.provision import ensure_job_queue
from tests.fakes import fake_ports
from tests.fakes.ports import FakeAvailability, FakePrices, FakeQuotas, Unreachable, with_regions
from tests.unit.usecases.conftest import JOB_ID, REQUEST, selected

HOME, WEST, EU = "us-east-1", "us-west-2", "eu-west-1"
TYPE = "g5.xlarge"


def request(**fields: Any) -> JobRequest:
    return JobRequest.model_validate(REQUEST | {"instance_types": [TYPE]} | fields)


def deployment(**west: Any) -> Ports:
    """Home us-east-1 ($1.00/h) with capacity regions us-west-2 ($0.80/h unless `west` says) and eu-west-1 (no G and
    VT on-demand quota)."""
    home = fake_ports(prices=FakePrices({TYPE: 1.0}))
    return with_regions(
        home,
        {
            WEST: {"prices": FakePrices({TYPE: 0.8})} | west,
            EU: {"prices": FakePrices({TYPE: 0.9}), "quotas": FakeQuotas(values={"L-DB2E81BA": 0})},
        },
    )


def test_a_request_allowed_two_regions_ranks_their_offerings_together_cheapest_first():
    # Given us-west-2 cheaper than home for the type / When a job allowed both plans
    found = plan_request(request(regions=[HOME, WEST]), deployment())
    # Then both regions' offerings are candidates, us-west-2's first, each saying its region and zones
    assert [(c.region, c.hourly_usd) for c in found.candidates] == [(WEST, 0.8), (HOME, 1.0)]
    assert found.candidates[0].zones == [f"{WEST}a", f"{WEST}b"]
    assert found.candidates[0].why.startswith(f"in {WEST}; ")


def test_without_regions_a_job_plans_in_the_home_region_only_and_each_other_region_says_why():
    # Given a deployment without default_regions / When a job that names no region plans
    found = plan_request(request(), deployment())
    # Then its candidates are home's, and each other region is left out as not the default
    assert {c.region for c in found.candidates} == {HOME}
    left_out = {outcome.region: outcome.left_out for outcome in found.regions}
    assert left_out[HOME] is None
    assert left_out[WEST] == left_out[EU] == "not the home region, the default (send regions to use it)"


def test_the_deployments_default_regions_apply_to_a_job_that_names_none():
    # Given a deployment whose default_regions are home and us-west-2
    ports = deployment()
    ports = ports.__class__(**{**ports.__dict__, "settings": ports.settings.model_copy(
        update={"default_regions": [HOME, WEST]})})  # fmt: skip
    # When a job that names no region plans / Then it may run in both, eu-west-1 left out of the defaults
    found = plan_request(request(), ports)
    assert {c.region for c in found.candidates} == {HOME, WEST}
    assert {o.region: o.left_out for o in found.regions}[EU] == (
        "not in the deployment's default_regions (send regions)"
    )


def test_a_capacity_region_that_cannot_be_read_is_left_out_saying_why_and_the_others_are_planned():
    # Given us-west-2 answering nothing (its stack not deployed, or the region not enabled for the account)
    ports = deployment(availability=Unreachable("AuthFailure", "AWS was not able to validate the credentials."))

    # When a job allowed home and us-west-2 plans
    found = plan_request(request(regions=[HOME, WEST]), ports)

    # Then home's offering is its candidate, us-west-2 is left out with AWS's words, and a warning says so
    assert [c.region for c in found.candidates] == [HOME]
    why = {o.region: o.left_out for o in found.regions}[WEST]
    assert why == "could not be read (AuthFailure: AWS was not able to validate the credentials.)"
    assert any(w.startswith(f"capacity region {WEST} could not be read") for w in found.warnings)


def test_a_home_region_that_cannot_be_read_fails_the_plan():
    # Given a home region answering nothing / When / Then the plan fails with AWS's error (nothing to fall back on)
    ports = with_regions(fake_ports(availability=Unreachable()), {WEST: {}})
    with pytest.raises(Exception, match="UnrecognizedClientException"):
        plan_request(request(regions=[HOME, WEST]), ports)


def test_a_region_without_quota_for_the_type_is_left_out_naming_the_quota():
    # Given eu-west-1's on-demand G and VT quota at 0 / When a job allowed home and eu-west-1 plans
    found = plan_request(request(regions=[EU, HOME]), deployment())
    # Then its one candidate is home's, and eu-west-1 says it has no quota, and which
    assert [c.region for c in found.candidates] == [HOME]
    outcome = {o.region: o.left_out for o in found.regions}
    assert outcome[EU] is not None and outcome[EU].startswith("no quota (L-DB2E81BA is 0 vCPUs)")
    assert outcome[WEST] == "not in the request's regions"
    # And the rejection of the type there names the region
    assert any(r.region == EU and r.instance_type == TYPE for r in found.rejected)


def test_a_region_whose_zones_do_not_offer_the_type_is_left_out_as_not_offered():
    # Given us-west-2 offering no GPU type in its zones / When a job allowed both plans
    found = plan_request(
        request(regions=[HOME, WEST]), deployment(availability=FakeAvailability([f"{WEST}a"], offered={}))
    )
    # Then us-west-2 is left out as not offered
    assert {o.region: o.left_out for o in found.regions}[WEST] == "not offered in its zones"
    assert [c.region for c in found.candidates] == [HOME]


def test_a_region_the_deployment_has_no_capacity_in_is_refused_naming_the_field_and_the_regions():
    # Given / When a job names a region the deployment has no stack in
    with pytest.raises(RequestRefused) as refused:
        plan_request(request(regions=["ap-south-1"]), deployment())
    # Then the field is named, and the deployment's regions listed
    assert refused.value.field == "regions"
    assert all(region in str(refused.value) for region in (HOME, WEST, EU))


def test_an_offering_remembered_unavailable_in_one_region_leaves_the_same_type_in_another_a_candidate():
    # Given home's g5.xlarge on-demand remembered unavailable in both its zones
    ports = deployment()
    for zone in ("us-east-1a", "us-east-1b"):
        ports.offerings.remember_unavailable(
            offering_key(CapacityType.ON_DEMAND, TYPE, zone, HOME),
            UnavailableOffering(
                category=DiagnosisCategory.INSUFFICIENT_CAPACITY,
                cause="Batch: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
                at="2026-01-01T00:00:00Z",
                expires_at="2999-01-01T00:00:00Z",
            ),
        )
    # When a job allowed both regions plans
    found = plan_request(request(regions=[HOME, WEST]), ports)
    # Then us-west-2's offering of the type is still a candidate, home's is left out as recently unavailable
    assert [c.region for c in found.candidates] == [WEST]
    assert {o.region: o.left_out for o in found.regions}[HOME] == "recently unavailable"


def test_the_pool_of_a_capacity_regions_candidate_is_built_there_on_that_regions_network():
    # Given a job whose first candidate is in us-west-2
    ports = deployment()
    job, selection = selected(ports, instance_types=[TYPE], regions=[WEST])
    assert selection.current().region == WEST
    # When EnsureJobQueue runs
    ensure_job_queue(EnsureQueueInput(job_id=JOB_ID, request=job, selection=selection), ports)
    # Then the compute environment is created in us-west-2's Batch, on its subnets, none in home's
    [spec] = ports.in_region(WEST).pools.environments.values()  # type: ignore[attr-defined]
    assert spec["computeResources"]["subnets"] == [f"subnet-{WEST}-a", f"subnet-{WEST}-b"]
    assert ports.pools.environments == {}  # type: ignore[attr-defined]
    # And the job's record says the region
    assert ports.jobs.get_job(JOB_ID).region == WEST
