"""The CLI's request building, its one-line (or JSON) refusals, its retries, its help and its progress while
waiting (no real API is reached: answers are faked, or come from a scripted server on loopback)."""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta
from email.utils import format_datetime

import pytest

from gpupilot.cli import build_parser, following, job_request, main, render
from gpupilot.cli.arguments import UsageError
from gpupilot.cli.client import ApiClient, ApiResponse, ApiUnreachable
from gpupilot.cli.job_request import job_body
from tests.unit.scripted_api import Answer, ScriptedApi, in_progress


def body_of(*argv: str) -> dict:
    return job_body(build_parser().parse_args(["submit", *argv]))


def write_request(tmp_path, content: object) -> str:
    path = tmp_path / "job.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


# -- job_body -------------------------------------------------------------------------------------
def test_flags_override_the_fields_of_the_request_file(tmp_path):
    # Given a request file and flags that set two of its fields
    path = write_request(tmp_path, {"name": "from-file", "image": "img:1", "gpus": 1, "command": ["a"]})

    # When building the body
    body = body_of("--file", path, "--name", "from-flag", "--gpus", "2")

    # Then the flags win and the file's other fields stay
    assert body == {"name": "from-flag", "image": "img:1", "gpus": 2, "command": ["a"]}


def test_price_band_is_a_flag_of_submit_and_plan():
    # Given / When / Then: a job may widen the band its fallbacks stay within
    assert body_of("--name", "n", "--price-band", "13.1")["price_band"] == 13.1
    assert job_body(build_parser().parse_args(["plan", "--price-band", "4"]))["price_band"] == 4.0


def test_flags_alone_build_the_body_with_typed_values_and_repeated_lists():
    # Given / When
    body = body_of(
        "--name", "n", "--image", "i", "--min-gpu-memory-gib", "20", "--gpu-model", "L4", "--gpu-model", "A10G",
        "--capacity", "spot-first", "--arch", "arm64",
    )  # fmt: skip

    # Then
    assert body == {
        "name": "n",
        "image": "i",
        "min_gpu_memory_gib": 20.0,
        "gpu_models": ["L4", "A10G"],
        "capacity": "spot-first",
        "arch": "arm64",
    }


def test_command_after_the_double_dash_becomes_the_command_list():
    # Given / When
    body = body_of("--name", "n", "--", "python", "train.py", "--epochs", "3")

    # Then the separator is dropped and flag-like arguments belong to the command
    assert body["command"] == ["python", "train.py", "--epochs", "3"]


def test_a_double_dash_inside_the_command_is_kept():
    # Given a command that itself passes '--' to sh
    # When building the body
    body = body_of("--name", "n", "--", "sh", "-c", 'exec "$@"', "--", "python", "x.py")

    # Then only the first '--' (the CLI's separator) is removed
    assert body["command"] == ["sh", "-c", 'exec "$@"', "--", "python", "x.py"]


def test_command_flags_override_the_files_command(tmp_path):
    # Given a file with a command
    path = write_request(tmp_path, {"command": ["old"]})

    # When / Then
    assert body_of("--file", path, "--", "new", "arg")["command"] == ["new", "arg"]


def test_env_pairs_are_parsed_into_the_environment_splitting_at_the_first_equals():
    # Given / When
    body = body_of("--env", "EPOCHS=3", "--env", "URL=http://x/?a=b", "--env", "EMPTY=")

    # Then
    assert body["environment"] == {"EPOCHS": "3", "URL": "http://x/?a=b", "EMPTY": ""}


def test_env_pairs_are_added_to_the_files_environment(tmp_path):
    # Given a file with its own environment
    path = write_request(tmp_path, {"environment": {"FROM_FILE": "1", "SHARED": "file"}})

    # When / Then: flags add to it and win on the same name
    body = body_of("--file", path, "--env", "SHARED=flag", "--env", "EXTRA=2")
    assert body["environment"] == {"FROM_FILE": "1", "SHARED": "flag", "EXTRA": "2"}


@pytest.mark.parametrize("pair", ["NOEQUALS", "=value"])
def test_env_pair_without_a_name_or_equals_is_a_usage_error(pair):
    # Given / When / Then
    with pytest.raises(UsageError, match=f"--env '{pair}' must be NAME=VALUE"):
        body_of("--env", pair)


def test_request_file_that_is_not_json_is_a_usage_error(tmp_path):
    # Given / When / Then
    path = write_request(tmp_path, "{not json")
    with pytest.raises(UsageError, match="is not valid JSON"):
        body_of("--file", path)


def test_request_file_that_is_not_an_object_is_a_usage_error(tmp_path):
    # Given / When / Then
    path = write_request(tmp_path, ["a", "list"])
    with pytest.raises(UsageError, match="must hold a mapping of the request's fields"):
        body_of("--file", path)


def test_missing_request_file_is_a_usage_error(tmp_path):
    # Given / When / Then
    with pytest.raises(UsageError, match="cannot read --file"):
        body_of("--file", str(tmp_path / "absent.json"))


# -- main ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["submit", "--gpus", "two"],
        ["submit", "--capacity", "cheapest"],
        ["submit", "--no-such-flag"],
    ],
)
def test_bad_flag_exits_2_with_one_line_on_stderr(capsys, argv):
    # Given / When
    with pytest.raises(SystemExit) as exited:
        main(argv)

    # Then the exit status is 2 and stderr is exactly one 'gpupilot:' line
    captured = capsys.readouterr()
    assert exited.value.code == 2
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("gpupilot: ")
    assert captured.out == ""


def test_bad_env_pair_returns_2_with_one_line_on_stderr(capsys):
    # Given / When: refused while building the body, before any request
    code = main(["submit", "--name", "n", "--env", "oops", "--", "true"])

    # Then
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == "gpupilot: --env 'oops' must be NAME=VALUE\n"


def test_global_flags_work_after_the_command_too():
    args = build_parser().parse_args(["list", "--json", "--endpoint", "http://127.0.0.1:1"])
    before = build_parser().parse_args(["--json", "list"])
    assert (args.json, args.endpoint) == (True, "http://127.0.0.1:1")
    assert (before.json, before.endpoint) == (True, None)


