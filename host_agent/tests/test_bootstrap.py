"""The bootstrap the user data carries: it fetches the agent its launch template pins from the hosts bucket, with the
instance role's credentials, and installs nothing else."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from host_agent import bootstrap
from host_agent.tests.conftest import BUCKET, REGION, FakeImds

AGENT = b"PK\x03\x04 the agent's zip application"
DIGEST = hashlib.sha256(AGENT).hexdigest()


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, imds: FakeImds, moto_endpoint: str, aws: Any) -> FakeImds:
    """A host whose metadata service is the fake one and whose S3 is moto's, the agent published in the bucket."""
    monkeypatch.setattr(bootstrap, "IMDS", imds.url)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    aws.client("s3").put_object(Bucket=BUCKET, Key=f"agent/{DIGEST}.pyz", Body=AGENT)
    return imds


def test_the_pinned_agent_is_fetched_from_the_accounts_hosts_bucket(host: FakeImds, tmp_path: Path) -> None:
    # When the bootstrap runs with the launch template's pin
    said = bootstrap.fetch("gpupilot-hosts", REGION, DIGEST, str(tmp_path / "agent.pyz"))
    # Then the agent is in place, from the bucket named after the instance's account (its identity document)
    assert (tmp_path / "agent.pyz").read_bytes() == AGENT
    assert said == f"fetched s3://{BUCKET}/agent/{DIGEST}.pyz to {tmp_path / 'agent.pyz'}"
    assert "GET /latest/dynamic/instance-identity/document" in host.requests


def test_an_agent_already_in_place_is_not_fetched_again(host: FakeImds, tmp_path: Path) -> None:
    (tmp_path / "agent.pyz").write_bytes(AGENT)
    assert bootstrap.fetch("gpupilot-hosts", REGION, DIGEST, str(tmp_path / "agent.pyz")).endswith("already")
    assert host.requests == []


def test_an_object_that_is_not_the_pinned_agent_is_never_installed(host: FakeImds, aws: Any, tmp_path: Path) -> None:
    # Given the pinned key holds other bytes
    aws.client("s3").put_object(Bucket=BUCKET, Key=f"agent/{DIGEST}.pyz", Body=b"something else")
    # When the bootstrap runs / Then it refuses, and nothing is written
    with pytest.raises(ValueError, match="not the pinned"):
        bootstrap.fetch("gpupilot-hosts", REGION, DIGEST, str(tmp_path / "agent.pyz"))
    assert not (tmp_path / "agent.pyz").exists()
