"""Teams' use cases over fakes: ownership and its scope, commitments against budgets (one conditional write, raised
for a dearer attempt, settled once), a job held by its team's GPU cap, the audit log, costs by team and owner."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest

from functions.shared.domain.core.errors import BudgetExceeded, JobNotFound
from functions.shared.domain.core.vocabulary import (
    Action,
    AuditOutcome,
    BatchStatus,
    DiagnosisCategory,
    JobStatus,
    Remedy,
)
from functions.shared.domain.jobs.steps import DiagnoseInput, RecordCostInput, SubmitInput, SubmittedJob, WaitResult
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.teams.config import teams_config
from functions.shared.domain.teams.identity import caller_of
from functions.shared.usecases.capacity.select import plan_request
from functions.shared.usecases.cost.report import cost_report
from functions.shared.usecases.diagnosis.diagnose import diagnose_stuck_job
from functions.shared.usecases.jobs.attempt import submit_batch_job
from functions.shared.usecases.jobs.outcome import record_cost
from functions.shared.usecases.jobs.queries import get_job, list_jobs
from functions.shared.usecases.jobs.submit import start_job
from functions.shared.usecases.teams import audit
from functions.shared.usecases.teams.views import list_teams
from tests.fakes import fake_ports
from tests.unit.usecases.conftest import REQUEST, ready_queue

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
ADMIN = "arn:aws:iam::123456789012:role/platform-admin"
GPUS = "gpupilot-team-vision-gpus"


def teams(**vision: object) -> str:
    return json.dumps(
        {
            "admins": [ADMIN],
            "teams": {"vision": {"members": [ALICE], **vision}, "nlp": {"members": [BOB]}},
        }
    )


def ports_for(**vision: object):
    ports = fake_ports()
    return replace(ports, settings=ports.settings.model_copy(update={"teams_config": teams(**vision)}))


def caller(ports, arn: str = ALICE):
    found = caller_of(arn, teams_config(ports.settings.teams_config))
    assert found is not None
    return found


def request(**fields) -> JobRequest:
    return JobRequest.model_validate(REQUEST | fields)


def worst(ports, **fields) -> float:
    first = plan_request(request(**fields), ports).candidates[0]
    assert first.hourly_usd is not None
    return first.hourly_usd * request(**fields).timeout_minutes / 60


def test_a_job_belongs_to_its_submitter_and_team_and_another_team_s_job_is_not_found(ports=None):
    # Given alice (vision) submitted a job
    ports = ports_for()
    job_id = start_job(request(), ports, caller=caller(ports)).job_id

    # When bob (nlp) reads it, and lists his team's jobs; and alice reads it
    with pytest.raises(JobNotFound):
        get_job(job_id, ports, caller(ports, BOB))
    listed = list_jobs(None, 20, None, ports, team="nlp")

    # Then it is not found to bob (its existence does not leak) nor listed, and alice's view names its owner and team
    assert listed.jobs == []
    view = get_job(job_id, ports, caller(ports))
    assert (view.owner, view.team) == (ALICE, "vision")
    assert get_job(job_id, ports, caller(ports, ADMIN)).job_id == job_id


def test_a_job_commits_its_worst_case_with_its_record_in_one_write():
    # Given vision with $100 a day
    ports = ports_for(budget_usd_per_day=100)

    # When alice submits a 60-minute job
    response = start_job(request(), ports, caller=caller(ports))

    # Then one conditional write committed its worst case, and the execution re-checks its fallbacks
    record = ports.jobs.get_job(response.job_id)
    assert record.commitment is not None and record.commitment.usd == pytest.approx(worst(ports), abs=1e-6)
    assert ports.budgets.writes == 1
    state = ports.budgets.state("vision", record.commitment.day, record.commitment.month)
    assert state.committed_day == pytest.approx(worst(ports), abs=1e-6)
    assert json.loads(ports.workflow.executions[response.execution_arn])["budgeted"] is True


def test_a_job_that_would_exceed_the_budget_is_refused_with_the_timeout_that_would_fit():
    # Given vision with $1 a day and a job whose worst case is 600 minutes at the first candidate's price
    ports = ports_for(budget_usd_per_day=1)

    # When alice submits it / Then it is refused, nothing recorded, with the figures and the timeout that fits
    with pytest.raises(BudgetExceeded) as refused:
        start_job(request(timeout_minutes=600), ports, caller=caller(ports))
    body = refused.value.refusal
    hourly = worst(ports, timeout_minutes=60)
    assert (body.team, body.budget_usd, body.spent_usd, body.committed_usd) == ("vision", 1, 0, 0)
    assert body.job_worst_case_usd == pytest.approx(hourly * 10, abs=1e-6)
    assert body.fits_with_timeout_minutes == int(60 / hourly)
    assert ports.jobs.records == {}


def test_concurrent_submits_never_commit_more_than_the_budget():
    # Given a budget that holds three jobs' worst case, and eight submits at once
    ports = ports_for()
    each = worst(ports)
    ports = ports_for(budget_usd_per_day=round(each * 3.5, 6))
    outcomes: list[str] = []
    go = threading.Barrier(8)

    def submit() -> None:
        go.wait()
        try:
            start_job(request(), ports, caller=caller(ports))
            outcomes.append("accepted")
        except BudgetExceeded:
            outcomes.append("refused")

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # Then exactly three were accepted, and what they committed is within the budget
    assert sorted(outcomes) == ["accepted"] * 3 + ["refused"] * 5
    committed = sum(r.commitment.usd for r in ports.jobs.records.values() if r.commitment)
    assert committed <= each * 3.5


def _submit_step(ports, job_id: str, index: int) -> SubmitInput:
    from functions.shared.domain.jobs.steps import Selection

    record = ports.jobs.get_job(job_id)
    selection = Selection(candidates=plan_request(record.request, ports).candidates, index=index)
    return SubmitInput(job_id=job_id, request=record.request, selection=selection, queue=ready_queue(selection),
                       budgeted=record.commitment is not None, team_gpus=record.team_gpus)  # fmt: skip


def test_a_fallback_to_a_dearer_candidate_commits_the_difference_first_and_stops_the_job_when_it_cannot():
    # Given a job committed on its first candidate, under a budget with room for little more
    ports = ports_for()
    first = worst(ports)
    ports = ports_for(budget_usd_per_day=round(first * 1.01, 6))
    job_id = start_job(request(), ports, caller=caller(ports)).job_id
    candidates = plan_request(request(), ports).candidates
    dearer = next(i for i, c in enumerate(candidates) if c.hourly_usd and c.hourly_usd > candidates[0].hourly_usd * 1.1)

    # When its attempt on a dearer candidate begins / Then it is refused, and no Batch job was submitted
    with pytest.raises(BudgetExceeded) as refused:
        submit_batch_job(_submit_step(ports, job_id, dearer), ports)
    assert refused.value.refusal.team == "vision" and ports.batch.jobs == {}

    # And under a budget with room, the difference is committed before it is submitted
    roomy = ports_for(budget_usd_per_day=100)
    job_id = start_job(request(), roomy, caller=caller(roomy)).job_id
    submit_batch_job(_submit_step(roomy, job_id, dearer), roomy)
    record = roomy.jobs.get_job(job_id)
    assert record.commitment is not None
    assert record.commitment.usd == pytest.approx(candidates[dearer].hourly_usd * 60 / 60, abs=1e-6)


def test_a_finished_job_releases_what_it_did_not_spend_once():
    # Given a job that ran 30 of its 60 minutes
    ports = ports_for(budget_usd_per_day=100)
    job_id = start_job(request(), ports, caller=caller(ports)).job_id
    step = _submit_step(ports, job_id, 0)
    submitted = submit_batch_job(step, ports)
    finished = WaitResult(status=BatchStatus.SUCCEEDED, exit_code=0,
                          started_at="2026-11-22T10:00:00.000Z", stopped_at="2026-11-22T10:30:00.000Z")  # fmt: skip
    cost_input = RecordCostInput(job_id=job_id, batch_job=submitted, finished=finished)

    # When RecordCost runs, and is retried
    cost = record_cost(cost_input, ports)
    record_cost(cost_input, ports)

    # Then what it cost is spent, nothing stays committed, and the settlement was written once
    record = ports.jobs.get_job(job_id)
    assert record.commitment is not None and record.commitment.settled_usd == pytest.approx(cost.usd, abs=1e-6)
    state = ports.budgets.state("vision", record.commitment.day, record.commitment.month)
    assert (state.spent_day, state.committed_day) == (pytest.approx(cost.usd, abs=1e-6), 0)
    assert ports.budgets.writes == 2  # the commitment with the record, its settlement


def test_a_job_over_its_team_s_gpu_cap_says_team_gpu_cap_at_once_and_is_never_fallen_back():
    # Given vision capped at 1 GPU, all in use, another of its jobs waiting before this one
    ports = ports_for(max_gpus=1)
    ports.caps.totals[GPUS] = 1
    ports.caps.held[GPUS] = 1
    ports.caps.waiting_jobs[GPUS] = [("older", 1)]
    job_id = start_job(request(), ports, caller=caller(ports)).job_id
    step = _submit_step(ports, job_id, 0)

    # When its attempt is submitted
    submitted = submit_batch_job(step, ports)

    # Then its job definition draws the team's GPUs, it waits RUNNABLE saying TEAM_GPU_CAP with the evidence
    assert ports.batch.definitions[-1]["consumableResourceProperties"]["consumableResourceList"] == [
        {"consumableResource": GPUS, "quantity": 1}
    ]
    ports.caps.waiting_jobs[GPUS].append((submitted.batch_job_id, 2))
    record = ports.jobs.get_job(job_id)
    diagnosis = record.attempts[1].diagnosis
    assert record.status == JobStatus.RUNNABLE and diagnosis is not None
    assert diagnosis.category == DiagnosisCategory.TEAM_GPU_CAP
    assert {"team": "vision", "gpus_in_use": 1, "max_gpus": 1, "jobs_ahead": 1}.items() <= diagnosis.evidence.items()

    # And when its wait times out, it keeps waiting: no fallback, its Batch job left alone
    ports.batch.set_status(submitted.batch_job_id, "RUNNABLE")
    waited = DiagnoseInput(
        job_id=job_id, request=step.request, selection=step.selection, queue=step.queue, batch_job=submitted
    )
    outcome = diagnose_stuck_job(waited, ports)
    assert (outcome.category, outcome.remedy) == (DiagnosisCategory.TEAM_GPU_CAP, Remedy.KEEP_WAITING)
    assert ports.batch.terminated == []


def test_a_team_below_its_cap_waits_for_its_pool_as_any_job_does():
    ports = ports_for(max_gpus=2)
    ports.caps.totals[GPUS] = 2
    ports.caps.held[GPUS] = 1
    job_id = start_job(request(), ports, caller=caller(ports)).job_id
    submit_batch_job(_submit_step(ports, job_id, 0), ports)
    assert ports.jobs.get_job(job_id).attempts[1].diagnosis is None


def test_audit_lines_are_written_only_in_a_deployment_with_teams():
    # Given one deployment with teams and one without
    with_teams, without = ports_for(), fake_ports()

    # When the same refusal is recorded in each
    for ports in (with_teams, without):
        audit.record(ALICE, Action.SUBMIT, AuditOutcome.FORBIDDEN, ports, None, {"reason": "in no team"})

    # Then only the first has a line, read back by day
    today = with_teams.audit.lines[0].at[:10]
    (line,) = audit.audit_events(today, today, with_teams).events
    assert (line.principal, line.outcome, line.detail) == (ALICE, AuditOutcome.FORBIDDEN, {"reason": "in no team"})
    assert without.audit.lines == []


def test_costs_group_by_team_and_owner_and_a_team_reads_only_its_own():
    # Given a priced job of alice (vision) and one of bob (nlp)
    ports = ports_for(budget_usd_per_day=100)
    for who in (ALICE, BOB):
        job_id = start_job(request(), ports, caller=caller(ports, who)).job_id
        submitted: SubmittedJob = submit_batch_job(_submit_step(ports, job_id, 0), ports)
        finished = WaitResult(status=BatchStatus.SUCCEEDED, exit_code=0,
                              started_at="2026-11-22T10:00:00.000Z", stopped_at="2026-11-22T10:30:00.000Z")  # fmt: skip
        record_cost(RecordCostInput(job_id=job_id, batch_job=submitted, finished=finished), ports)

    # When costs are grouped by team and by owner, and read as vision
    today = ports.jobs.get_job(job_id).created_at[:10]
    by_team = cost_report(today, today, ports, "team")
    by_owner = cost_report(today, today, ports, "owner")
    vision = cost_report(today, today, ports, "owner", team="vision")

    # Then each team and each owner is a group, and vision sees its own costs only
    assert {g.key for g in by_team.groups} == {"vision", "nlp"}
    assert {g.key for g in by_owner.groups} == {ALICE, BOB}
    assert [g.key for g in vision.groups] == [ALICE] and vision.total_usd == by_team.total_usd / 2


def test_a_member_lists_its_own_team_and_an_admin_every_team():
    ports = ports_for(budget_usd_per_day=100, max_gpus=2)
    ports.caps.totals[GPUS] = 2
    assert [t.team for t in list_teams(caller(ports), ports).teams] == ["vision"]
    (vision, nlp) = list_teams(caller(ports, ADMIN), ports).teams
    assert (vision.team, vision.budget_usd_per_day, vision.max_gpus, vision.gpus_in_use) == ("vision", 100, 2, 0)
    assert (nlp.team, nlp.max_gpus, nlp.gpus_in_use) == ("nlp", None, None)
