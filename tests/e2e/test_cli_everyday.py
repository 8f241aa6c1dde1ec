"""The CLI's everyday paths through the local cloud: a job file, the flags it requires, and a plan nothing can
serve, each answered in the CLI's own terms (exit 2 and one line for what the user must change)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"


def test_a_yaml_job_file_is_submitted_by_the_requests_field_names_and_flags_win(
    cloud: RunningCloud, tmp_path: Path
) -> None:
    # Given a job file in YAML, with the request's fields by their API names
    job_file = tmp_path / "job.yaml"
    job_file.write_text(
        f"name: from-a-file\nimage: {IMAGE}\ncommand: [nvidia-smi, -L]\ngpus: 1\n"
        "environment:\n  EPOCHS: '3'\ntimeout_minutes: 30\n"
    )

    # When it is submitted with a flag that overrides one of its fields, and waited for
    done = cloud.cli("--json", "submit", "-f", str(job_file), "--timeout-minutes", "45", "--wait")

    # Then the job ran as the file says, with the flag's value
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert (job["status"], job["name"], job["request"]["command"]) == ("SUCCEEDED", "from-a-file", ["nvidia-smi", "-L"])
    assert (job["request"]["environment"], job["request"]["timeout_minutes"]) == ({"EPOCHS": "3"}, 45)


def test_a_job_file_with_a_misspelt_field_is_refused_naming_it_and_nothing_is_submitted(
    cloud: RunningCloud, tmp_path: Path
) -> None:
    # Given a job file whose field is misspelt
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps({"name": "typo", "image": IMAGE, "command": ["true"], "gpu": 2}))
    before = cloud.api.request("GET", "/jobs", query={"limit": 100}).body["jobs"]

    # When / Then exit 2, one line naming the key, and no job
    refused = cloud.cli("submit", "-f", str(job_file), "--yes")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "unknown key 'gpu'" in refused.stderr
    assert len(cloud.api.request("GET", "/jobs", query={"limit": 100}).body["jobs"]) == len(before)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--image", IMAGE, "--", "true"), "--name is required"),
        (("--name", "no-image", "--", "true"), "--image is required"),
        (("--name", "no-command", "--image", IMAGE), "a command is required"),
    ],
)
def test_a_missing_required_flag_is_said_in_the_cli_s_terms_with_exit_2(
    cloud: RunningCloud, args: tuple[str, ...], said: str
) -> None:
    # When a submit or a plan lacks a required flag
    for command in ("submit", "plan"):
        refused = cloud.cli(command, *args)
        # Then one line in the CLI's words, not the API's field error, and exit 2
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert said in refused.stderr and "Field required" not in refused.stderr


def test_a_plan_nothing_can_serve_exits_2_with_its_first_reasons_as_submit_does(cloud: RunningCloud) -> None:
    # Given a request no offering of the deployment can serve (eight GPUs on a one-GPU type)
    request = ("--name", "too-big", "--image", IMAGE, "--gpus", "8", "--instance-type", "g4dn.xlarge", "--", "true")

    # When planned, and submitted
    planned = cloud.cli("plan", *request)
    submitted = cloud.cli("submit", "--yes", *request)

    # Then both exit 2 with one line giving the first reasons, naming the type
    for refused in (planned, submitted):
        assert refused.returncode == 2, refused.stderr
        last = refused.stderr.strip().splitlines()[-1]
        assert "no GPU offering can serve this request" in last and "g4dn.xlarge" in last, refused.stderr
