"""The agent's decisions over in-memory ports: what it restores before a program starts, whom it signals on a spot
notice and when it uploads, what it samples and reports, and what it leaves behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from host_agent import checkpoints
from host_agent.core import Agent, Timing
from host_agent.model import SpotNotice
from host_agent.tests.fakes import Clock, Cloud, Containers, Gpus, Metadata, job_container

NOTICE = SpotNotice("terminate", "2027-01-15T08:02:00Z")


class Host:
    """An agent on a host of fakes, stepped by hand."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.clock, self.metadata = tmp, Clock(), Metadata()
        self.containers, self.gpus, self.cloud = Containers(), Gpus({"GPU-a": 0.8, "GPU-b": 0.01}), Cloud()
        self.agent = Agent(
            self.metadata,
            self.containers,
            self.gpus,
            self.cloud,
            self.clock,
            Timing(),
            owned_root=str(tmp / "checkpoints"),
        )

    def run(self, seconds: float, step: float = 1.0) -> None:
        end = self.clock.now + seconds
        while self.clock.now < end:
            self.agent.step()
            self.clock.advance(step)

    def directory(self, job_id: str = "job1", attempt: int = 1) -> Path:
        return self.tmp / "checkpoints" / job_id / str(attempt)

    def reasons(self) -> list[str]:
        return [report["reason"] for report in self.cloud.reports()]


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return Host(tmp_path)


def a_checkpoint_in_the_bucket(host: Host, job_id: str = "job1", attempt: int = 1) -> None:
    """What an earlier attempt left: a program's state file uploaded by an agent, and its manifest."""
    earlier = host.tmp / "earlier"
    earlier.mkdir()
    (earlier / "model.pt").write_bytes(b"weights after 700 steps")
    meta = {
        "job_id": job_id,
        "attempt": attempt,
        "batch_job_id": "b1",
        "instance_id": "i-old",
        "saved_at": "2027-01-15T08:00:05.000Z",
        "reason": "interruption",
    }
    checkpoints.upload(host.cloud, "us-east-1", "hosts-bucket", str(earlier), None, meta, "1", lambda: 1_800_000_000.0)


def test_a_resumed_attempt_finds_its_checkpoint_restored_before_its_program_may_start(host: Host) -> None:
    # Given attempt 1 left a checkpoint in the bucket
    a_checkpoint_in_the_bucket(host)
    # When attempt 2's container appears on this host
    host.containers.listed = [job_container("c2", host.tmp, attempt=2)]
    host.run(1)
    # Then the directory holds the checkpoint's file, and then says it is ready and resumed (the wrapper's cue)
    directory = host.directory(attempt=2)
    assert (directory / "model.pt").read_bytes() == b"weights after 700 steps"
    assert checkpoints.marked(str(directory), checkpoints.READY)
    resumed = json.loads((directory / ".gpupilot" / "resumed").read_text())
    assert resumed == {
        "attempt": 1,
        "saved_at": "2027-01-15T08:00:05.000Z",
        "checkpoint_uploaded_at": "2027-01-15T08:00:00.000Z",
    }
    # And the control plane hears it, with how long the image took to pull
    [started] = host.cloud.reports()
    assert (started["reason"], started["attempt"], started["resumed_from"]) == ("started", 2, resumed)
    assert started["image_pull_seconds"] == 30.5


def test_a_first_attempt_starts_from_an_empty_directory_marked_ready_but_not_resumed(host: Host) -> None:
    # Given no checkpoint yet / When the job's container appears
    host.containers.listed = [job_container("c1", host.tmp)]
    host.run(1)
    # Then its program may start, told it is not resuming
    directory = str(host.directory())
    assert checkpoints.marked(directory, checkpoints.READY) and not checkpoints.marked(directory, checkpoints.RESUMED)
    assert host.cloud.reports()[0]["resumed_from"] is None


