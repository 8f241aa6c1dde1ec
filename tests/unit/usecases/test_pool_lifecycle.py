"""Pool lifecycle: spec versions, draining and deleting old pools, idle and INVALID retirement, Batch's 50 limit,
and the races between a workflow claiming a pool and a retirement taking it."""

from __future__ import annotations

import pytest

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.vocabulary import AttemptStatus, DiagnosisCategory, MetricName, Remedy
from functions.shared.domain.jobs.steps import EnsureQueueInput, Selection
from functions.shared.domain.pools.retirement import RetireStep
from functions.shared.domain.pools.specs import MAX_COMPUTE_ENVIRONMENTS
from functions.shared.domain.pools.states import PoolState
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import plan_request
from functions.shared.usecases.health.sweep import run_sweep
from functions.shared.usecases.pools.provision import ensure_job_queue
from functions.shared.usecases.pools.retire import advance_retirement
from tests.unit.usecases.conftest import JOB_ID, selected

LONG_AGO = "2026-01-01T00:00:00.000Z"


def ensure(ports: Ports, index: int = 0, previous: dict | None = None):
    """EnsureJobQueue for candidate `index` of the job (selected on the first call)."""
    if not ports.jobs.records:
        selected(ports)
    record = ports.jobs.get_job(JOB_ID)
    selection = Selection(candidates=plan_request(record.request, ports).candidates[:6], index=index)
    payload = EnsureQueueInput(job_id=JOB_ID, request=record.request, selection=selection, previous=previous)
    return ensure_job_queue(payload, ports)


def ready_pool(ports: Ports, index: int = 0) -> str:
    """A pool created, made VALID, and given its queue by the workflow; its name."""
    first = ensure(ports, index)
    ports.pools.make_valid(first.compute_environment)
    assert ensure(ports, index, first.model_dump()).ready
    return first.compute_environment


def settings(ports: Ports, **overrides) -> None:
    object.__setattr__(ports, "settings", ports.settings.model_copy(update=overrides))


# -- spec versions ------------------------------------------------------------------------------------
def test_a_new_launch_template_version_is_a_new_pool_version_and_the_old_one_is_drained_then_deleted(ports):
    # Given a pool built on launch template version 1, with a job still running in it
    ports.availability.template_versions["gpupilot-gpu"] = 1
    old = ready_pool(ports)
    assert ports.pools.environments[old]["computeResources"]["launchTemplate"]["version"] == "1"
    ports.pools.busy_queues.add(old)
    ports.pool_states.states[old] = ports.pool_states.states[old].model_copy(update={"last_used_at": LONG_AGO})

    # When the launch template gets version 2 and the next job needs the same type
    ports.availability.template_versions["gpupilot-gpu"] = 2
    new = ready_pool(ports)

    # Then it gets a new pool (same key, another version) on version 2; the old one is untouched so far
    assert new != old and new.rsplit("-", 1)[0] == old.rsplit("-", 1)[0]
    assert ports.pools.environments[new]["computeResources"]["launchTemplate"]["version"] == "2"
    assert ports.pools.environments[new]["tags"]["gpupilot:pool-key"] == old.rsplit("-", 1)[0]

    # And the sweep disables the old queue (no new job) but keeps it while its job runs
    first = run_sweep(None, ports)
    [draining] = [f for f in first.findings if f.kind == "POOL_RETIRING"]
    assert (draining.resource, draining.evidence["reason"], draining.evidence["step"]) == (
        old,
        "outdated",
        RetireStep.DRAIN_QUEUE.value,
    )
    assert ports.pools.queues[old]["state"] == "DISABLED" and old in ports.pools.environments

    # And once the job finished, the next sweep deletes the queue, then the compute environment
    ports.pools.busy_queues.clear()
    second = run_sweep(None, ports)
    [done] = [f for f in second.findings if f.kind == "POOL_RETIRING"]
    assert done.evidence["step"] == RetireStep.DONE.value
    assert old not in ports.pools.queues and old not in ports.pools.environments
    assert old not in ports.pool_states.states
    assert new in ports.pools.queues and ports.pools.queues[new].get("state") != "DISABLED"
    assert ports.metrics.total(MetricName.RETIRING_POOLS) == 2


