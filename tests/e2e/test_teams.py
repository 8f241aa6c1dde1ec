"""Teams through the local cloud, signed as its identities: three identities in two teams and an admin (ownership
and 404s across teams, a viewer's refusals, whoami, teams, audit, costs by team and owner), unsigned and badly signed
requests refused as API Gateway refuses them, a team's budget as a hard cap (the job that would exceed it refused
with the timeout that fits, concurrent submits never overspending, a finished job releasing what it did not spend),
and a team's GPU cap held by Batch (its next job waiting TEAM_GPU_CAP until the first ends, another team's job in the
same pool not held)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from gpupilot.localcloud.template import load_region_templates
from gpupilot.localcloud.world import World
from tests.e2e.conftest import GPUPILOT, PATIENCE_SECONDS, RunningCloud, start_cloud, stop_cloud

pytestmark = pytest.mark.e2e
ACCOUNT = "123456789012"
JOB = {"name": "team-job", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
# The first candidate of JOB: g4dn.xlarge, $0.526 an hour on demand (the bundled Price List).
HOURLY = 0.526
# Long enough that a job of another team starts while the first of a capped team still runs, on a loaded machine.
RUNTIME_SECONDS = 25


def identity(name: str, key: str) -> dict[str, str]:
    return {"arn": f"arn:aws:iam::{ACCOUNT}:user/{name}", "access_key_id": key,
            "secret_access_key": f"{name}-secret-key-000000000000"}  # fmt: skip


IDENTITIES = {
    "alice": identity("alice", "AKIAALICE00000000001"),
    "bob": identity("bob", "AKIABOB0000000000001"),
    "carol": identity("carol", "AKIACAROL00000000001"),
    "erin": identity("erin", "AKIAERIN000000000001"),
    "root": identity("root-admin", "AKIAROOT000000000001"),
}
TEAMS = {
    "admins": [f"arn:aws:iam::{ACCOUNT}:user/root-admin"],
    "teams": {
        # alice submits, carol only reads; one GPU at a time, $20 a day
        "vision": {"members": [f"arn:aws:iam::{ACCOUNT}:user/alice"], "viewers": [f"arn:aws:iam::{ACCOUNT}:user/carol"],
                   "budget_usd_per_day": 20, "max_gpus": 1},
        "nlp": {"members": [f"arn:aws:iam::{ACCOUNT}:user/bob"]},
        # erin's team holds three hours of g4dn.xlarge a day, and no GPU may run (its jobs wait: none ends)
        "lab": {"members": [f"arn:aws:iam::{ACCOUNT}:user/erin"], "budget_usd_per_day": round(HOURLY * 3.5, 6),
                "max_gpus": 0},
    },
}  # fmt: skip
WORLD: dict[str, Any] = {"jobs": {"runtime_seconds": RUNTIME_SECONDS}, "teams": TEAMS, "identities": IDENTITIES}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    # The stack synthesized with the world's teams first (node, a minute on a loaded machine), out of serve's start-up.
    world = World.model_validate(WORLD)
    load_region_templates(world.region, [], world.deployment_context())
    running = start_cloud(tmp_path_factory.mktemp("teams"), WORLD)
    yield running
    stop_cloud(running)


def cli(cloud: RunningCloud, who: str, *args: str, timeout: float = 120) -> Any:
    """The real CLI, with `who`'s access key in the environment (the standard credential chain)."""
    import subprocess

    keys = IDENTITIES[who]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {
        "GPUPILOT_ENDPOINT": cloud.api_url,
        "AWS_ACCESS_KEY_ID": keys["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": keys["secret_access_key"],
        "AWS_REGION": "us-east-1",
    }
    return subprocess.run([GPUPILOT, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False)


HTTP = urllib3.PoolManager(maxsize=16, timeout=urllib3.Timeout(connect=10, read=120))


def call(cloud: RunningCloud, who: str | None, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One request, signed as `who` (None: unsigned), as the CLI signs it."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    url = cloud.api_url + path
    if who is not None:
        keys = IDENTITIES[who]
        request = AWSRequest(method=method, url=url, data=data, headers=headers)
        credentials = Credentials(keys["access_key_id"], keys["secret_access_key"])
        SigV4Auth(credentials, "execute-api", "us-east-1").add_auth(request)
        headers = dict(request.headers.items())
    answer = HTTP.request(method, url, body=data, headers=headers, retries=False)
    return answer.status, json.loads(answer.data) if answer.data else None


def submit(cloud: RunningCloud, who: str, **fields: Any) -> tuple[int, Any]:
    return call(cloud, who, "POST", "/jobs", JOB | fields)


def job_of(cloud: RunningCloud, who: str, job_id: str) -> dict[str, Any]:
    status, job = call(cloud, who, "GET", f"/jobs/{job_id}")
    assert status == 200, job
    return dict(job)


def wait_for(
    cloud: RunningCloud, who: str, job_id: str, statuses: set[str], timeout: float = PATIENCE_SECONDS
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = job_of(cloud, who, job_id)
        if job["status"] in statuses:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} did not reach {sorted(statuses)} in {timeout:.0f} s: {job}")
        time.sleep(0.5)


def team(cloud: RunningCloud, name: str) -> dict[str, Any]:
    status, answer = call(cloud, "root", "GET", "/teams")
    assert status == 200, answer
    return next(t for t in answer["teams"] if t["team"] == name)


def test_an_unsigned_or_badly_signed_request_is_refused_as_api_gateway_refuses_it(cloud: RunningCloud) -> None:
    # Given / When a request without a signature, and one signed with a wrong secret
    unsigned = call(cloud, None, "GET", "/whoami")
    forged = dict(IDENTITIES["alice"], secret_access_key="not-alice-s-secret-0000000000")
    IDENTITIES["mallory"] = forged
    try:
        badly = call(cloud, "mallory", "GET", "/whoami")
    finally:
        del IDENTITIES["mallory"]

    # Then both are 403, in the API's error shape, naming why
    assert unsigned == (403, unsigned[1]) and unsigned[1]["error"] == "MissingAuthenticationToken"
    assert badly[0] == 403 and badly[1]["error"] == "InvalidSignature"


def test_whoami_names_each_identity_s_principal_team_and_role(cloud: RunningCloud, tmp_path: Path) -> None:
    # Given / When each identity asks who it is (alice through a profile, as AWS_PROFILE=alice would)
    answers = {who: call(cloud, who, "GET", "/whoami")[1] for who in ("alice", "bob", "carol", "root")}
    credentials = tmp_path / "credentials"
    keys = IDENTITIES["alice"]
    credentials.write_text(f"[alice]\naws_access_key_id = {keys['access_key_id']}\n"
                           f"aws_secret_access_key = {keys['secret_access_key']}\n")  # fmt: skip
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {
        "GPUPILOT_ENDPOINT": cloud.api_url, "AWS_SHARED_CREDENTIALS_FILE": str(credentials), "AWS_PROFILE": "alice",
        "AWS_CONFIG_FILE": str(tmp_path / "config"), "AWS_REGION": "us-east-1",
    }  # fmt: skip
    printed = subprocess.run(
        [GPUPILOT, "whoami"], capture_output=True, text=True, env=env, timeout=PATIENCE_SECONDS, check=False
    )

    # Then each is its team's member, viewer or the admin; and the CLI signs with the profile's key
    assert {who: (a["team"], a["role"]) for who, a in answers.items()} == {
        "alice": ("vision", "member"), "bob": ("nlp", "member"), "carol": ("vision", "viewer"), "root": (None, "admin"),
    }  # fmt: skip
    assert answers["alice"]["principal"] == IDENTITIES["alice"]["arn"]
    assert printed.returncode == 0 and printed.stdout.splitlines() == [
        IDENTITIES["alice"]["arn"],
        "member of team vision",
    ]


def test_jobs_belong_to_their_team_another_team_s_are_not_found_and_a_viewer_only_reads(cloud: RunningCloud) -> None:
    # Given a job alice (vision) submitted
    status, submitted = submit(cloud, "alice", name="ownership")
    assert status == 202, submitted
    job_id = submitted["job_id"]

    # When bob (nlp) reads, cancels and lists; carol (vision's viewer) reads, submits and cancels; an admin lists vision
    bob_reads = cli(cloud, "bob", "status", job_id)
    bob_cancels = call(cloud, "bob", "DELETE", f"/jobs/{job_id}")
    bob_lists = call(cloud, "bob", "GET", "/jobs")[1]
    carol_reads = job_of(cloud, "carol", job_id)
    carol_submits = cli(cloud, "carol", "submit", "--name", "nope", "--image", JOB["image"], "--yes", "--", "true")
    carol_cancels = call(cloud, "carol", "DELETE", f"/jobs/{job_id}")
    admin_lists = call(cloud, "root", "GET", "/jobs?team=vision")[1]

    # Then to bob it does not exist (404, exit 3) and is not listed; carol sees it, owned by alice in vision, and is
    # refused submitting and cancelling, naming her role and the action; the admin lists it under vision
    assert bob_reads.returncode == 3 and "JobNotFound" in bob_reads.stderr
    assert bob_cancels[0] == 404 and bob_cancels[1]["error"] == "JobNotFound"
    assert job_id not in [j["job_id"] for j in bob_lists["jobs"]]
    assert (carol_reads["owner"], carol_reads["team"]) == (IDENTITIES["alice"]["arn"], "vision")
    assert carol_submits.returncode == 2 and "Forbidden" in carol_submits.stderr
    assert "viewer" in carol_submits.stderr and "submit" in carol_submits.stderr
    assert carol_cancels[0] == 403 and (carol_cancels[1]["role"], carol_cancels[1]["action"]) == ("viewer", "cancel")
    assert job_id in [j["job_id"] for j in admin_lists["jobs"]]
    assert {j["team"] for j in admin_lists["jobs"]} == {"vision"}


def test_a_member_may_not_buy_capacity_nor_read_the_audit_log(cloud: RunningCloud) -> None:
    # Given members of two teams / When bob buys a Capacity Block and alice reads the audit log
    bought = cli(cloud, "bob", "reserve", "cb-0123456789abcdef0", "--yes", "--max-upfront-usd", "1")
    audit = cli(cloud, "alice", "audit")

    # Then both are refused (exit 2), naming Forbidden and the action
    assert bought.returncode == 2 and "Forbidden" in bought.stderr and "purchase" in bought.stderr
    assert audit.returncode == 2 and "Forbidden" in audit.stderr and "audit" in audit.stderr


def test_a_job_that_would_exceed_its_team_s_budget_is_refused_with_the_timeout_that_fits(cloud: RunningCloud) -> None:
    # Given lab's $1.841 a day, nothing of it committed
    assert team(cloud, "lab")["committed_usd"] == 0

    # When erin submits a job of 10 hours at $0.526 an hour
    status, refused = submit(cloud, "erin", timeout_minutes=600)

    # Then it is refused with lab's figures and the longest timeout that fits; a job of that timeout is accepted
    assert status == 403 and refused["error"] == "BudgetExceeded", refused
    assert (refused["team"], refused["spent_usd"], refused["committed_usd"]) == ("lab", 0, 0)
    assert refused["budget_usd"] == pytest.approx(HOURLY * 3.5, abs=1e-6)
    assert refused["job_worst_case_usd"] == pytest.approx(HOURLY * 10, abs=1e-6)
    assert refused["fits_with_timeout_minutes"] == 210
    status, fitting = submit(cloud, "erin", timeout_minutes=refused["fits_with_timeout_minutes"])
    assert status == 202, fitting
    assert cli(cloud, "erin", "cancel", fitting["job_id"]).returncode == 0
    assert team(cloud, "lab")["committed_usd"] == 0


def test_concurrent_submits_never_commit_more_than_the_team_s_budget(cloud: RunningCloud) -> None:
    # Given lab's budget, which holds three one-hour jobs, and jobs that cannot start (lab's cap is 0 GPUs)
    go = threading.Barrier(8)
    answers: list[tuple[int, Any]] = []

    def one() -> None:
        go.wait()
        answers.append(submit(cloud, "erin", name="racing"))

    # When eight are submitted at once through the API
    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    # Then three are accepted and five refused for the budget, and what lab holds is within its budget
    statuses = sorted(status for status, _ in answers)
    assert statuses == [202] * 3 + [403] * 5, answers
    assert all(body["error"] == "BudgetExceeded" for status, body in answers if status == 403)
    lab = team(cloud, "lab")
    assert (
        lab["committed_usd"] == pytest.approx(HOURLY * 3, abs=1e-6)
        and lab["committed_usd"] <= lab["budget_usd_per_day"]
    )
    # And cancelling them gives their commitments back (none ran: none spent)
    for status, body in answers:
        if status == 202:
            assert call(cloud, "erin", "DELETE", f"/jobs/{body['job_id']}")[0] == 202
    assert (team(cloud, "lab")["committed_usd"], team(cloud, "lab")["spent_usd_today"]) == (0, 0)


def test_a_team_at_its_gpu_cap_has_its_next_job_wait_which_starts_when_the_first_ends_and_holds_no_other_team(
    cloud: RunningCloud,
) -> None:
    # Given alice's first job running, vision's one GPU held by it
    first = submit(cloud, "alice", name="first")[1]["job_id"]
    wait_for(cloud, "alice", first, {"RUNNING"})

    # When alice submits a second, waiting briefly before its wait is diagnosed, and bob (nlp) one of the same type
    second = submit(cloud, "alice", name="second", stuck_after_minutes=0.05)[1]["job_id"]
    held = wait_for(cloud, "alice", second, {"RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED"})
    other = submit(cloud, "bob", name="other")[1]["job_id"]

    # Then the second waits RUNNABLE, diagnosed TEAM_GPU_CAP with vision's figures, and is never fallen back
    assert held["status"] == "RUNNABLE", held
    diagnosis = held["attempts"][-1]["diagnosis"]
    assert diagnosis["category"] == "TEAM_GPU_CAP", held
    assert {"team": "vision", "gpus_in_use": 1, "max_gpus": 1, "jobs_ahead": 0}.items() <= diagnosis["evidence"].items()
    explained = json.loads(cli(cloud, "alice", "--json", "status", second, "--explain").stdout)
    assert explained["explanation"]["category"] == "TEAM_GPU_CAP"
    # And bob's job in the same pool starts while vision's second still waits
    running = wait_for(cloud, "bob", other, {"RUNNING", "SUCCEEDED", "FAILED"})
    assert running["status"] in ("RUNNING", "SUCCEEDED"), running
    assert running["attempts"][0]["job_queue"] == held["attempts"][0]["job_queue"]
    assert job_of(cloud, "alice", second)["status"] == "RUNNABLE"
    assert job_of(cloud, "alice", first)["status"] == "RUNNING"
    # And once the first ends, the second starts: one attempt, never moved to another GPU type
    done_first = wait_for(cloud, "alice", first, {"SUCCEEDED", "FAILED"})
    done = wait_for(cloud, "alice", second, {"SUCCEEDED", "FAILED"})
    assert (done_first["status"], done["status"]) == ("SUCCEEDED", "SUCCEEDED")
    assert len(done["attempts"]) == 1
    # (when it left RUNNABLE: STARTING, or RUNNING when Batch's STARTING event came after it, as EventBridge may
    # deliver it; compared to the second, since a Batch event's time has no fraction)
    started = next(e["at"] for e in done["timeline"] if e["status"] in ("STARTING", "RUNNING"))
    assert started[:19] >= next(e["at"] for e in done_first["timeline"] if e["status"] == "SUCCEEDED")[:19]


def test_a_finished_job_keeps_what_it_cost_spent_and_releases_the_rest(cloud: RunningCloud) -> None:
    # Given vision's jobs all ended, each priced
    for job in call(cloud, "root", "GET", "/jobs?team=vision&limit=100")[1]["jobs"]:
        if job["status"] not in ("SUCCEEDED", "FAILED", "CANCELLED"):
            wait_for(cloud, "root", job["job_id"], {"SUCCEEDED", "FAILED", "CANCELLED"})
    answer = call(cloud, "root", "GET", "/jobs?team=vision&limit=100")[1]
    cost = sum(job["cost"]["usd"] for job in answer["jobs"] if job.get("cost"))

    # When vision's budget is read / Then nothing stays committed, and what they cost is spent
    vision = team(cloud, "vision")
    assert vision["committed_usd"] == 0
    assert cost > 0 and vision["spent_usd_today"] == pytest.approx(cost, abs=1e-6)


def test_costs_group_by_team_and_owner_teams_and_the_audit_log_say_who_did_what(cloud: RunningCloud) -> None:
    # Given the module's jobs / When the admin reads costs by team and by owner, the teams and the audit log
    by_team = json.loads(cli(cloud, "root", "--json", "costs", "--group-by", "team").stdout)
    by_owner = json.loads(cli(cloud, "root", "--json", "costs", "--group-by", "owner").stdout)
    bobs = json.loads(cli(cloud, "bob", "--json", "costs", "--group-by", "team").stdout)
    teams = cli(cloud, "root", "teams")
    bob_teams = json.loads(cli(cloud, "bob", "--json", "teams").stdout)
    audit = json.loads(cli(cloud, "root", "--json", "audit").stdout)["events"]

    # Then costs split by team and by owner, bob reads nlp's only; the teams table shows every team to the admin,
    # nlp's alone to bob
    assert {g["key"] for g in by_team["groups"]} >= {"vision", "nlp"}
    assert {g["key"] for g in by_owner["groups"]} >= {IDENTITIES["alice"]["arn"], IDENTITIES["bob"]["arn"]}
    assert [g["key"] for g in bobs["groups"]] == ["nlp"]
    assert teams.returncode == 0 and all(name in teams.stdout for name in ("vision", "nlp", "lab"))
    assert [t["team"] for t in bob_teams["teams"]] == ["nlp"]
    # And the audit log holds the submits, the cancels and the refusals, each with who, team, role and outcome
    lines = {(e["principal"].rsplit("/", 1)[-1], e["action"], e["outcome"]) for e in audit}
    assert {("alice", "submit", "allowed"), ("carol", "submit", "forbidden"), ("carol", "cancel", "forbidden"),
            ("erin", "submit", "budget_exceeded"), ("erin", "cancel", "allowed"), ("bob", "purchase", "forbidden"),
            ("alice", "audit", "forbidden")} <= lines  # fmt: skip
    refusal = next(e for e in audit if e["outcome"] == "budget_exceeded")
    assert (refusal["team"], refusal["role"], refusal["detail"]["fits_with_timeout_minutes"]) == ("lab", "member", 210)