def test_an_agent_restarted_beside_a_running_program_never_restores_over_its_work(host: Host, tmp_path: Path) -> None:
    # Given a directory prepared by an agent before this one, and the program has written since
    a_checkpoint_in_the_bucket(host)
    host.containers.listed = [job_container("c2", host.tmp, attempt=2)]
    host.run(1)
    (host.directory(attempt=2) / "model.pt").write_bytes(b"weights after 900 steps")
    # When a new agent (a restart of the service) finds the same container
    restarted = Agent(host.metadata, host.containers, host.gpus, host.cloud, host.clock, Timing())
    restarted.step()
    # Then the program's newer file is left alone
    assert (host.directory(attempt=2) / "model.pt").read_bytes() == b"weights after 900 steps"


def test_on_a_spot_notice_the_program_gets_its_signal_and_its_checkpoint_is_uploaded_once_it_has_exited(
    host: Host,
) -> None:
    # Given a checkpointing job that asked for SIGUSR1, running a while
    host.containers.listed = [job_container("c1", host.tmp, GPUPILOT_CHECKPOINT_SIGNAL="SIGUSR1")]
    host.run(20)
    directory = host.directory()
    # When EC2 gives notice
    host.metadata.notice = NOTICE
    host.run(6)
    # Then its program got its signal, the wrapper is told to hold the container, and the control plane hears it
    assert host.containers.signals == [("c1", "SIGUSR1")]
    assert checkpoints.marked(str(directory), checkpoints.INTERRUPTED)
    assert host.reasons() == ["started", "notice"]
    assert not [key for _, key in host.cloud.objects if key.endswith("manifest.json")]
    # When the program writes its checkpoint and ends (the wrapper marks it)
    (directory / "model.pt").write_bytes(b"weights at the notice")
    checkpoints.mark(str(directory), checkpoints.EXITED, "0")
    host.run(3)
    # Then the directory is uploaded under the job's prefix, and the report says when
    manifest = json.loads(host.cloud.objects[("hosts-bucket", "checkpoints/job1/manifest.json")])
    assert [f["path"] for f in manifest["files"]] == ["model.pt"]
    assert host.cloud.objects[("hosts-bucket", manifest["files"][0]["key"])] == b"weights at the notice"
    assert manifest["reason"] == "interruption" and manifest["attempt"] == 1
    last = host.cloud.reports()[-1]
    assert last["reason"] == "checkpoint" and last["checkpoint"]["uploaded_at"] == manifest["uploaded_at"]
    assert last["interruption_notice_at"] is not None and last["reclaim_at"] == NOTICE.time


def test_a_program_that_never_ends_after_its_signal_is_uploaded_when_its_grace_runs_out(host: Host) -> None:
    # Given a job with 30 s of grace whose program wrote but ignores its signal
    host.containers.listed = [job_container("c1", host.tmp, GPUPILOT_CHECKPOINT_GRACE_SECONDS="30")]
    host.run(5)
    (host.directory() / "model.pt").write_bytes(b"weights")
    host.metadata.notice = NOTICE
    # When 29 s of its grace have passed / Then nothing is uploaded yet
    host.run(29)
    assert ("hosts-bucket", "checkpoints/job1/manifest.json") not in host.cloud.objects
    # When its grace is over / Then what it wrote is uploaded
    host.run(10)
    assert ("hosts-bucket", "checkpoints/job1/manifest.json") in host.cloud.objects


def test_every_n_seconds_what_the_program_wrote_is_uploaded_and_nothing_when_it_wrote_nothing(host: Host) -> None:
    # Given a job asking for an upload every 60 s
    host.containers.listed = [job_container("c1", host.tmp, GPUPILOT_CHECKPOINT_EVERY_SECONDS="60")]
    host.run(2)
    (host.directory() / "model.pt").write_bytes(b"step 100")
    # When 61 s pass / Then it was uploaded once
    host.run(61)
    uploads = [c for c in host.cloud.calls if c.startswith("put") and c.endswith("manifest.json")]
    assert len(uploads) == 1
    # When another minute passes without a write / Then nothing more is uploaded
    host.run(61)
    assert len([c for c in host.cloud.calls if c.endswith("manifest.json")]) == 1
    # When the program writes again / Then the next minute uploads it, keeping the unchanged file's first upload
    (host.directory() / "optimizer.pt").write_bytes(b"moments")
    host.run(61)
    manifest = json.loads(host.cloud.objects[("hosts-bucket", "checkpoints/job1/manifest.json")])
    assert sorted(f["path"] for f in manifest["files"]) == ["model.pt", "optimizer.pt"]
    assert len({f["key"].split("/")[2] for f in manifest["files"]}) == 2  # each file from the upload that wrote it
    # And periodic uploads are not reported (the control plane's cost of a job does not grow with its runtime)
    assert host.reasons() == ["started"]


