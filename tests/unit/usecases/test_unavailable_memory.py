"""The memory of unavailable offerings keeps why: its category, a one-line cause with counts and time, and until
when; a plan says it, and a request may ignore the memory to retry on purpose."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.capacity.unavailable import UNAVAILABLE_TTL_SECONDS, clock_minute
from functions.shared.domain.core.clock import now_iso, seconds_between
from functions.shared.domain.core.vocabulary import DiagnosisCategory
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.usecases.capacity.fallback import leave_offering
from functions.shared.usecases.capacity.select import plan_request
from tests.unit.usecases.conftest import REQUEST

T4 = {"instance_types": ["g4dn.xlarge"]}


def request(**fields: Any) -> JobRequest:
    return JobRequest.model_validate(REQUEST | T4 | fields)


def unregistered(instances: int) -> Diagnosis:
    """A diagnosis of instances whose ECS agent never registered, with their evidence."""
    found = [{"instance_id": f"i-{n}", "instance_type": "g4dn.xlarge", "age_seconds": 700} for n in range(instances)]
    return Diagnosis(
        category=DiagnosisCategory.ECS_AGENT_NOT_REGISTERED,
        reason=f"{instances} instance(s) running but never registered with ECS",
        evidence={"instances_unregistered": found},
        recommendation="...",
    )


def test_a_fallback_remembers_its_offering_with_the_cause_in_counts_and_time_and_its_expiry(ports):
    # Given the first choice's instances failed to register, and the job falls back
    candidate = plan_request(request(), ports).candidates[0]

    # When the offering is left behind
    before = now_iso()
    leave_offering(candidate, unregistered(2), ports)

    # Then each of its zones is remembered with the category, the cause and the expiry
    remembered = ports.offerings.unavailable_offerings()
    assert set(remembered) == {f"on-demand:us-east-1:g4dn.xlarge:{zone}" for zone in candidate.zones}
    memory = next(iter(remembered.values()))
    assert memory.category == DiagnosisCategory.ECS_AGENT_NOT_REGISTERED
    assert memory.cause == f"ECS agent did not register on 2 instances at {clock_minute(memory.at)}"
    assert memory.at >= before
    assert seconds_between(memory.at, memory.expires_at) == UNAVAILABLE_TTL_SECONDS


def test_the_plan_says_why_an_offering_is_left_out_and_until_when(ports):
    # Given g4dn.xlarge remembered as unavailable after its instances failed to register
    leave_offering(plan_request(request(), ports).candidates[0], unregistered(2), ports)

    # When planning again
    found = plan_request(request(), ports)

    # Then it is rejected with the cause, not "capacity recently unavailable"
    memory = next(iter(ports.offerings.unavailable_offerings().values()))
    [rejected] = [r for r in found.rejected if r.instance_type == "g4dn.xlarge"]
    assert rejected.reason.startswith("on-demand: ECS agent did not register on 2 instances at ")
    assert f"(remembered until {clock_minute(memory.expires_at)})" in rejected.reason
    assert "recently unavailable" not in rejected.reason
    assert found.candidates == []


def test_a_request_that_ignores_the_memory_gets_the_remembered_offering_back(ports):
    # Given g4dn.xlarge remembered as unavailable
    leave_offering(plan_request(request(), ports).candidates[0], unregistered(1), ports)

    # When a request asks to ignore the memory (a retry on purpose)
    found = plan_request(request(ignore_unavailable=True), ports)

    # Then the offering is a candidate again in every zone
    assert [c.instance_type for c in found.candidates] == ["g4dn.xlarge"]
    assert found.candidates[0].unavailable_zones == []
