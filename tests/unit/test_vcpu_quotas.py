"""Which EC2 vCPU quota bounds each GPU family, on-demand and spot, and what selection and diagnosis make of it:
spot P5 has its own quota (All P5 Spot Instance Requests), apart from All P4, P3 and P2 Spot Instance Requests."""

from __future__ import annotations

import pytest

from functions.shared.adapters.ec2 import load_snapshot
from functions.shared.domain.capacity.market import MarketSignals
from functions.shared.domain.capacity.quotas import QUOTA_NAMES, QuotaState, vcpu_quota_code
from functions.shared.domain.diagnosis.runnable import diagnose
from tests.unit.builders import gpu_type
from tests.unit.test_fleet_diagnosis import snapshot
from tests.unit.test_selection import candidate_types, plan_for, rejection

H100 = gpu_type("p5.48xlarge", gpu_model="H100", gpus=8, gpu_memory_gib=80.0, vcpus=192, memory_gib=2048.0)
A100 = gpu_type("p4d.24xlarge", gpu_model="A100", gpus=8, gpu_memory_gib=40.0, vcpus=96, memory_gib=1152.0)
B200 = gpu_type("p6-b200.48xlarge", gpu_model="B200", gpus=8, gpu_memory_gib=179.0, vcpus=192, memory_gib=2048.0)
TABLE = {"p5.48xlarge": 55.04, "p4d.24xlarge": 21.96, "p6-b200.48xlarge": 113.93}


@pytest.mark.parametrize(
    ("instance_type", "on_demand", "spot"),
    [
        ("g4dn.xlarge", "L-DB2E81BA", "L-3819A6DF"),
        ("g5.xlarge", "L-DB2E81BA", "L-3819A6DF"),
        ("g5g.xlarge", "L-DB2E81BA", "L-3819A6DF"),
        ("g6e.xlarge", "L-DB2E81BA", "L-3819A6DF"),
        ("gr6.4xlarge", "L-DB2E81BA", "L-3819A6DF"),
        ("g7e.2xlarge", "L-DB2E81BA", "L-3819A6DF"),
        ("p3dn.24xlarge", "L-417A185B", "L-7212CCBC"),
        ("p4d.24xlarge", "L-417A185B", "L-7212CCBC"),
        ("p4de.24xlarge", "L-417A185B", "L-7212CCBC"),
        ("p5.4xlarge", "L-417A185B", "L-C4BD4855"),
        ("p5.48xlarge", "L-417A185B", "L-C4BD4855"),
        ("p5e.48xlarge", "L-417A185B", "L-C4BD4855"),
        ("p5en.48xlarge", "L-417A185B", "L-C4BD4855"),
        # No published spot quota names P6 (B200, B300, GB200): on-demand only.
        ("p6-b200.48xlarge", "L-417A185B", None),
        ("p6-b300.48xlarge", "L-417A185B", None),
        ("p6e-gb200.36xlarge", "L-417A185B", None),
    ],
)
def test_each_gpu_family_is_bounded_by_the_quota_that_names_it(instance_type, on_demand, spot):
    assert (vcpu_quota_code(instance_type, spot=False), vcpu_quota_code(instance_type, spot=True)) == (on_demand, spot)


def test_every_quota_a_catalog_type_is_bounded_by_has_a_name():
    # Given every GPU type GPU Pilot knows, on both capacity types / Then each code it is bounded by is a known one
    codes = {vcpu_quota_code(t, spot) for t in load_snapshot() for spot in (False, True)} - {None}
    assert codes == set(QUOTA_NAMES)
    assert QUOTA_NAMES["L-C4BD4855"] == "All P5 Spot Instance Requests"
    assert QUOTA_NAMES["L-7212CCBC"] == "All P4, P3 and P2 Spot Instance Requests"


def quotas(**values: float) -> MarketSignals:
    return MarketSignals(
        quotas={code: QuotaState(code=code, name=QUOTA_NAMES[code], vcpus=v) for code, v in values.items()}
    )


def test_spot_p5_is_bounded_by_its_own_quota_not_by_the_p4_p3_p2_one():
    # Given no spot P5 vCPUs, and room for spot P4/P3/P2
    market = quotas(**{"L-C4BD4855": 0, "L-7212CCBC": 384})

    # When planning a spot job that an H100 or an A100 host could run
    result = plan_for({"capacity": "spot", "gpus": 8}, H100, A100, table=TABLE, market=market)

    # Then the H100 is refused by the P5 quota, with the command that raises it; the A100 stays
    assert candidate_types(result) == ["p4d.24xlarge"]
    reason = rejection(result, "p5.48xlarge")
    assert "spot quota L-C4BD4855 (All P5 Spot Instance Requests), which is 0" in reason
    assert "--quota-code L-C4BD4855" in reason
    assert result.candidates[0].quota_code == "L-7212CCBC"


def test_a_spot_family_no_published_quota_covers_is_not_rejected_for_quota():
    # Given every P spot quota at 0
    market = quotas(**{"L-C4BD4855": 0, "L-7212CCBC": 0})

    # When planning a spot job a B200 host could run
    result = plan_for({"capacity": "spot", "gpus": 8}, B200, table=TABLE, market=market)

    # Then the B200 is a candidate: no quota GPU Pilot can read bounds it, so none is claimed
    [only] = result.candidates
    assert (only.instance_type, only.quota_code, only.quota_instances) == ("p6-b200.48xlarge", None, None)


def spot_p5_pool_snapshot(quota: QuotaState | None = None, unavailable: str | None = None):
    given = snapshot(runnable_minutes=20)
    given.environment.instance_types = ["p5.48xlarge"]
    given.environment.spot = True
    given.instance_vcpus = {"p5.48xlarge": 192}
    given.quota = quota
    given.quota_unavailable = unavailable
    return given


def test_a_spot_p5_pool_that_launched_nothing_is_told_to_raise_the_p5_spot_quota():
    # Given a spot p5.48xlarge pool with no instance after 20 minutes, and a spot P5 quota of 0
    quota = QuotaState(code="L-C4BD4855", name=QUOTA_NAMES["L-C4BD4855"], vcpus=0)

    # When diagnosing / Then the quota named is the P5 spot one, with the command for enough vCPUs
    result = diagnose(spot_p5_pool_snapshot(quota))
    assert "L-C4BD4855 (All P5 Spot Instance Requests) is 0" in result.reason
    assert "--quota-code L-C4BD4855 --desired-value 768" in result.recommendation


def test_a_quota_that_cannot_be_read_is_said_in_the_evidence_and_named_in_the_recommendation():
    # Given a spot p5 pool that launched nothing, and Service Quotas refusing to tell its quota
    result = diagnose(spot_p5_pool_snapshot(unavailable="GetServiceQuota: AccessDeniedException"))

    # Then the diagnosis does not claim the quota is the cause, says why it could not tell, and names the quota
    assert result.reason.endswith("Batch launched no instance for it")
    assert result.evidence["quota_unavailable"] == "GetServiceQuota: AccessDeniedException"
    assert "quota L-C4BD4855, All P5 Spot Instance Requests" in result.recommendation
