"""Retrying a submit is safe: concurrent `gpupilot submit`s with one Idempotency-Key make one job, and every one
of them reports it (a call that finds the first still in progress waits for it, as Retry-After says)."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable

import pytest

from tests.e2e.conftest import GPUPILOT, PATIENCE_SECONDS, RunningCloud

pytestmark = pytest.mark.e2e
CONCURRENT_SUBMITS = 10


def test_concurrent_submits_with_one_idempotency_key_all_succeed_with_the_same_single_job(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a local cloud and a request with a key of its own
    cloud = cloud_factory()
    name, key = f"idem-{uuid.uuid4().hex[:8]}", f"key-{uuid.uuid4().hex}"
    argv = [GPUPILOT, "--json", "submit", "--name", name, "--image", "img", "--idempotency-key", key, "--", "true"]
    env = os.environ | {"GPUPILOT_ENDPOINT": cloud.api_url}

    # When ten processes submit it at once
    submits = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(CONCURRENT_SUBMITS)
    ]
    outputs = [process.communicate(timeout=PATIENCE_SECONDS) for process in submits]
    results = [(process.returncode, out, err) for process, (out, err) in zip(submits, outputs, strict=True)]

    # Then every one succeeds and reports the same job
    assert [code for code, _, _ in results] == [0] * CONCURRENT_SUBMITS, [err for _, _, err in results]
    job_ids = {json.loads(out)["job_id"] for _, out, _ in results}
    assert len(job_ids) == 1
    # And the API knows exactly one such job
    listed = cloud.api.request("GET", "/jobs", query={"limit": 100}).body["jobs"]
    assert [job["job_id"] for job in listed if job["name"] == name] == list(job_ids)

    # When the key comes back with another body
    reused = cloud.cli("submit", "--name", name, "--image", "other", "--idempotency-key", key, "--", "true")

    # Then it is refused in one line naming the key, exit 2
    assert reused.returncode == 2
    assert reused.stderr.count("\n") == 1 and "IdempotencyKeyReused [Idempotency-Key]" in reused.stderr
