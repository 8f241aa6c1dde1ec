"""The pools' states and the sweeps' reports, held by the DynamoDB adapter (on moto) and by the fakes alike:
a pool's state is written only over the version it was read at, so two sweeps cannot lose each other's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from functions.shared import constants as c
from functions.shared.adapters.dynamodb_codec import serialize
from functions.shared.adapters.pool_store import DynamoPoolStates
from functions.shared.adapters.table_store import DynamoHealthStore
from functions.shared.domain.core.vocabulary import FindingKind, Severity, SweepStatus
from functions.shared.domain.diagnosis.findings import Finding, HealthReport
from functions.shared.domain.pools.states import PoolState
from functions.shared.ports import PoolStates
from tests.fakes import FakePoolStates

POOL = "gpupilot-od-x8664-g5-xlarge"


@pytest.fixture(params=["dynamodb", "fake"])
def pools(request: pytest.FixtureRequest) -> Iterator[PoolStates]:
    if request.param == "fake":
        yield FakePoolStates()
    else:
        yield DynamoPoolStates(request.getfixturevalue("deployment").table_name)


def test_a_pool_state_is_read_back_with_its_new_version(pools: PoolStates) -> None:
    assert pools.pool_states() == {}
    assert pools.save_pool_state(PoolState(pool=POOL, idle_since="2026-11-23T10:00:00.000Z"))
    stored = pools.pool_states()[POOL]
    assert (stored.idle_since, stored.version) == ("2026-11-23T10:00:00.000Z", 1)


def test_of_two_sweeps_that_read_the_same_version_only_the_first_write_lands(pools: PoolStates) -> None:
    # Given a pool state both sweeps read at version 1
    pools.save_pool_state(PoolState(pool=POOL))
    read = pools.pool_states()[POOL]
    # When both write over it
    first = pools.save_pool_state(read.model_copy(update={"registration_failures": 1}))
    second = pools.save_pool_state(read.model_copy(update={"idle_since": "2026-11-23T10:00:00.000Z"}))
    # Then the second is refused and the first stands
    assert (first, second) == (True, False)
    stored = pools.pool_states()[POOL]
    assert (stored.registration_failures, stored.idle_since, stored.version) == (1, None, 2)


def test_a_report_is_stored_compressed_and_one_written_as_a_map_still_reads(deployment) -> None:
    store = DynamoHealthStore(deployment.table_name)
    finding = Finding(kind=FindingKind.IDLE_POOL, severity=Severity.INFO, resource=POOL, recommendation="none")
    report = HealthReport(
        sweep_id="sweep-new", swept_at="2026-11-23T10:00:00.000Z", findings=[finding], summary={"findings": 1}
    )
    store.save_report(report)
    assert store.get_report("sweep-new") == report
    assert store.latest_report() == report
    # A report an earlier version wrote as a nested map
    old = report.model_copy(update={"sweep_id": "sweep-old", "status": SweepStatus.COMPLETE})
    boto3.client("dynamodb").put_item(
        TableName=deployment.table_name,
        Item={c.TABLE_PK: {"S": "SWEEP#sweep-old"}, c.TABLE_SK: {"S": "REPORT"}, "report": serialize(old)},
    )
    assert store.get_report("sweep-old") == old


def test_a_report_is_stored_by_its_id_and_as_the_latest_in_one_call(deployment) -> None:
    # Given the health store, and the calls its client makes
    dynamodb = boto3.client("dynamodb")
    calls: list[str] = []
    dynamodb.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    store = DynamoHealthStore(deployment.table_name, dynamodb)
    report = HealthReport(sweep_id="sweep-1", swept_at="2026-11-23T10:00:00.000Z", findings=[], summary={})

    # When a completed sweep's report is saved
    store.save_report(report)

    # Then both copies are written, in one call
    assert (store.get_report("sweep-1"), store.latest_report()) == (report, report)
    assert calls[0] == "TransactWriteItems" and calls.count("TransactWriteItems") == 1
    assert "PutItem" not in calls


def test_a_sweep_that_finishes_after_a_newer_one_is_stored_by_its_id_only(deployment) -> None:
    # Given the report of a sweep that began at 10:05 saved as the latest
    store = DynamoHealthStore(deployment.table_name)
    newer = HealthReport(sweep_id="sweep-newer", swept_at="2026-11-23T10:05:00.000Z", findings=[], summary={})
    store.save_report(newer)

    # When a sweep that began at 10:00 finishes after it
    older = newer.model_copy(update={"sweep_id": "sweep-older", "swept_at": "2026-11-23T10:00:00.000Z"})
    store.save_report(older)

    # Then the older one is kept by its id, and the latest stays the newer one
    assert (store.get_report("sweep-older"), store.latest_report()) == (older, newer)


@pytest.fixture(params=["dynamodb", "fake"])
def ledger(request: pytest.FixtureRequest) -> Iterator[Any]:
    from functions.shared.adapters.table_store import DynamoWasteLedger
    from tests.fakes.ports import FakeWasteLedger

    if request.param == "fake":
        yield FakeWasteLedger()
    else:
        yield DynamoWasteLedger(request.getfixturevalue("deployment").table_name)


def waste(reason: str, started_at: str, at: str, day: str = "2026-11-23", instance_id: str = "i-1") -> Any:
    """What a sweep saw: the instance wasting for `reason` from `started_at` until `at`, at $3.6 an hour."""
    from functions.shared.domain.cost.waste import WasteEntry

    return WasteEntry(instance_id=instance_id, reason=reason, pool=POOL, instance_type="g5.xlarge", day=day,
                      seconds=0, hourly_usd=3.6, usd=0, pricing="test", started_at=started_at, at=at)  # fmt: skip


def test_waste_is_restated_upwards_only_and_read_by_day(ledger: Any) -> None:
    assert ledger.record_waste(waste("never_registered", "2026-11-23T10:00:00Z", "2026-11-23T10:01:00Z")) == 0.06
    assert ledger.record_waste(waste("never_registered", "2026-11-23T10:00:00Z", "2026-11-23T10:03:00Z")) == 0.12
    # an older sweep's shorter span changes nothing
    assert ledger.record_waste(waste("never_registered", "2026-11-23T10:00:00Z", "2026-11-23T10:02:00Z")) == 0.0
    ledger.record_waste(waste("never_registered", "2026-11-25T10:00:00Z", "2026-11-25T10:05:00Z", day="2026-11-25"))
    assert [e.usd for e in ledger.waste_between("2026-11-23", "2026-11-24")] == [0.18]


def test_an_instance_seen_under_two_reasons_is_charged_each_second_once(ledger: Any) -> None:
    # Given an instance charged from launch as disconnected, then seen (a sweep later) as never registered
    assert ledger.record_waste(waste("agent_disconnected", "2026-11-23T10:00:00Z", "2026-11-23T10:05:00Z")) == 0.3
    added = ledger.record_waste(waste("never_registered", "2026-11-23T10:00:00Z", "2026-11-23T10:10:00Z"))
    # And, in an idle pool, as idle for part of the same span
    idle = ledger.record_waste(waste("idle", "2026-11-23T10:08:00Z", "2026-11-23T10:10:00Z"))
    # Then only the five minutes not charged yet are added, under the reason they were seen under
    assert (added, idle) == (0.3, 0.0)
    entries = ledger.waste_between("2026-11-23", "2026-11-23")
    assert {e.reason: e.usd for e in entries} == {"agent_disconnected": 0.3, "never_registered": 0.3}
    assert sum(e.seconds for e in entries) == 600  # its ten minutes, once


def test_two_sweeps_charging_one_instance_at_once_charge_it_once(deployment: Any) -> None:
    from functions.shared.adapters.table_store import DynamoWasteLedger

    # Given two sweeps that read the instance's ledger before either wrote it
    dynamodb = boto3.client("dynamodb")
    first = DynamoWasteLedger(deployment.table_name, dynamodb)
    second = DynamoWasteLedger(deployment.table_name, boto3.client("dynamodb"))
    sighting = waste("agent_disconnected", "2026-11-23T10:00:00Z", "2026-11-23T10:05:00Z")
    read, charged_by_second = dynamodb.get_item, []

    def read_then_let_the_other_write(**kwargs: Any) -> Any:
        answer = read(**kwargs)
        if not charged_by_second:
            charged_by_second.append(second.record_waste(sighting))
        return answer

    dynamodb.get_item = read_then_let_the_other_write
    # When both charge the same sighting / Then the one that wrote second finds it charged, and adds nothing
    assert first.record_waste(sighting) == 0.0
    assert charged_by_second == [0.3]
    assert [e.usd for e in first.waste_between("2026-11-23", "2026-11-23")] == [0.3]


def test_waste_written_one_item_per_reason_is_still_read(deployment: Any) -> None:
    from functions.shared.adapters.table_store import DynamoWasteLedger

    # Given an entry stored, by an earlier version, under its day, instance and reason
    old = waste("idle", "", "", instance_id="i-old").model_copy(update={"usd": 0.25, "seconds": 250})
    key = {c.TABLE_PK: {"S": "WASTE"}, c.TABLE_SK: {"S": "2026-11-23#i-old#idle"}}
    boto3.client("dynamodb").put_item(TableName=deployment.table_name, Item=key | {"entry": serialize(old)})
    # When / Then
    assert DynamoWasteLedger(deployment.table_name).waste_between("2026-11-23", "2026-11-23") == [old]


def shared(instance_id: str = "i-1", day: str = "2026-11-23") -> Any:
    """An instance's ledger of shares, before any attempt was priced on it: a $3.6/h 4-GPU host."""
    from functions.shared.domain.cost.shares import SharedInstance

    return SharedInstance(instance_id=instance_id, pool=POOL, instance_type="g4dn.12xlarge", day=day, pricing="test")