def test_an_endpoint_that_is_not_a_url_exits_2_with_one_line(capsys):
    code = main(["--endpoint", "foo", "list"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "foo" in err


def test_a_job_id_is_sent_as_one_path_segment(monkeypatch):
    seen = []

    def fake_request(self, method, path, body=None, query=None, headers=None):
        seen.append(path)
        return ApiResponse(404, {"error": "JobNotFound", "field": "job_id", "message": "no job"})

    monkeypatch.setattr(ApiClient, "request", fake_request)
    assert main(["status", "a b?limit=1"]) == 3  # the API has no such job: exit 3 (README)
    assert seen == ["/jobs/a%20b%3Flimit%3D1"]


# -- exit codes: 0 succeeded, 1 job failed, 2 bad request, 3 not found, 4 service error -------------
@pytest.mark.parametrize(
    ("argv", "answer", "code"),
    [
        (["status", "--wait", "j1"], ApiResponse(200, {"job_id": "j1", "status": "SUCCEEDED", "timeline": []}), 0),
        (["status", "--wait", "j1"], ApiResponse(200, {"job_id": "j1", "status": "FAILED", "timeline": []}), 1),
        (["status", "--wait", "j1"], ApiResponse(200, {"job_id": "j1", "status": "CANCELLED", "timeline": []}), 1),
        (["status", "j1"], ApiResponse(200, {"job_id": "j1", "status": "FAILED", "timeline": []}), 0),
        (["status", "j1"], ApiResponse(400, {"error": "BadRequest", "field": "x", "message": "no"}), 2),
        (["status", "j1"], ApiResponse(404, {"error": "JobNotFound", "field": "job_id", "message": "no job"}), 3),
        (["status", "j1"], ApiResponse(502, {"error": "InternalError", "message": "boom"}), 4),
    ],
)
def test_the_cli_exits_with_its_documented_codes(monkeypatch, capsys, argv, answer, code):
    monkeypatch.setattr(ApiClient, "request", lambda self, *a, **k: answer)
    assert main(["--json", *argv]) == code


def test_an_unreachable_api_is_a_service_error(monkeypatch, capsys):
    def unreachable(self, *args, **kwargs):
        raise ApiUnreachable("cannot reach http://127.0.0.1:1: refused")

    monkeypatch.setattr(ApiClient, "request", unreachable)
    assert main(["list"]) == 4
    assert capsys.readouterr().err.count("\n") == 1


def closed_port_url() -> str:
    """A loopback URL nothing listens at."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_an_unreachable_endpoint_given_by_flag_is_named_with_a_hint_for_that_endpoint(monkeypatch, capsys):
    monkeypatch.delenv("GPUPILOT_ENDPOINT", raising=False)
    url = closed_port_url()
    assert main(["--endpoint", url, "list"]) == 4
    port = url.rsplit(":", 1)[1]
    assert capsys.readouterr().err == (
        f"gpupilot: cannot reach {url}: Connection refused (from --endpoint: is the local cloud running there? "
        f"`gpupilot serve --port {port}` starts it)\n"
    )


def test_an_unreachable_endpoint_from_the_environment_says_where_it_came_from(monkeypatch, capsys):
    url = closed_port_url()
    monkeypatch.setenv("GPUPILOT_ENDPOINT", url)
    assert main(["--json", "list"]) == 4
    error = json_error(capsys)
    assert error["error"] == "ServiceUnreachable"
    assert error["message"].startswith(f"cannot reach {url}: Connection refused (from GPUPILOT_ENDPOINT: ")
    assert "pass --endpoint" not in error["message"]


def test_an_unreachable_deployed_endpoint_is_not_told_to_start_the_local_cloud(monkeypatch, capsys):
    def unreachable(self, *args, **kwargs):
        raise ApiUnreachable(f"cannot reach {self.endpoint}: Name or service not known", self.endpoint)

    monkeypatch.setattr(ApiClient, "request", unreachable)
    assert main(["--endpoint", "https://abc.execute-api.us-east-1.amazonaws.com/v1", "list"]) == 4
    err = capsys.readouterr().err
    assert err.endswith("(from --endpoint: check the URL, that the API is deployed there, and the network)\n")
    assert "gpupilot serve" not in err and err.count("\n") == 1


def test_without_an_endpoint_the_hint_is_to_start_the_local_cloud(monkeypatch, capsys):
    monkeypatch.delenv("GPUPILOT_ENDPOINT", raising=False)
    url = closed_port_url()
    monkeypatch.setattr("gpupilot.cli.client.DEFAULT_LOCAL_ENDPOINT", url)
    assert main(["list"]) == 4
    assert capsys.readouterr().err == (
        f"gpupilot: cannot reach {url}: Connection refused (start the local cloud with `gpupilot serve`, "
        "or pass --endpoint)\n"
    )


def test_costs_as_csv_prints_the_apis_csv_as_it_is(monkeypatch, capsys):
    seen = []

    def csv_answer(self, method, path, body=None, query=None, headers=None):
        seen.append((path, query, headers))
        return ApiResponse(200, "date,job_id\n2026-11-23,j1\n")

    monkeypatch.setattr(ApiClient, "request", csv_answer)
    assert main(["costs", "--csv", "--group-by", "gpu_type"]) == 0
    assert capsys.readouterr().out == "date,job_id\n2026-11-23,j1\n"
    assert seen[0][2] == {"Accept": "text/csv"} and seen[0][1]["group_by"] == "gpu_type"


# -- help: an example for every command ---------------------------------------------------------------
def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_commands_help_has_an_examples_section_that_runs_that_command(capsys, name):
    # Given / When
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"])

    # Then the help ends with examples of that very command
    out = capsys.readouterr().out
    assert exited.value.code == 0
    examples = out.split("Examples:", 1)[1]
    assert f"gpupilot {name}" in examples or f"gpupilot --json {name}" in examples


# -- --json: errors as one JSON object on stderr --------------------------------------------------------
def json_error(capsys) -> dict:
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    return json.loads(captured.err)


def answering(monkeypatch, answer: ApiResponse) -> None:
    monkeypatch.setattr(ApiClient, "request", lambda self, *a, **k: answer)


def test_with_json_a_refused_request_is_a_json_error_naming_the_field_and_exits_2(monkeypatch, capsys):
    # Given the API refuses the request, naming the field
    refusal = {"error": "RequestRefused", "field": "gpus", "message": "gpus: at most 8"}
    answering(monkeypatch, ApiResponse(400, refusal))

    # When
    code = main(["--json", "submit", "--name", "n", "--image", "i", "--gpus", "9", "--", "true"])

    # Then
    assert code == 2
    assert json_error(capsys) == {
        "error": "RequestRefused",
        "message": "--gpus: at most 8",
        "field": "gpus",
        "exit_code": 2,
    }


def test_with_json_a_request_no_offering_can_serve_carries_the_rejections(monkeypatch, capsys):
    rejected = [{"instance_type": "g6.xlarge", "reason": "not offered", "field": "zones"}]
    refusal = {"error": "NoCandidate", "field": "zones", "message": "no GPU offering", "rejected": rejected}
    answering(monkeypatch, ApiResponse(400, refusal))
    assert main(["submit", "--json", "--name", "n", "--image", "i", "--", "true"]) == 2
    assert json_error(capsys)["rejected"] == rejected


def test_with_json_an_unknown_job_is_a_json_error_and_exits_3(monkeypatch, capsys):
    answering(monkeypatch, ApiResponse(404, {"error": "JobNotFound", "field": "job_id", "message": "no job j9"}))
    assert main(["status", "j9", "--json"]) == 3
    assert json_error(capsys) == {"error": "JobNotFound", "message": "no job j9", "field": "job_id", "exit_code": 3}


def test_with_json_an_unreachable_service_is_a_json_error_and_exits_4(monkeypatch, capsys):
    def unreachable(self, *args, **kwargs):
        raise ApiUnreachable("cannot reach http://127.0.0.1:1: refused")

    monkeypatch.setattr(ApiClient, "request", unreachable)
    assert main(["--json", "list"]) == 4
    error = json_error(capsys)
    assert (error["error"], error["field"], error["exit_code"]) == ("ServiceUnreachable", None, 4)
    assert error["message"].startswith("cannot reach http://127.0.0.1:1: refused")


def test_with_json_a_service_failure_is_a_json_error_and_exits_4(monkeypatch, capsys):
    answering(monkeypatch, ApiResponse(502, {"error": "InternalError", "message": "boom"}))
    assert main(["--json", "health"]) == 4
    assert json_error(capsys) == {"error": "InternalError", "message": "boom", "field": None, "exit_code": 4}


def test_with_json_a_bad_flag_is_a_json_error_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["submit", "--json", "--gpus", "two"])
    assert exited.value.code == 2
    error = json_error(capsys)
    assert (error["error"], error["field"], error["exit_code"]) == ("UsageError", "--gpus", 2)
    assert "invalid int value: 'two'" in error["message"]


def test_with_json_bad_local_input_is_a_json_error_naming_the_flag(capsys):
    assert main(["--json", "submit", "--name", "n", "--env", "oops", "--", "true"]) == 2
    assert json_error(capsys) == {
        "error": "UsageError",
        "message": "--env 'oops' must be NAME=VALUE",
        "field": "--env",
        "exit_code": 2,
    }


def test_json_after_the_jobs_double_dash_belongs_to_the_job(capsys):
    # Given --json only inside the job's command: the error stays a plain line
    assert main(["submit", "--name", "n", "--env", "oops", "--", "tool", "--json"]) == 2
    assert capsys.readouterr().err == "gpupilot: --env 'oops' must be NAME=VALUE\n"


def test_without_json_a_refusal_is_still_the_one_line_it_was(monkeypatch, capsys):
    answering(monkeypatch, ApiResponse(404, {"error": "JobNotFound", "field": "job_id", "message": "no job j9"}))
    assert main(["status", "j9"]) == 3
    assert capsys.readouterr().err == "gpupilot: JobNotFound [job_id]: no job j9\n"


# -- Idempotency-Key: a submit still in progress is retried -----------------------------------------------
SUBMIT = ["submit", "--name", "n", "--image", "i", "--idempotency-key", "nightly-42", "--", "true"]
ACCEPTED = Answer(202, {"job_id": "job-1", "status": "SUBMITTED", "execution_arn": "arn", "warnings": []})


def test_submit_retries_while_the_same_key_is_in_progress_and_prints_the_first_calls_job(capsys):
    # Given an API still processing the first call with this key for two more answers
    with ScriptedApi(in_progress("0"), in_progress("0"), ACCEPTED) as api:
        # When
        code = main(["--endpoint", api.url, *SUBMIT])

    # Then the CLI retried and reports the job, as if the first answer had been it
    assert code == 0
    assert capsys.readouterr() == ("submitted job-1\n", "")
    assert [r.headers["Idempotency-Key"] for r in api.received] == ["nightly-42"] * 3


def test_submit_gives_up_on_a_key_in_progress_for_too_long_with_a_service_error(monkeypatch, capsys):
    # Given an API that never finishes the first call, and a short limit
    monkeypatch.setattr("gpupilot.cli.client.IN_PROGRESS_LIMIT_SECONDS", 0.3)
    with ScriptedApi(in_progress("0.1")) as api:
        # When
        code = main(["--endpoint", api.url, "--json", *SUBMIT])

    # Then exit 4, saying why
    assert code == 4
    error = json_error(capsys)
    assert (error["error"], error["field"], error["exit_code"]) == ("IN_PROGRESS", "Idempotency-Key", 4)
    assert "still in progress" in error["message"]
    assert 3 <= len(api.received) <= 5


def test_a_key_reused_with_another_body_exits_2_with_one_line(capsys):
    refusal = {"error": "IdempotencyKeyReused", "field": "Idempotency-Key", "message": "used with a different body"}
    with ScriptedApi(Answer(422, refusal)) as api:
        code = main(["--endpoint", api.url, *SUBMIT])
    assert code == 2 and len(api.received) == 1
    assert capsys.readouterr().err == ("gpupilot: IdempotencyKeyReused [Idempotency-Key]: used with a different body\n")


# -- transient failures: retried where that is safe, and a submit is always safe to retry ------------------------
SERVICE_ERROR = Answer(500, {"error": "InternalError", "message": "Lambda.ServiceException"})
SUCCEEDED_JOB = Answer(200, {"job_id": "job-1", "name": "n", "status": "SUCCEEDED", "attempts": [], "timeline": []})


def test_submit_wait_rides_out_a_500_on_the_submit_and_on_a_poll(capsys):
    # Given an API whose submit and whose poll each fail once, transiently (the local cloud's lambda_errors)
    with ScriptedApi(SERVICE_ERROR, ACCEPTED, SERVICE_ERROR, SUCCEEDED_JOB) as api:
        # When submitting with a key and waiting
        code = main(["--endpoint", api.url, "--json", *SUBMIT[:-2], "--wait", "--", "true"])

    # Then both were retried and the job is reported
    assert code == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["status"] == "SUCCEEDED"
    assert [(r.method, r.path) for r in api.received] == [("POST", "/jobs")] * 2 + [("GET", "/jobs/job-1")] * 2


def test_a_submit_without_a_key_gets_one_of_its_own_that_its_retries_repeat(capsys):
    # Given an API whose first answer to each submit is a transient failure
    with ScriptedApi(SERVICE_ERROR, ACCEPTED, SERVICE_ERROR, ACCEPTED) as api:
        # When two submits are made without --idempotency-key
        for _ in range(2):
            assert main(["--endpoint", api.url, "submit", "--name", "n", "--image", "i", "--", "true"]) == 0

    # Then each call sent a key of its own, the same on its retry, so a retry can never start a second job
    keys = [r.headers.get("Idempotency-Key") for r in api.received]
    assert len(keys) == 4 and keys[0] == keys[1] and keys[2] == keys[3] and keys[0] != keys[2]
    assert all(key and key.startswith("gpupilot-") for key in keys)


# -- progress while waiting: stderr only, stdout as it was ----------------------------------------------------
def job_state(status: str, reason: str | None = None, *timeline: str) -> dict:
    return {
        "job_id": "j1",
        "name": "train",
        "status": status,
        "instance_type": "g6.xlarge",
        "gpu_model": "L4",
        "attempts": [],
        "reason": reason,
        "timeline": [{"status": s, "at": f"2026-11-23T10:00:0{i}.000Z"} for i, s in enumerate(timeline)],
    }


CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
POLLS = [
    job_state("RUNNABLE", CAPACITY, "SUBMITTED", "RUNNABLE"),
    job_state("RUNNABLE", CAPACITY, "SUBMITTED", "RUNNABLE"),
    job_state("RUNNING", None, "SUBMITTED", "RUNNABLE", "RUNNING"),
    job_state("SUCCEEDED", None, "SUBMITTED", "RUNNABLE", "RUNNING", "SUCCEEDED"),
]


def answered(job: dict, seconds_later: float = 0) -> ApiResponse:
    """The API's answer with the job, its Date `seconds_later` than the job's last timeline entry (the API's clock)."""
    at = job["timeline"][-1]["at"] if job["timeline"] else "2026-11-23T10:00:00.000Z"
    now = datetime.fromisoformat(at.replace("Z", "+00:00")) + timedelta(seconds=seconds_later)
    return ApiResponse(200, job, headers={"date": format_datetime(now, usegmt=True)})


def polled(monkeypatch, polls: list[dict], seconds_later: float = 0) -> list[dict | None]:
    """An API answering each poll in turn (`seconds_later` than the answer's last timeline entry); the queries asked."""
    answers = iter(polls)
    asked: list[dict | None] = []

    def request(self, method, path, body=None, query=None, **kwargs):
        asked.append(query)
        return answered(next(answers), seconds_later)

    monkeypatch.setattr(ApiClient, "request", request)
    monkeypatch.setattr("gpupilot.cli.following.time.sleep", lambda seconds: None)
    return asked


def test_status_wait_shows_each_status_change_and_the_wait_reason_on_stderr(monkeypatch, capsys):
    # Given a job that waits for capacity, then runs and succeeds
    polled(monkeypatch, POLLS)

    # When following it (stderr is not a terminal here)
    code = main(["status", "--wait", "j1"])

    # Then stderr has one plain line per change: the status, the GPU type, the time waited, the reason
    err = capsys.readouterr().err.splitlines()
    assert code == 0
    assert [line.split("  ")[1] for line in err] == ["RUNNABLE", "RUNNING", "SUCCEEDED"]
    assert err[0].startswith("job j1  RUNNABLE  g6.xlarge (L4)  0 s")
    assert err[0].endswith(f"waiting: {CAPACITY}")


EXPLAINED = {
    "category": "ECS_AGENT_NOT_REGISTERED",
    "reason": "1 instance(s) running but never registered with ECS (oldest 700 s): i-0abc; Batch gives no reason",
    "recommendation": "... GPU Pilot falls back to g6.xlarge (on-demand) at 12:41 UTC unless it starts.",
}
NEXT = {"action": "fall_back", "at": "2026-11-23T12:41:07.000Z",
        "candidate": {"instance_type": "g6.xlarge", "capacity": "on-demand"}}  # fmt: skip


def explaining(monkeypatch, status: str = "RUNNABLE") -> list[dict | None]:
    """An API whose job waits without a reason; ?explain=true answers with a diagnosis and the next action."""
    asked: list[dict | None] = []

    def request(self, method, path, body=None, query=None, **kwargs):
        asked.append(query)
        job = job_state(status, None, "SUBMITTED", "RUNNABLE")
        if query and query.get("explain") == "true":
            job |= {"explanation": EXPLAINED, "next_action": NEXT}
        return ApiResponse(200, job)

    monkeypatch.setattr(ApiClient, "request", request)
    return asked


def test_plain_status_of_a_job_waiting_without_a_reason_shows_the_cause_the_evidence_gives_and_the_next_action(
    monkeypatch, capsys
):
    # Given a job RUNNABLE for which Batch gives no reason
    asked = explaining(monkeypatch)

    # When a user asks its status, without --explain
    assert main(["status", "j1"]) == 0

    # Then the CLI asked for the explanation, and shows the cause and when it falls back
    out = capsys.readouterr().out
    assert asked == [None, {"explain": "true"}]
    assert "ECS_AGENT_NOT_REGISTERED: 1 instance(s) running but never registered" in out
    assert "falls back to g6.xlarge (on-demand) at 12:41:07 UTC unless it starts" in out


def test_plain_status_of_a_running_job_asks_nothing_more(monkeypatch, capsys):
    asked = explaining(monkeypatch, status="RUNNING")
    assert main(["status", "j1"]) == 0
    assert asked == [None]


def test_status_wait_says_at_once_how_long_the_job_has_waited_and_why_and_says_it_once(monkeypatch, capsys):
    # Given a job RUNNABLE for 38 s (by the API's clock) for which Batch gives no reason, seen by four polls before it
    # runs: the first asks why, the next ones, within EXPLAIN_EVERY_SECONDS of it, do not
    waiting = job_state("RUNNABLE", None, "SUBMITTED", "RUNNABLE")
    explained = waiting | {"explanation": EXPLAINED, "next_action": NEXT}
    asked = polled(monkeypatch, [waiting, explained, waiting, waiting, *POLLS[2:]], seconds_later=38)

    # When following it (stderr is not a terminal here: plain lines)
    assert main(["status", "--wait", "j1"]) == 0

    # Then its first poll asked for the explanation at once, and no later poll of the same wait did
    assert asked[:4] == [None, {"explain": "true"}, None, None]
    # And stderr's first line says the 38 s waited, the cause and the next action; a line comes only when the job
    # changes (the polls between explanations keep the last one: no line without the cause in between)
    err = capsys.readouterr().err.splitlines()
    assert [line.split("  ")[1] for line in err] == ["RUNNABLE", "RUNNING", "SUCCEEDED"]
    assert err[0] == (
        f"job j1  RUNNABLE  g6.xlarge (L4)  38 s  waiting: ECS_AGENT_NOT_REGISTERED: {EXPLAINED['reason']}; falls back "
        "to g6.xlarge (on-demand) at 12:41:07 UTC unless it starts"
    )


def test_status_wait_says_a_cause_explained_again_with_newer_numbers_once(monkeypatch, capsys):
    # Given a job explained at every poll (EXPLAIN_EVERY_SECONDS 0), its diagnosis saying newer numbers each time
    monkeypatch.setattr(following, "EXPLAIN_EVERY_SECONDS", 0.0)
    waiting = job_state("RUNNABLE", None, "SUBMITTED", "RUNNABLE")
    older = EXPLAINED | {"reason": EXPLAINED["reason"].replace("700 s", "710 s")}
    polls = [waiting, waiting | {"explanation": EXPLAINED}, waiting, waiting | {"explanation": older}, *POLLS[2:]]
    asked = polled(monkeypatch, polls, seconds_later=38)

    # When following it
    assert main(["status", "--wait", "j1"]) == 0

    # Then both polls of the wait were explained, and the cause was said once, on stdout and on stderr
    assert asked[:4] == [None, {"explain": "true"}, None, {"explain": "true"}]
    captured = capsys.readouterr()
    assert sum("ECS_AGENT_NOT_REGISTERED" in line for line in captured.out.splitlines()) == 1
    assert [line.split("  ")[1] for line in captured.err.splitlines()] == ["RUNNABLE", "RUNNING", "SUCCEEDED"]


def test_status_wait_prints_on_stdout_exactly_what_it_printed_before(monkeypatch, capsys):
    # Given
    polled(monkeypatch, POLLS)

    # When
    main(["status", "--wait", "j1"])

    # Then stdout is the timeline, the reason and the summary, and no progress line
    last = POLLS[-1]
    expected = [render.progress_line(entry, POLLS[0]) for entry in POLLS[0]["timeline"]]
    expected.append(render.reason_line(CAPACITY, 0))
    expected += [render.progress_line(entry, POLLS[2]) for entry in POLLS[2]["timeline"][2:]]
    expected += [render.progress_line(entry, last) for entry in last["timeline"][3:]]
    expected.append(render.job_summary(last))
    assert capsys.readouterr().out == "\n".join(expected) + "\n"


def test_status_wait_with_json_keeps_stderr_empty_when_it_is_not_a_terminal(monkeypatch, capsys):
    polled(monkeypatch, POLLS)
    assert main(["--json", "status", "--wait", "j1"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert json.loads(captured.out)["status"] == "SUCCEEDED"


def test_on_a_terminal_the_progress_is_one_live_line_that_stdout_lines_do_not_break(capsys):
    # Given a live progress display on a terminal-like stream
    stream = io.StringIO()
    with render.WaitProgress(stream=stream, live=True) as progress:
        # When the job is seen waiting and a timeline line is printed meanwhile
        progress.update(job_state("RUNNABLE", CAPACITY), 75)
        progress.stdout(print)("  10:00:00.000  RUNNABLE")
        progress.update(job_state("RUNNING"), 80)

    # Then the line was drawn with the status, the elapsed time and the reason, and erased at the end
    drawn = stream.getvalue()
    assert "job j1  RUNNABLE  g6.xlarge (L4)  1 min 15 s  waiting: CAPACITY" in drawn
    assert "\x1b[" in drawn  # cursor control: the line is redrawn in place
    # And stdout got its line untouched
    assert capsys.readouterr().out == "  10:00:00.000  RUNNABLE\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("term", "live"), [("xterm-256color", True), ("dumb", False)])
def test_the_live_line_is_for_terminals_that_can_redraw_it(monkeypatch, term, live):
    monkeypatch.setenv("TERM", term)
    assert render.WaitProgress(stream=Terminal()).live_wanted is live
    assert render.WaitProgress(stream=io.StringIO()).live_wanted is False


def test_the_cli_starts_without_importing_rich():
    # The live line's library is imported only when a terminal shows it: start-up time stays as it was
    shown = subprocess.run(
        [sys.executable, "-c", "import sys, gpupilot.cli; print('rich' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.strip() == "False"


# -- serve: each bad argument is one line, exit 2, no traceback --------------------------------------------
def exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exited:
        return int(exited.code or 0)


def assert_refused_in_one_line(capsys, argv: list[str], *words: str) -> str:
    code = exit_code(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("gpupilot: ")
    assert "Traceback" not in err
    for word in words:
        assert word in err
    return err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--port", "abc"], ["--port", "'abc'"]),
        (["--port", "70000"], ["--port", "0 to 65535"]),
        (["--port", "-1"], ["--port"]),
        (["--aws-port", "65536"], ["--aws-port", "0 to 65535"]),
        (["--speedup", "nan"], ["--speedup", "greater than 0"]),
        (["--speedup", "inf"], ["--speedup"]),
        (["--speedup", "0"], ["--speedup"]),
        (["--speedup", "-3"], ["--speedup"]),
        (["--sweep-seconds", "-1"], ["--sweep-seconds", "0 or more"]),
        (["--sweep-seconds", "nan"], ["--sweep-seconds"]),
        (["--sweep-seconds", "inf"], ["--sweep-seconds"]),
    ],
)
def test_serve_refuses_a_bad_argument_in_one_line(capsys, argv, words):
    assert_refused_in_one_line(capsys, ["serve", *argv], *words)


def test_demo_refuses_a_bad_speedup_in_one_line(capsys):
    assert_refused_in_one_line(capsys, ["demo", "--speedup", "nan"], "--speedup")


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--endpoint", "https://abc.execute-api.us-east-1.amazonaws.com/v1"],
        ["--endpoint", "http://127.0.0.1:9", "demo", "--speedup", "10"],
        ["serve", "--endpoint", "http://127.0.0.1:9"],
    ],
)
def test_demo_and_serve_refuse_an_endpoint_in_one_line_before_starting_anything(monkeypatch, capsys, argv):
    started = []
    monkeypatch.setattr("gpupilot.cli.local._start_cloud", lambda *a, **k: started.append(a))
    err = assert_refused_in_one_line(capsys, argv, "--endpoint is refused")
    assert started == [] and "runs" in err


def test_demo_with_json_refuses_an_endpoint_with_a_json_error(capsys):
    assert main(["--json", "demo", "--endpoint", "http://127.0.0.1:9"]) == 2
    error = json_error(capsys)
    assert (error["error"], error["field"], error["exit_code"]) == ("UsageError", "--endpoint", 2)


def test_the_demo_waits_long_enough_for_its_job_to_fall_back_through_every_attempt_and_run():
    from functions.shared.domain.diagnosis.runnable import MAX_WAIT_CHECKS
    from gpupilot.cli.demo import DEMO_JOB, demo_wait_seconds

    # The demo job is diagnosed within seconds, as the local cloud's timeline is (not after a deployed 15 minutes)
    stuck_after = DEMO_JOB["stuck_after_minutes"] * 60
    assert stuck_after <= 10
    # And the demo follows it through six attempts (each waited on up to 1 + MAX_WAIT_CHECKS times), then its run
    waits = 6 * (1 + MAX_WAIT_CHECKS) * stuck_after
    assert demo_wait_seconds(2, 1) > waits + 2
    assert demo_wait_seconds(3600, 10) > waits + 360


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, ["cannot read world file"]),
        ("{not json", ["not valid JSON"]),
        ('{"jobs": {"runtime_seconds": -1}}', ["jobs.runtime_seconds"]),
        ('{"instance_types": {"g6.xlarge": {"capacity": "plenty"}}}', ["instance_types.g6.xlarge.capacity"]),
        ('{"weather": "sunny"}', ["weather"]),
        ('["a", "list"]', ["world file"]),
    ],
)
def test_serve_refuses_a_missing_or_invalid_world_file_in_one_line(tmp_path, capsys, content, words):
    world = tmp_path / "world.json"
    if content is not None:
        world.write_text(content)
    argv = ["serve", "--world", str(world), "--log-file", str(tmp_path / "cloud.log")]
    assert_refused_in_one_line(capsys, argv, *words)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ('{"instance_types": {"g9.xlarge": {}, "g8.xlarge": {}}}', "unknown GPU type g8.xlarge, g9.xlarge;"),
        ('{"quotas": {"L-0": 1}}', "quotas: unknown code L-0;"),
        ('{"regions": {"us-west-2": {"zones": ["eu-west-1a"]}}}', "zones: eu-west-1a not in region us-west-2"),
        (
            '{"instance_types": {"g5.xlarge": {"zones": ["us-east-1z"]}}}',
            "us-east-1z not in the world's zones (us-east-1a",
        ),
        ('{"faults": {"throttle": {"batch": 2, "ec2": 3}}}', "throttle: batch, ec2 must be probabilities"),
    ],
)
def test_serve_says_a_world_file_s_mistakes_in_words_not_python_lists(tmp_path, capsys, content, said):
    # Given a world file with a mistake in a list of names / When served
    world = tmp_path / "world.json"
    world.write_text(content)
    err = assert_refused_in_one_line(
        capsys, ["serve", "--world", str(world), "--log-file", str(tmp_path / "log")], said
    )
    # Then the names read as words: no Python list, no "(s)"
    assert "['" not in err and "(s)" not in err, err