def test_the_same_spec_is_the_same_pool(ports):
    assert ready_pool(ports) == ensure(ports).compute_environment
    assert len(ports.pools.environments) == 1


# -- idle and INVALID pools ------------------------------------------------------------------------------
def test_a_pool_idle_for_pool_idle_hours_is_retired_and_a_later_job_recreates_it(ports):
    # Given a ready pool last used long ago, that the sweeps have seen idle for longer than pool_idle_hours
    name = ready_pool(ports)
    settings(ports, pool_idle_hours=24)
    ports.pool_states.states[name] = ports.pool_states.states[name].model_copy(
        update={"last_used_at": LONG_AGO, "idle_since": LONG_AGO}
    )

    # When the sweep runs
    result = run_sweep(None, ports)

    # Then the pool is gone, in Batch's order, and the finding says why
    [retired] = [f for f in result.findings if f.kind == "POOL_RETIRING"]
    assert (retired.evidence["reason"], retired.evidence["step"]) == ("idle", "done")
    assert ports.pools.environments == {} and ports.pools.queues == {}

    # And the next job that needs it creates it again under the same name
    assert ensure(ports).compute_environment == name and name in ports.pools.environments


def test_a_pool_idle_for_less_than_pool_idle_hours_or_just_claimed_is_kept(ports):
    name = ready_pool(ports)
    settings(ports, pool_idle_hours=24)
    # Seen idle long ago, but claimed by a workflow a moment ago (between its claim and its SubmitJob)
    ports.pool_states.states[name] = ports.pool_states.states[name].model_copy(update={"idle_since": LONG_AGO})
    result = run_sweep(None, ports)
    assert not [f for f in result.findings if f.kind == "POOL_RETIRING"]
    assert name in ports.pools.queues and ports.pools.queues[name].get("state") != "DISABLED"


def test_an_invalid_pool_is_retired_and_replaced_by_the_next_job_that_needs_it(ports):
    # Given a pool whose compute environment went INVALID
    name = ready_pool(ports)
    ports.pools.make_invalid(name, "CLIENT_ERROR - instance profile gone")

    # When the sweep runs, then the next job needs the same pool
    result = run_sweep(None, ports)
    [retired] = [f for f in result.findings if f.kind == "POOL_RETIRING"]
    assert retired.evidence["reason"] == "invalid"
    status = ensure(ports)

    # Then the INVALID one was deleted and a new one is being created
    assert (status.compute_environment, status.status) == (name, "CREATING/NOT_CREATED")
    assert ports.pools.environments[name]["status"] == "CREATING"


# -- the race between claims and retirements -----------------------------------------------------------
def test_a_retirement_does_not_start_on_a_pool_claimed_since_it_was_read(ports):
    name = ready_pool(ports)
    seen = ports.pool_states.states[name].last_used_at
    assert ports.pool_states.claim_pool(name, "key", "2026-12-01T00:00:00.000Z")  # a workflow claims it meanwhile
    assert not ports.pool_states.start_retiring(name, "idle", now_iso(), seen)


def test_a_workflow_that_finds_its_pool_retiring_helps_it_down_and_gets_a_new_generation_at_once(ports):
    # Given a pool whose retirement started (the sweep got there first), in a Batch that deletes slowly
    ports.pools.slow_deletes = True
    name = ready_pool(ports)
    state = ports.pool_states.states[name]
    assert ports.pool_states.start_retiring(name, "idle", now_iso(), state.last_used_at)
    assert not ports.pool_states.claim_pool(name, "key", now_iso())

    # When a workflow needs that pool
    status = ensure(ports)

    # Then it took the old one down as far as Batch allows (queue disabled, being deleted) and, instead of waiting
    # minutes for that, created the pool's next generation; nothing was submitted into the retiring queue
    assert ports.pools.queues[name]["state"] == "DISABLED" and ports.pools.queues[name]["status"] == "DELETING"
    assert (status.compute_environment, status.ready) == (f"{name}-g2", False)
    assert ports.pools.environments[f"{name}-g2"]["status"] == "CREATING"


