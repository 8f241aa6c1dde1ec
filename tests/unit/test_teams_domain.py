"""Teams, the pure part: who a caller is, what its role may do, what a job commits and what would fit."""

from __future__ import annotations

import pytest

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.errors import Forbidden
from functions.shared.domain.core.vocabulary import Action, CapacityType, DiagnosisCategory, Role
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.teams.access import authorize
from functions.shared.domain.teams.budget import refusal, worst_case_usd
from functions.shared.domain.teams.caps import cap_diagnosis, consumable_resources
from functions.shared.domain.teams.commitment import BudgetState, Commitment
from functions.shared.domain.teams.config import TeamsConfig
from functions.shared.domain.teams.identity import caller_of, principal_of

CONFIG = TeamsConfig.model_validate(
    {
        "admins": ["arn:aws:iam::*:role/platform-admin"],
        "teams": {
            "vision": {
                "members": ["arn:aws:iam::*:role/vision-*", "arn:aws:iam::123456789012:user/alice"],
                "viewers": ["arn:aws:iam::123456789012:user/carol"],
                "budget_usd_per_day": 10,
                "max_gpus": 2,
            },
            "nlp": {"members": ["arn:aws:iam::123456789012:user/bob"]},
        },
    }
)
REQUEST = JobRequest(name="train", image="nvidia/cuda:12.4.1-base", command=["python", "train.py"])
G4DN = Candidate(instance_type="g4dn.xlarge", gpu_model="T4", gpus=1, gpu_memory_gib=16, vcpus=4, memory_gib=16,
                 capacity=CapacityType.ON_DEMAND, hourly_usd=0.526, zones=["us-east-1a"], score=1)  # fmt: skip


def test_an_assumed_role_session_is_its_role_and_matches_the_team_that_names_the_role():
    # Given a session of role vision-trainer, as API Gateway's userArn gives it
    session = "arn:aws:sts::123456789012:assumed-role/vision-trainer/alice-laptop"

    # When / Then: the principal is the role, a member of vision
    assert principal_of(session) == "arn:aws:iam::123456789012:role/vision-trainer"
    caller = caller_of(session, CONFIG)
    assert caller is not None and (caller.team, caller.role) == ("vision", Role.MEMBER)


def test_roles_are_admin_then_member_then_viewer_and_a_principal_in_no_team_has_none():
    assert caller_of("arn:aws:sts::123456789012:assumed-role/platform-admin/x", CONFIG).role == Role.ADMIN  # type: ignore[union-attr]
    assert caller_of("arn:aws:iam::123456789012:user/carol", CONFIG).role == Role.VIEWER  # type: ignore[union-attr]
    assert caller_of("arn:aws:iam::123456789012:user/bob", CONFIG).team == "nlp"  # type: ignore[union-attr]
    assert caller_of("arn:aws:iam::123456789012:user/mallory", CONFIG) is None


def test_without_teams_every_caller_is_an_admin_of_the_default_team():
    caller = caller_of("arn:aws:iam::123456789012:user/anyone", None)
    assert caller is not None and (caller.role, caller.team) == (Role.ADMIN, "default")


def test_a_viewer_may_read_but_its_submit_is_refused_naming_its_role_and_the_action():
    viewer = caller_of("arn:aws:iam::123456789012:user/carol", CONFIG)
    assert viewer is not None
    authorize(viewer, Action.READ)
    with pytest.raises(Forbidden) as refused:
        authorize(viewer, Action.SUBMIT)
    assert (refused.value.role, refused.value.action) == ("viewer", "submit")
    assert "viewer" in refused.value.message and "submit" in refused.value.message


def test_a_member_may_not_buy_capacity_or_read_the_audit_log():
    member = caller_of("arn:aws:iam::123456789012:user/alice", CONFIG)
    assert member is not None
    for action in (Action.PURCHASE, Action.AUDIT, Action.SWEEP):
        with pytest.raises(Forbidden):
            authorize(member, action)


def test_a_job_s_worst_case_is_its_hourly_price_times_its_share_times_its_timeout():
    # Given a 1-GPU job of 90 minutes on a 1-GPU g4dn.xlarge at $0.526/h / When / Then
    assert worst_case_usd(REQUEST.model_copy(update={"timeout_minutes": 90}), G4DN) == pytest.approx(0.789)


def test_a_refusal_names_the_window_the_figures_and_the_longest_timeout_that_fits():
    # Given $10 a day with $7 spent and $2 committed: $1 left, at $0.526 an hour
    commitment = Commitment(team="vision", day="2026-11-28", month="2026-11", usd=5.26, budget_usd_per_day=10)
    state = BudgetState(spent_day=7, committed_day=2, spent_month=7, committed_month=2)

    # When a 600-minute job ($5.26) is checked
    refused = refusal(state, commitment, 5.26, 0.526)

    # Then it is refused on the day's budget, and 114 minutes would fit ($0.9994)
    assert refused is not None
    assert (refused.window, refused.spent_usd, refused.committed_usd, refused.budget_usd) == ("day", 7, 2, 10)
    assert (refused.job_worst_case_usd, refused.fits_with_timeout_minutes) == (5.26, 114)
    assert refusal(state, commitment, 0.99, 0.526) is None


def test_a_month_s_budget_refuses_what_the_day_s_would_take_with_the_month_s_figures():
    # Given $100 a day and $50 a month, with $45 spent this month and $1 of it today
    commitment = Commitment(team="vision", day="2026-11-28", month="2026-11", usd=10, budget_usd_per_day=100,
                            budget_usd_per_month=50)  # fmt: skip
    state = BudgetState(spent_day=1, spent_month=45)

    # When a $10 job is checked / Then the month refuses it with its figures, and what is left of it fits
    refused = refusal(state, commitment, 10, 1)
    assert refused is not None
    assert (refused.window, refused.spent_usd, refused.budget_usd, refused.fits_with_timeout_minutes) == (
        "month", 45, 50, 300,
    )  # fmt: skip
    assert refusal(state, commitment, 5, 1) is None


def test_a_job_over_its_team_s_cap_is_diagnosed_team_gpu_cap_with_its_evidence():
    held = cap_diagnosis("vision", gpus=1, in_use=2, max_gpus=2, jobs_ahead=1)
    assert held is not None and held.category == DiagnosisCategory.TEAM_GPU_CAP
    assert {"team": "vision", "gpus_in_use": 2, "max_gpus": 2, "jobs_ahead": 1}.items() <= held.evidence.items()
    assert cap_diagnosis("vision", gpus=1, in_use=1, max_gpus=2, jobs_ahead=0) is None


def test_a_capped_team_s_job_definition_draws_as_many_units_as_it_has_gpus():
    assert consumable_resources("gpupilot-team-vision-gpus", 4) == {
        "consumableResourceProperties": {
            "consumableResourceList": [{"consumableResource": "gpupilot-team-vision-gpus", "quantity": 4}]
        }
    }
    assert consumable_resources(None, 4) == {}


def test_a_team_name_that_cannot_name_a_batch_resource_is_refused():
    with pytest.raises(ValueError, match="team 'Vision Team'"):
        TeamsConfig.model_validate({"teams": {"Vision Team": {}}})