def quarter(stop: str, seconds: float = 60) -> Any:
    """A 1-GPU attempt on the 4-GPU host, `seconds` long up to `stop`."""
    from functions.shared.domain.cost.shares import occupant

    return occupant(stop, seconds, 0.25, 3.6)


def test_an_instances_unused_share_is_restated_by_each_attempt_and_read_by_its_day(ledger: Any) -> None:
    # Given two 1-GPU attempts, side by side for their minute, on a 4-GPU host that registered on the 23rd
    assert ledger.record_share(shared(), "job-a#1", quarter("2026-11-23T10:01:00.000Z")).usd == 0.045
    written = ledger.record_share(shared(), "job-b#1", quarter("2026-11-23T10:01:00.000Z"))

    # Then half the host's minute is unused (not three quarters twice), priced again it adds nothing, and /costs
    # reads it under the day the host registered
    assert (written.usd, written.seconds) == (0.03, 30.0)
    assert ledger.record_share(shared(), "job-b#1", quarter("2026-11-23T10:01:00.000Z")) is None
    [entry] = ledger.waste_between("2026-11-23", "2026-11-23")
    assert (entry.reason, entry.instance_id, entry.usd) == ("unused_share", "i-1", 0.03)
    assert ledger.waste_between("2026-11-24", "2026-11-24") == []