# -- Batch's slow deletions: DELETING, then DELETED, still shown for a while --------------------------------
@pytest.mark.parametrize("status", ["DELETING", "DELETED"])
def test_a_compute_environment_batch_still_shows_being_deleted_is_never_reused_the_job_gets_a_new_generation(
    ports, status
):
    # Given a pool whose compute environment Batch still shows DELETING or DELETED (its name still taken), its
    # queue gone
    name = ready_pool(ports)
    ports.pools.environments[name] |= {"status": status, "state": "DISABLED"}
    del ports.pools.queues[name]

    # When a job needs that pool
    first = ensure(ports)

    # Then the pool's next generation is created, under a name Batch does not hold, and nobody waits on the old
    assert (first.compute_environment, first.job_queue, first.status) == (f"{name}-g2", f"{name}-g2",
                                                                          "CREATING/NOT_CREATED")  # fmt: skip
    assert ports.pools.environments[name]["status"] == status
    new = ports.pools.environments[f"{name}-g2"]
    assert new["tags"]["gpupilot:pool"] == f"{name}-g2" and new["computeResources"]["tags"]["gpupilot:pool"] == (
        f"{name}-g2"
    )
    assert new["tags"]["gpupilot:pool-key"] == ports.pools.environments[name]["tags"]["gpupilot:pool-key"]

    # And once VALID it gets its queue and takes the job
    ports.pools.make_valid(f"{name}-g2")
    assert ensure(ports, previous=first.model_dump()).ready


def test_a_pool_whose_queue_batch_is_deleting_gets_a_new_generation(ports):
    # Given a pool whose compute environment is VALID but whose queue Batch is deleting
    name = ready_pool(ports)
    ports.pools.queues[name] |= {"state": "DISABLED", "status": "DELETING"}

    # When a job needs that pool / Then it gets the next generation, not the queue on its way out
    assert ensure(ports).compute_environment == f"{name}-g2"


def test_the_newest_live_generation_is_reused_while_older_ones_are_still_being_deleted(ports):
    # Given generation 1 DELETED (still shown) and generation 2 ready
    name = ready_pool(ports)
    ports.pools.environments[name] |= {"status": "DELETED"}
    del ports.pools.queues[name]
    second = ready_pool(ports)
    assert second == f"{name}-g2"
    environments = dict(ports.pools.environments)

    # When the next job needs the pool / Then it runs in generation 2, and nothing new is created
    status = ensure(ports)
    assert (status.compute_environment, status.ready) == (second, True)
    assert ports.pools.environments == environments


def test_a_new_generation_is_numbered_past_the_newest_batch_still_shows(ports):
    # Given generation 1 DELETED and generation 2 DELETING, both still shown by Batch
    name = ready_pool(ports)
    ports.pools.environments[name] |= {"status": "DELETED"}
    del ports.pools.queues[name]
    second = ready_pool(ports)
    ports.pools.environments[second] |= {"status": "DELETING"}
    del ports.pools.queues[second]

    # When a job needs the pool / Then generation 3 is created (neither name is free)
    assert ensure(ports).compute_environment == f"{name}-g3"


def test_once_batch_stops_showing_the_deleted_generations_the_pool_gets_its_first_name_again(ports):
    # Given a pool retired through Batch's slow deletions, then forgotten by Batch
    ports.pools.slow_deletes = True
    name = ready_pool(ports)
    ports.pools.environments[name] |= {"status": "DELETED"}
    del ports.pools.queues[name]
    ports.pools.forget_deleted()

    # When a job needs the pool / Then it is created under its first name again
    assert ensure(ports).compute_environment == name