def test_each_job_is_sampled_on_the_gpus_ecs_gave_it_and_reported_when_it_ends(host: Host) -> None:
    # Given two jobs on one host, one on the busy GPU and one on the idle one
    host.containers.listed = [
        job_container("busy", host.tmp, "busy", devices="GPU-a", checkpoint=False),
        job_container("idle", host.tmp, "idle", devices="GPU-b", checkpoint=False),
    ]
    host.run(65)
    # When both end
    host.containers.listed = []
    host.run(3)
    # Then each one's last report says its own GPU's utilisation (and no report came before: neither checkpoints)
    reports = {r["job_id"]: r for r in host.cloud.reports()}
    assert [r["reason"] for r in host.cloud.reports()] == ["ended", "ended"]
    busy, idle = reports["busy"]["gpu_utilization"], reports["idle"]["gpu_utilization"]
    assert (busy["mean"], busy["p95"], busy["samples"]) == (80.0, 80.0, 7)
    assert busy["idle_seconds"] == 0 and busy["max_memory_gib"] == 2.0
    assert idle["mean"] == 1.0 and idle["idle_seconds"] == 70.0 and idle["idle_since"] is not None
    # And CloudWatch had each job's minute, under the job and under its pool
    dimensions = [tuple(d["Value"] for d in datum["Dimensions"]) for datum in host.cloud.metrics]
    assert sorted(dimensions) == sorted(
        [("gpupilot", "busy"), ("gpupilot", "gpupilot-spot-g5"), ("gpupilot", "idle"), ("gpupilot", "gpupilot-spot-g5")]
    )


def test_a_job_idle_past_its_idle_policy_is_reported_once_per_idle_spell(host: Host) -> None:
    # Given a job whose idle_policy speaks after 5 minutes, on an idle GPU
    host.containers.listed = [
        job_container("c1", host.tmp, checkpoint=False, devices="GPU-b", GPUPILOT_IDLE_AFTER_SECONDS="300")
    ]
    # When 4 minutes pass / Then nothing is said
    host.run(240)
    assert host.reasons() == []
    # When it is idle past 5 minutes, and stays so / Then it is reported once, saying since when
    host.run(300)
    [idle] = host.cloud.reports()
    assert idle["reason"] == "idle" and idle["gpu_utilization"]["idle_since"] is not None
    # When it is busy, then idle 5 minutes again / Then that new spell is reported too
    host.gpus.utilization["GPU-b"] = 0.9
    host.run(20)
    host.gpus.utilization["GPU-b"] = 0.0
    host.run(320)
    assert host.reasons() == ["idle", "idle"]


def test_a_gone_jobs_directory_is_removed_from_the_agents_folder_and_nothing_outside_it(host: Host) -> None:
    # Given a job whose directory is under the agent's folder, and one mounted from elsewhere
    inside = job_container("c1", host.tmp)
    elsewhere = host.tmp / "elsewhere"
    elsewhere.mkdir()
    outside = job_container("c2", host.tmp, "job2")
    outside.mounts["/gpupilot/checkpoint"] = str(elsewhere)
    host.containers.listed = [inside, outside]
    host.run(3)
    # When both are gone
    host.containers.listed = []
    host.run(3)
    # Then only the agent's own directory was removed
    assert not host.directory().exists() and elsewhere.exists()


def test_docker_not_answering_ends_no_job(host: Host) -> None:
    # Given a running job / When Docker does not answer for a while
    host.containers.listed = [job_container("c1", host.tmp, checkpoint=False)]
    host.run(3)
    host.containers.answers = False
    host.run(10)
    # Then the job is still tracked, and nothing said it ended
    assert list(host.agent.tracked) == ["c1"] and "ended" not in host.reasons()