def test_two_attempts_of_one_host_priced_at_once_are_both_in_its_ledger(deployment: Any) -> None:
    from functions.shared.adapters.table_store import DynamoWasteLedger

    # Given two attempts on one host priced by two functions, each reading the ledger before the other wrote
    dynamodb = boto3.client("dynamodb")
    first = DynamoWasteLedger(deployment.table_name, dynamodb)
    second = DynamoWasteLedger(deployment.table_name, boto3.client("dynamodb"))
    read, written_by_second = dynamodb.get_item, []

    def read_then_let_the_other_write(**kwargs: Any) -> Any:
        answer = read(**kwargs)
        if not written_by_second:
            written_by_second.append(second.record_share(shared(), "job-b#1", quarter("2026-11-23T10:01:00.000Z")))
        return answer

    dynamodb.get_item = read_then_let_the_other_write
    # When both write / Then the write over the stale version is refused, retried, and the ledger holds both
    ledger = first.record_share(shared(), "job-a#1", quarter("2026-11-23T10:01:00.000Z"))
    assert ledger is not None and sorted(ledger.occupants) == ["job-a#1", "job-b#1"] and ledger.usd == 0.03
    assert [e.usd for e in first.waste_between("2026-11-23", "2026-11-23")] == [0.03]


# -- a pool's use and retirement: claims and retirements exclude each other ------------------------------------
def test_a_claim_and_a_retirement_exclude_each_other_and_the_sweep_s_writes_keep_the_claim(pools: PoolStates) -> None:
    # Given a pool a workflow claimed, and the sweep's memory written after it
    assert pools.claim_pool(POOL, "gpupilot-od-x8664-g5", "2026-11-23T10:00:00.000Z")
    assert pools.save_pool_state(PoolState(pool=POOL, idle_since="2026-11-23T10:05:00.000Z"))
    read = pools.pool_states()[POOL]
    assert (read.last_used_at, read.pool_key, read.idle_since) == (
        "2026-11-23T10:00:00.000Z", "gpupilot-od-x8664-g5", "2026-11-23T10:05:00.000Z",
    )  # fmt: skip
    # When another workflow claims it after the sweep read it, the retirement the sweep starts is refused
    assert pools.claim_pool(POOL, "gpupilot-od-x8664-g5", "2026-11-23T10:06:00.000Z")
    assert not pools.start_retiring(POOL, "idle", "2026-11-23T10:07:00.000Z", read.last_used_at)
    # And started over the claim it saw, it lands; then no workflow can claim the pool
    assert pools.start_retiring(POOL, "idle", "2026-11-23T10:08:00.000Z", "2026-11-23T10:06:00.000Z")
    assert not pools.start_retiring(POOL, "idle", "2026-11-23T10:09:00.000Z", "2026-11-23T10:06:00.000Z")
    assert not pools.claim_pool(POOL, "gpupilot-od-x8664-g5", "2026-11-23T10:10:00.000Z")
    retiring = pools.pool_states()[POOL]
    assert (retiring.retiring_since, retiring.retire_reason) == ("2026-11-23T10:08:00.000Z", "idle")
    # And once it is gone, it is forgotten and can be claimed anew
    pools.finish_retiring(POOL)
    assert POOL not in pools.pool_states()
    assert pools.claim_pool(POOL, "gpupilot-od-x8664-g5", "2026-11-23T10:11:00.000Z")


def test_a_pool_never_claimed_can_be_retired_once(pools: PoolStates) -> None:
    assert pools.start_retiring(POOL, "invalid", "2026-11-23T10:00:00.000Z", None)
    assert not pools.start_retiring(POOL, "invalid", "2026-11-23T10:01:00.000Z", None)
