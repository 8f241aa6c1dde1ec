"""Values a job carries in `environment`, the secrets it references and the functions' own settings never reach
the logs: the job's owner may read the request back through the API and the CLI, the logs must not show it."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from functions.shared import constants as c
from functions.shared.observability import REDACTED, logger
from gpupilot.localcloud.timeline import TIMELINE_OVERRIDES
from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e

IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
JOB = {"name": "redaction", "image": IMAGE, "command": ["nvidia-smi", "-L"]}
# The cheapest fitting type has no capacity: each job's first attempt is diagnosed, terminated and replaced, so
# the diagnosis and fallback paths handle these values too, not only the happy path.
WORLD = {"instance_types": {"g4dn.xlarge": {"capacity": "none"}}, "jobs": {"runtime_seconds": 1}}
STUCK_AFTER_MINUTES = 0.05
FUNCTION_PROBE = "REDACTION_PROBE"
# What an operator turns on to debug a function: every event it receives logged, and debug logs. The local cloud
# runs the handlers in its own process, so its environment is the functions' environment at import.
DEBUG_SWITCHES = {"POWERTOOLS_LOGGER_LOG_EVENT": "true", "POWERTOOLS_LOG_LEVEL": "DEBUG"}


def _sentinel(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex}"


def _session() -> boto3.session.Session:
    return boto3.session.Session(region_name="us-east-1")


def _plant_in_every_function(cloud: RunningCloud, value: str) -> None:
    """An operator's setting in every function's environment (UpdateFunctionConfiguration, as a redeploy would),
    next to what the deployment and the local timeline gave it."""
    awslambda = _session().client("lambda", endpoint_url=cloud.aws_url)
    for spec in c.LAMBDAS:
        name = c.function_name("gpupilot", spec.key)
        variables = awslambda.get_function_configuration(FunctionName=name)["Environment"]["Variables"]
        variables |= TIMELINE_OVERRIDES.get(spec.key, {}) | {FUNCTION_PROBE: value}
        awslambda.update_function_configuration(FunctionName=name, Environment={"Variables": variables})


def _logs(cloud: RunningCloud) -> str:
    """Everything the local cloud logged: the handlers' log file and the server's console."""
    files = (cloud.log_file, cloud.log_file.with_name("serve.out"))
    return "".join(path.read_text() for path in files if path.exists())


def test_environment_values_secrets_and_function_settings_never_reach_the_logs(
    cloud_factory: Callable[..., RunningCloud], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the local cloud with the functions logging every event they receive
    for name, value in DEBUG_SWITCHES.items():
        monkeypatch.setenv(name, value)
    cloud = cloud_factory(WORLD)
    # And a setting of the operator's in every function's environment
    function_setting = _sentinel("function-setting")
    _plant_in_every_function(cloud, function_setting)
    # And a secret under the deployment's prefix, whose value GPU Pilot never needs to see
    secret_value = _sentinel("secret-value")
    secrets = _session().client("secretsmanager", endpoint_url=cloud.aws_url)
    name = f"gpupilot/redaction-{uuid.uuid4().hex[:8]}"
    secret_arn = secrets.create_secret(Name=name, SecretString=secret_value)["ARN"]
    by_api, by_cli, planned, refused = (_sentinel(kind) for kind in ("api", "cli", "plan", "refused"))

    # When a job carrying a value in its environment and a job referencing the secret are submitted by the API
    env_job = cloud.api.request(
        "POST", "/jobs", JOB | {"environment": {"HF_TOKEN": by_api}, "stuck_after_minutes": STUCK_AFTER_MINUTES}
    )
    secret_job = cloud.api.request(
        "POST", "/jobs", JOB | {"secrets": {"DB_PASSWORD": secret_arn}, "stuck_after_minutes": STUCK_AFTER_MINUTES}
    )
    # And another by the CLI, a plan, and a request the API refuses, each with a value of its own
    submitted = cloud.cli("--json", "submit", "--name", "redaction-cli", "--image", IMAGE,
                          "--env", f"API_KEY={by_cli}", "--stuck-after-minutes", str(STUCK_AFTER_MINUTES),
                          "--wait", "--", "nvidia-smi", "-L")  # fmt: skip
    plan = cloud.api.request("POST", "/plan", JOB | {"environment": {"TOKEN": planned}})
    bad = cloud.api.request("POST", "/jobs", JOB | {"environment": {"TOKEN": refused, "AWS_BATCH_X": "reserved"}})
    assert (env_job.status, secret_job.status, plan.status, bad.status) == (202, 202, 200, 400)
    assert submitted.returncode == 0, submitted.stderr

    # Then every job ran to success, past its diagnosed first attempt
    jobs: dict[str, dict[str, Any]] = {
        "api": cloud.wait_for(env_job.body["job_id"], {"SUCCEEDED", "FAILED"}),
        "secret": cloud.wait_for(secret_job.body["job_id"], {"SUCCEEDED", "FAILED"}),
        "cli": json.loads(submitted.stdout),
    }
    assert {key: job["status"] for key, job in jobs.items()} == dict.fromkeys(jobs, "SUCCEEDED"), jobs
    assert all(len(job["attempts"]) >= 2 for job in jobs.values()), jobs
    # And a sweep read their records
    swept = cloud.cli("--json", "sweep")
    assert swept.returncode == 0, swept.stderr

    # And their owner reads the environment back through the API and the CLI, the secret only by reference
    read_back = cloud.api.request("GET", f"/jobs/{jobs['api']['job_id']}").body
    shown = cloud.cli("--json", "status", jobs["cli"]["job_id"])
    secret_read_back = cloud.api.request("GET", f"/jobs/{jobs['secret']['job_id']}").body
    assert read_back["request"]["environment"] == {"HF_TOKEN": by_api}
    assert json.loads(shown.stdout)["request"]["environment"] == {"API_KEY": by_cli}
    assert secret_read_back["request"]["secrets"] == {"DB_PASSWORD": secret_arn}
    assert secret_value not in json.dumps(secret_read_back)

    # But the logs, which did record the events that carried those values (names kept), hold none of the values
    logs = _logs(cloud)
    assert "Batch Job State Change" in logs and jobs["api"]["job_id"] in logs, logs[-2000:]
    leaked = {
        kind: value
        for kind, value in {
            "job environment (API)": by_api,
            "job environment (CLI)": by_cli,
            "plan environment": planned,
            "refused request environment": refused,
            "secret value": secret_value,
            "function environment": function_setting,
        }.items()
        if value in logs
    }
    lines = [line[:300] for line in logs.splitlines() if any(value in line for value in leaked.values())]
    assert leaked == {}, "\n".join(lines[:20])
    assert '"HF_TOKEN":"***"' in logs and '"API_KEY":"***"' in logs


def test_a_logged_body_that_is_not_json_and_an_extra_environment_are_withheld() -> None:
    # Given the functions' logger writing into a buffer
    buffer = io.StringIO()
    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    previous = handler.setStream(buffer)
    value = _sentinel("value")
    try:
        # When an event whose body is not JSON, and a record with an environment as an extra key, are logged
        logger.info({"httpMethod": "POST", "body": f'{{"environment": {{"TOKEN": "{value}"'})
        logger.info("job settings", extra={"environment": {"TOKEN": value}})
    finally:
        handler.setStream(previous)
    # Then neither line holds the value; the second keeps the variable's name
    logged = buffer.getvalue()
    assert value not in logged
    assert "characters withheld: not JSON" in logged
    assert f'"environment":{{"TOKEN":"{REDACTED}"}}' in logged