def test_serve_refuses_an_aws_port_in_use_in_one_line(tmp_path, capsys):
    # Given a port someone listens on
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        # When / Then
        argv = ["serve", "--port", "0", "--aws-port", port, "--log-file", str(tmp_path / "cloud.log")]
        assert_refused_in_one_line(capsys, argv, "--aws-port", f"127.0.0.1:{port}")


def test_serve_refuses_the_same_port_for_the_api_and_the_aws_endpoint(tmp_path, capsys):
    argv = ["serve", "--port", "9999", "--aws-port", "9999", "--log-file", str(tmp_path / "cloud.log")]
    assert_refused_in_one_line(capsys, argv, "--aws-port must differ from --port")


def test_serve_refuses_a_log_file_it_cannot_write_in_one_line(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    argv = ["serve", "--port", "0", "--log-file", str(tmp_path / "a-file" / "cloud.log")]
    assert_refused_in_one_line(capsys, argv, "cannot write --log-file")


def test_serve_refuses_a_host_it_cannot_listen_on_in_one_line(tmp_path, capsys):
    argv = ["serve", "--host", "no-such-host.invalid", "--port", "0", "--log-file", str(tmp_path / "cloud.log")]
    assert_refused_in_one_line(capsys, argv, "--host", "no-such-host.invalid")


def test_serve_refusals_are_json_with_json(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--json", "--speedup", "inf"])
    error = json_error(capsys)
    assert (error["error"], error["field"], error["exit_code"]) == ("UsageError", "--speedup", 2)


# -- a reader that stops reading (`| head`): a quiet exit -------------------------------------------------------
@pytest.mark.parametrize("argv", [["--json", "list"], ["list"], ["--help"]])
def test_a_closed_stdout_ends_the_cli_quietly_with_0(argv):
    # Given an answer far larger than a pipe holds, and a stdout whose reader has gone (as `| head -c 300` leaves it)
    jobs = [
        {"job_id": f"j{i}", "name": "n" * 40, "status": "SUCCEEDED", "instance_type": "g6.xlarge", "cost": None,
         "created_at": "2026-11-23T10:00:00Z"}
        for i in range(3000)
    ]  # fmt: skip
    read_end, write_end = os.pipe()
    os.close(read_end)
    with ScriptedApi(Answer(200, {"jobs": jobs, "next_token": None})) as api:
        # When the CLI prints it
        try:
            ran = subprocess.run(
                [sys.executable, "-m", "gpupilot.cli", "--endpoint", api.url, *argv],
                stdout=write_end,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
                check=False,
            )
        finally:
            os.close(write_end)

    # Then it stops without a word on stderr (no traceback), exit 0
    assert (ran.returncode, ran.stderr) == (0, "")


# -- logs -------------------------------------------------------------------------------------------------------
def log_page(events: list[str], token: str | None, status: str = "SUCCEEDED", stream: str | None = "gpupilot/d/t1",
             attempt: int = 1) -> Answer:  # fmt: skip
    body = {"job_id": "job-1", "status": status, "attempt": attempt, "attempt_status": status, "log_group": "/g",
            "log_stream": stream, "events": [{"at": "2026-11-24T10:00:00.000Z", "message": m} for m in events],
            "next_token": token}  # fmt: skip
    return Answer(200, body)


def test_logs_prints_every_page_of_the_stream_until_the_same_token_comes_back(capsys):
    # Given a stream of two pages, then its end (the token sent comes back)
    with ScriptedApi(log_page(["one"], "t1"), log_page(["two"], "t2"), log_page([], "t2")) as api:
        # When
        code = main(["--endpoint", api.url, "logs", "job-1"])

    # Then both lines, in order, on stdout; each page asked from the last one's token
    assert code == 0
    assert capsys.readouterr().out == "one\ntwo\n"
    assert [r.path for r in api.received] == ["/jobs/job-1/logs", "/jobs/job-1/logs?next_token=t1",
                                              "/jobs/job-1/logs?next_token=t2"]  # fmt: skip


def test_logs_follow_waits_for_the_attempt_to_run_and_stops_once_the_job_has_ended(capsys, monkeypatch):
    # Given a job not yet running, then running with a line, then ended with one more
    monkeypatch.setattr(following, "LOG_POLL_SECONDS", 0)
    script = (log_page([], None, "RUNNABLE", stream=None), log_page(["start"], "t1", "RUNNING"),
              log_page([], "t1", "RUNNING"), log_page(["done"], "t2"), log_page([], "t2"))  # fmt: skip
    with ScriptedApi(*script) as api:
        # When following it
        code = main(["--endpoint", api.url, "logs", "job-1", "--follow", "--attempt", "1"])

    # Then every line is printed once, and the CLI stops at the job's end
    assert code == 0
    assert capsys.readouterr().out == "start\ndone\n"
    assert len(api.received) == 5 and all("attempt=1" in r.path for r in api.received)


NO_ATTEMPT_YET = Answer(
    404, {"error": "AttemptNotFound", "field": "attempt", "message": "job job-1 has no attempt 1 yet"}
)


def test_logs_follow_right_after_submitting_waits_for_the_first_attempt(capsys, monkeypatch):
    # Given a job still choosing its GPU (no attempt yet), then running with a line, then ended
    monkeypatch.setattr(following, "LOG_POLL_SECONDS", 0)
    selecting = Answer(200, {"job_id": "job-1", "status": "SELECTING"})
    script = (NO_ATTEMPT_YET, selecting, NO_ATTEMPT_YET, selecting, log_page(["start"], "t1", "RUNNING"),
              log_page(["done"], "t2"), log_page([], "t2"))  # fmt: skip
    with ScriptedApi(*script) as api:
        # When following its logs
        code = main(["--endpoint", api.url, "logs", "job-1", "--follow"])

    # Then it waits (said once), then prints every line
    out, err = capsys.readouterr()
    assert code == 0 and out == "start\ndone\n"
    assert err.count("waiting for its first attempt") == 1
    assert [r.path for r in api.received][:2] == ["/jobs/job-1/logs", "/jobs/job-1"]


def test_logs_follow_of_a_job_that_ended_without_an_attempt_says_so(capsys, monkeypatch):
    # Given a job that failed before any attempt (nothing could serve it)
    with ScriptedApi(NO_ATTEMPT_YET, Answer(200, {"job_id": "job-1", "status": "FAILED"})) as api:
        code = main(["--endpoint", api.url, "logs", "job-1", "--follow"])
    # Then it stops at once, saying why there is nothing to show
    assert code == 0 and "ended FAILED without an attempt" in capsys.readouterr().err


def test_logs_without_follow_of_a_job_with_no_attempt_is_a_404(capsys):
    with ScriptedApi(NO_ATTEMPT_YET) as api:
        code = main(["--endpoint", api.url, "logs", "job-1"])
    assert code == 3 and "AttemptNotFound" in capsys.readouterr().err


def test_logs_of_an_attempt_that_has_not_run_says_so_on_stderr(capsys):
    # Given an attempt still waiting for a GPU
    with ScriptedApi(log_page([], None, "RUNNABLE", stream=None)) as api:
        code = main(["--endpoint", api.url, "logs", "job-1"])
    # Then nothing on stdout, and why on stderr
    out, err = capsys.readouterr()
    assert code == 0 and out == ""
    assert "has not run yet (RUNNABLE; --follow waits for it): no log stream" in err


def test_logs_json_prints_one_json_object_per_line(capsys):
    with ScriptedApi(log_page(["one"], "t1"), log_page([], "t1")) as api:
        main(["--endpoint", api.url, "--json", "logs", "job-1"])
    assert [json.loads(line)["message"] for line in capsys.readouterr().out.splitlines()] == ["one"]


def test_logs_attempt_must_be_a_whole_number_from_1(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["logs", "job-1", "--attempt", "0"])
    assert exit_.value.code == 2 and "--attempt" in capsys.readouterr().err


# -- help that teaches, and refusals in the CLI's words ------------------------------------------------------------
def subcommands() -> dict[str, argparse.ArgumentParser]:
    actions = build_parser()._subparsers._group_actions  # type: ignore[union-attr]
    return dict(actions[0].choices)


def test_every_flag_of_every_command_has_help_and_every_command_an_example():
    for name, parser in subcommands().items():
        undocumented = [a.option_strings or a.dest for a in parser._actions if not a.help]
        assert not undocumented, (name, undocumented)
        assert "Examples:" in parser.format_help() and f"gpupilot {name}" in parser.epilog, name


def test_the_defaults_help_states_are_the_apis():
    from functions.shared.domain.requests.job_request import JobRequest

    for field, default in job_request.REQUEST_DEFAULTS.items():
        assert JobRequest.model_fields[field].default == default, field


def test_submit_help_marks_name_image_and_the_command_required_and_shows_stuck_after_s_default():
    text = subcommands()["submit"].format_help()
    assert text.startswith("usage: gpupilot submit --name NAME --image IMAGE [options] -- COMMAND")
    assert "required (here, or in the job file):" in text
    assert "(default 15;" in " ".join(text.split())


def test_give_up_after_minutes_help_says_what_a_job_without_it_does():
    # Given submit's help / When reading --give-up-after-minutes
    text = subcommands()["submit"].format_help()
    own = text[text.index("  --give-up-after-minutes") :].split("\n  -", 1)[0]
    words = " ".join(own.split())
    # Then it says the job still fails once its candidates are spent (it never waits forever), not "never"
    assert "never" not in words
    assert "once its last candidate, of --max-attempts, has waited --stuck-after-minutes" in words


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["submit", "--image", "i", "--", "true"], "--name is required"),
        (["plan", "--name", "n", "--", "true"], "--image is required"),
        (["submit", "--name", "n", "--image", "i"], "a command is required: -- COMMAND [ARG ...]"),
    ],
)
def test_a_missing_required_flag_is_said_in_the_cli_s_words_and_nothing_is_sent(capsys, argv, said):
    # Given an API that would answer anything
    with ScriptedApi(ACCEPTED) as api:
        # When a required flag is left out
        code = main(["--endpoint", api.url, *argv])
    # Then exit 2, one line naming the flag, and no call was made
    assert code == 2 and api.received == []
    assert capsys.readouterr().err == f"gpupilot: {said}\n"