def test_the_sweep_takes_a_retirement_through_batch_s_slow_deletions_and_then_forgets_the_pool(ports):
    # Given an idle pool in a Batch that deletes slowly
    ports.pools.slow_deletes = True
    name = ready_pool(ports)
    settings(ports, pool_idle_hours=24)
    ports.pool_states.states[name] = ports.pool_states.states[name].model_copy(
        update={"last_used_at": LONG_AGO, "idle_since": LONG_AGO}
    )

    def steps() -> list[str]:
        found = run_sweep(None, ports).findings
        return [f"{f.resource}:{f.evidence['step']}" for f in found if f.kind == "POOL_RETIRING"]

    # When sweeps come by as Batch deletes the queue, then the compute environment
    assert steps() == [f"{name}:wait"]  # queue disabled, its deletion asked for: DELETING
    ports.pools.finish_deleting()
    assert steps() == [f"{name}:wait"]  # compute environment disabled, its deletion asked for: DELETING
    assert ports.pools.environments[name]["status"] == "DELETING"
    ports.pools.finish_deleting()
    assert steps() == [f"{name}:done"]

    # Then the pool is forgotten, and the DELETED compute environment and queue Batch still shows are no pool
    # to sweep: no finding, no state written again
    assert name not in ports.pool_states.states
    later = run_sweep(None, ports).findings
    assert [f for f in later if f.resource == name] == []
    assert name not in ports.pool_states.states


def test_a_retirement_takes_batch_s_steps_in_order_and_waits_for_jobs(ports):
    name = ready_pool(ports)
    ports.pools.busy_queues.add(name)
    assert advance_retirement(name, ports) == RetireStep.DRAIN_QUEUE
    assert ports.pools.queues[name]["state"] == "DISABLED" and name in ports.pools.environments
    ports.pools.busy_queues.clear()
    ports.pool_states.states[name] = PoolState(pool=name, retiring_since=now_iso(), retire_reason="idle")
    assert advance_retirement(name, ports) == RetireStep.DONE
    assert name not in ports.pools.environments and name not in ports.pool_states.states


# -- Batch's 50 compute environments and 50 queues per region ----------------------------------------------
def test_at_the_limit_the_least_recently_used_idle_pool_is_retired_to_make_room(ports):
    # Given two idle pools (one used earlier than the other) and a region otherwise full
    older = ready_pool(ports, 0)
    newer = ready_pool(ports, 1)
    ports.pool_states.states[older] = ports.pool_states.states[older].model_copy(
        update={"last_used_at": "2026-01-01T00:00:00.000Z", "idle_since": "2026-01-02T00:00:00.000Z"}
    )
    ports.pool_states.states[newer] = ports.pool_states.states[newer].model_copy(
        update={"last_used_at": "2026-02-01T00:00:00.000Z", "idle_since": "2026-02-02T00:00:00.000Z"}
    )
    ports.pools.foreign_environments = MAX_COMPUTE_ENVIRONMENTS - 2

    # When a job needs a third pool
    status = ensure(ports, 2)

    # Then the least recently used one was retired and the new one created
    assert older not in ports.pools.environments and newer in ports.pools.environments
    assert status.compute_environment in ports.pools.environments
    assert ports.pools.counts()[0] == MAX_COMPUTE_ENVIRONMENTS


def test_at_the_limit_with_no_idle_pool_the_attempt_is_pool_limit_and_falls_back(ports):
    # Given a region full of compute environments, GPU Pilot's one pool busy (just claimed)
    busy = ready_pool(ports, 0)
    ports.pools.foreign_environments = MAX_COMPUTE_ENVIRONMENTS - 1

    # When a job needs another pool
    status = ensure(ports, 1)

    # Then nothing was created or retired, and the attempt says why, with the fallback
    assert busy in ports.pools.environments and len(ports.pools.environments) == 1
    assert (status.ready, status.remedy, status.next_index) == (False, Remedy.FALL_BACK, 2)
    attempt = ports.jobs.get_job(JOB_ID).attempts[2]
    assert attempt.status == AttemptStatus.NOT_SUBMITTED
    assert attempt.diagnosis is not None and attempt.diagnosis.category == DiagnosisCategory.POOL_LIMIT
    assert "Batch allows 50" in attempt.diagnosis.reason
    assert attempt.diagnosis.evidence["compute_environments"] == MAX_COMPUTE_ENVIRONMENTS
