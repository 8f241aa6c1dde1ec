"""A pool's memory between sweeps: idle since when, registration failures in a row, when to disable it."""

from __future__ import annotations

from functions.shared.domain.core.vocabulary import FindingKind, Severity
from functions.shared.domain.fleet.batch import JobQueueState
from functions.shared.domain.pools.states import (
    FAILURE_WINDOW_SECONDS,
    PoolState,
    disabled_finding,
    idle_finding,
    next_state,
    should_disable,
)

POOL = "gpupilot-od-x8664-g5-xlarge"
T0 = "2026-11-23T10:00:00.000Z"
T5 = "2026-11-23T10:05:00.000Z"
T10 = "2026-11-23T10:10:00.000Z"
LATER = "2026-11-23T12:00:00.000Z"
ENABLED = JobQueueState(name=POOL, state="ENABLED", status="VALID")
DISABLED = JobQueueState(name=POOL, state="DISABLED", status="VALID")


def test_a_pool_is_idle_from_the_first_sweep_that_sees_no_live_job_until_one_sees_a_job():
    first = next_state(None, POOL, T0, idle=True, failed_registration=False)
    still = next_state(first, POOL, T5, idle=True, failed_registration=False)
    busy = next_state(still, POOL, T10, idle=False, failed_registration=False)
    assert (first.idle_since, still.idle_since, busy.idle_since) == (T0, T0, None)


def test_registration_failures_count_in_a_row_and_restart_after_a_quiet_window():
    first = next_state(None, POOL, T0, idle=False, failed_registration=True)
    second = next_state(first, POOL, T5, idle=False, failed_registration=True)
    # A sweep in between without a failure (new instances still booting) does not break the row
    between = next_state(second, POOL, T10, idle=False, failed_registration=False)
    assert (first.registration_failures, second.registration_failures, between.registration_failures) == (1, 2, 2)
    # But a failure more than the window after the last one starts a new row
    assert FAILURE_WINDOW_SECONDS < 2 * 3600
    assert next_state(between, POOL, LATER, idle=False, failed_registration=True).registration_failures == 1
    assert next_state(between, POOL, LATER, idle=False, failed_registration=False).registration_failures == 0


def test_a_pool_is_disabled_once_enough_sweeps_in_a_row_found_its_instances_failing_and_only_once():
    once = PoolState(pool=POOL, registration_failures=1)
    twice = PoolState(pool=POOL, registration_failures=2)
    assert not should_disable(once, ENABLED, 2)
    assert should_disable(twice, ENABLED, 2)
    assert not should_disable(twice, DISABLED, 2)  # already
    assert not should_disable(twice, ENABLED, 0)  # switched off
    assert not should_disable(twice, None, 2)  # no queue to disable


def test_an_unchanged_state_is_the_same_whatever_its_version():
    state = PoolState(pool=POOL, idle_since=T0, version=3)
    assert state.same_as(state.model_copy(update={"version": 4}))
    assert not state.same_as(state.model_copy(update={"idle_since": T5}))
    assert not state.same_as(None)


def test_an_idle_pool_is_information_until_its_instances_outstay_the_grace_period():
    state = PoolState(pool=POOL, idle_since=T0)
    empty = idle_finding(state, [], LATER, grace_seconds=1800)
    fresh = idle_finding(state, ["i-1"], T5, grace_seconds=1800)
    wasting = idle_finding(state, ["i-1", "i-2"], LATER, grace_seconds=1800)
    assert {f.kind for f in (empty, fresh, wasting)} == {FindingKind.IDLE_POOL}
    assert (empty.severity, fresh.severity, wasting.severity) == (Severity.INFO, Severity.INFO, Severity.WARNING)
    assert wasting.instances == ["i-1", "i-2"]
    assert wasting.evidence.items() >= {"idle_since": T0, "idle_seconds": 7200, "instances_alive": 2}.items()


def test_a_disabled_pool_is_a_warning_with_how_to_enable_it_again():
    finding = disabled_finding(DISABLED, PoolState(pool=POOL, disabled_at=T0, registration_failures=2), 3)
    assert (finding.kind, finding.severity, finding.resource) == (FindingKind.POOL_DISABLED, Severity.WARNING, POOL)
    assert (
        finding.evidence.items() >= {"job_queue_state": "DISABLED", "disabled_by_sweep_at": T0, "live_jobs": 3}.items()
    )
    assert f"aws batch update-job-queue --job-queue {POOL} --state ENABLED" in finding.recommendation