def test_an_api_refusal_of_a_field_set_in_the_job_file_names_the_file_s_key(tmp_path, monkeypatch, capsys):
    # Given a job file whose gpus the API refuses
    path = tmp_path / "job.yaml"
    path.write_text('name: n\nimage: i\ncommand: ["true"]\ngpus: 9\n')
    answering(monkeypatch, ApiResponse(400, {"error": "ValidationError", "field": "gpus", "message": "gpus: too many"}))
    # When / Then the line names the key in that file
    assert main(["submit", "-f", str(path)]) == 2
    assert capsys.readouterr().err == f"gpupilot: gpus in {path}: too many\n"


# -- plan: no candidate is bad input, as for submit -------------------------------------------------------------
def test_a_plan_with_no_candidate_prints_the_first_reasons_and_exits_2_with_the_refusal_submit_would_give(capsys):
    rejected = [{"instance_type": "g5.xlarge", "reason": "has 24 GiB per GPU, not 80", "field": "min_gpu_memory_gib"},
                {"instance_type": "p4d.24xlarge", "reason": "not offered in the deployment's zones"}]  # fmt: skip
    refusal = {"error": "NoCandidate", "field": "min_gpu_memory_gib",
               "message": "no GPU offering can serve this request: g5.xlarge: has 24 GiB per GPU, not 80"}  # fmt: skip
    plan = {"candidates": [], "rejected": rejected, "warnings": [], "refusal": refusal}
    with ScriptedApi(Answer(200, plan)) as api:
        code = main(["--endpoint", api.url, "plan", "--name", "n", "--image", "i", "--", "true"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "g5.xlarge" in out and "has 24 GiB per GPU, not 80" in out
    assert err == (
        "gpupilot: NoCandidate [--min-gpu-memory-gib]: no GPU offering can serve this request: g5.xlarge: has 24 GiB "
        "per GPU, not 80\n"
    )


# -- job files ------------------------------------------------------------------------------------------------------
def test_a_yaml_job_file_gives_the_request_by_its_api_names_and_flags_override_it(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("name: train\nimage: my/cuda:1\ncommand: [python, train.py]\ngpus: 2\ngpu_models: [L4, A10G]\n")
    body = body_of("-f", str(path), "--gpus", "4")
    assert body == {"name": "train", "image": "my/cuda:1", "command": ["python", "train.py"], "gpus": 4,
                    "gpu_models": ["L4", "A10G"]}  # fmt: skip


def test_an_unknown_key_in_a_job_file_is_refused_naming_the_key(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("name: train\nimage: i\ncommand: [x]\naccelerators: A100:8\n")
    with pytest.raises(UsageError, match="unknown key 'accelerators'") as refused:
        body_of("-f", str(path))
    assert refused.value.field == "accelerators"


def test_a_job_file_that_is_not_valid_yaml_is_a_usage_error(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(UsageError, match="is not valid YAML"):
        body_of("-f", str(path))


# -- submit: what it starts with, said before (a terminal asks) and after ------------------------------------------
CANDIDATES = [
    {"instance_type": t, "gpu_model": m, "gpus": 1, "gpu_memory_gib": 24, "vcpus": 4, "memory_gib": 16,
     "capacity": "on-demand", "hourly_usd": p, "zones": ["us-east-1a"], "score": 1.0}
    for t, m, p in (("g6.xlarge", "L4", 0.8048), ("g5.xlarge", "A10G", 1.006), ("g4dn.xlarge", "T4", 0.526))
]  # fmt: skip


def test_submit_says_the_first_choice_its_price_the_fallbacks_and_the_warnings_after_submitting(capsys):
    answer = ACCEPTED.body | {"candidates": CANDIDATES, "warnings": ["spot is scarce"]}
    with ScriptedApi(Answer(202, answer)) as api:
        assert main(["--endpoint", api.url, *SUBMIT]) == 0
    out = capsys.readouterr().out
    assert "first choice  g6.xlarge (1x L4, on-demand) $0.8048/h for this job" in out
    assert "fallbacks     g5.xlarge (1x A10G, on-demand) $1.0060/h, then g4dn.xlarge" in out
    assert "warning       spot is scarce" in out


def test_a_replayed_key_says_the_job_was_already_submitted(capsys):
    with ScriptedApi(Answer(202, ACCEPTED.body | {"already_submitted": True})) as api:
        main(["--endpoint", api.url, *SUBMIT])
    assert (
        "submitted job-1  (already submitted with this Idempotency-Key: nothing new started)" in capsys.readouterr().out
    )


def test_a_submit_that_is_not_at_a_terminal_never_asks(capsys):
    # Given stdin is not a terminal (pytest's), and no --yes / When submitting / Then one call: the submit itself
    with ScriptedApi(ACCEPTED) as api:
        assert main(["--endpoint", api.url, *SUBMIT]) == 0
    assert [r.path for r in api.received] == ["/jobs"]


def test_costs_are_asked_by_day_unless_another_dimension_is_given():
    report = {"from": "d", "to": "d", "total_usd": 0, "days": [], "groups": [], "waste": {"usd": 0, "by_reason": {}}}
    with ScriptedApi(Answer(200, report)) as api:
        main(["--endpoint", api.url, "costs"])
        main(["--endpoint", api.url, "costs", "--group-by", "gpu_type"])
    assert ["group_by=day" in r.path for r in api.received] == [True, False]
    assert "group_by=gpu_type" in api.received[1].path


def test_wait_says_why_the_first_type_waited_under_its_line_not_under_the_fallback_s(monkeypatch, capsys):
    # Given a job whose RUNNABLE wait is explained in the same poll that shows its fallback's PROVISIONING
    diagnosis = "INSUFFICIENT_CAPACITY: no g6.xlarge capacity in us-east-1a"
    fell_back = job_state("PROVISIONING", diagnosis, "SUBMITTED", "RUNNABLE", "PROVISIONING")
    fell_back["timeline"][1]["reason"] = diagnosis
    done = job_state("SUCCEEDED", None, "SUBMITTED", "RUNNABLE", "PROVISIONING", "SUCCEEDED")
    done["timeline"][1]["reason"] = diagnosis
    polled(monkeypatch, [job_state("RUNNABLE", None, "SUBMITTED", "RUNNABLE"), fell_back, done])

    # When following it
    main(["status", "--wait", "j1"])

    # Then the reason comes once, right under the RUNNABLE line it explains, before PROVISIONING
    out = [line.split() for line in capsys.readouterr().out.splitlines()]
    statuses = [words[1] if words[0][0].isdigit() else "waiting" for words in out[:4]]
    assert statuses == ["SUBMITTED", "RUNNABLE", "waiting", "PROVISIONING"]
    assert sum(diagnosis.split(":")[0] + ":" in words for words in out) == 1


# -- reserved capacity ----------------------------------------------------------------------------------------
def test_reservation_flags_build_the_body():
    body = body_of("--name", "n", "--capacity", "reserved", "--reservation", "cr-0123", "--reservation-fallback")

    assert (body["capacity"], body["reservation"], body["reservation_fallback"]) == ("reserved", "cr-0123", True)
    assert "reservation_fallback" not in body_of("--name", "n")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["reserve", "cb-0123", "--max-upfront-usd", "10"], "add --yes"),
        (["reservations", "--offerings"], "--offerings needs --type"),
        (["reservations", "--type", "p5.48xlarge"], "--type, --count and --days go with --offerings"),
    ],
)
def test_reservation_commands_refuse_what_they_cannot_do_before_any_request(capsys, argv, said):
    # Given / When: refused before the API is called (no endpoint is reachable here)
    code = main(["--endpoint", "http://127.0.0.1:1", *argv])

    # Then exit 2 with one line saying why
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1 and said in captured.err
