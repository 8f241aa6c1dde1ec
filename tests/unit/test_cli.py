"""The CLI's request building and its one-line refusals (no API is reached in any of these)."""

from __future__ import annotations

import json

import pytest

from gpupilot.cli import UsageError, build_parser, job_body, main
from gpupilot.client import ApiClient, ApiResponse, ApiUnreachable


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
    with pytest.raises(UsageError, match="must hold a JSON object"):
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


def test_costs_as_csv_prints_the_apis_csv_as_it_is(monkeypatch, capsys):
    seen = []

    def csv_answer(self, method, path, body=None, query=None, headers=None):
        seen.append((path, query, headers))
        return ApiResponse(200, "date,job_id\n2026-11-23,j1\n")

    monkeypatch.setattr(ApiClient, "request", csv_answer)
    assert main(["costs", "--csv", "--group-by", "gpu_type"]) == 0
    assert capsys.readouterr().out == "date,job_id\n2026-11-23,j1\n"
    assert seen[0][2] == {"Accept": "text/csv"} and seen[0][1]["group_by"] == "gpu_type"
