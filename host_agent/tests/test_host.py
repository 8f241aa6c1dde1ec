"""The host's adapters against stand-ins for the device: the instance metadata service (IMDSv2), `docker` and
`nvidia-smi` as scripts that answer as the real ones do (and one that hangs as a failed driver does)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from pathlib import Path

import pytest

from host_agent.aws import RoleCredentials
from host_agent.host import DockerContainers, Imds, NvidiaSmi, bounded
from host_agent.model import GpuSample, SpotNotice
from host_agent.tests.conftest import FakeImds


def script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_the_metadata_service_is_asked_with_a_session_token_and_a_notice_read_once_it_is_there(imds: FakeImds) -> None:
    # Given the instance's metadata, without a spot notice
    metadata = Imds(imds.url)
    # When the agent asks / Then it has its identity, and no notice (404)
    assert (metadata.instance_id(), metadata.instance_type(), metadata.region()) == (
        "i-0123456789abcdef0",
        "g5.xlarge",
        "us-east-1",
    )
    assert metadata.spot_notice() is None and metadata.account() == "123456789012"
    # When EC2 gives notice / Then the agent reads what and when
    imds.spot_action = {"action": "terminate", "time": "2027-01-15T08:02:00Z"}
    assert metadata.spot_notice() == SpotNotice("terminate", "2027-01-15T08:02:00Z")
    # And one session token served every question (IMDSv2)
    assert imds.requests.count("PUT /latest/api/token") == 1


def test_the_instance_roles_credentials_come_from_the_metadata_service(imds: FakeImds) -> None:
    credentials = RoleCredentials(Imds(imds.url).get)()
    assert (credentials.access_key, credentials.secret_key, credentials.token) == (
        "ASIAROLE",
        "role-secret",
        "role-token",
    )


INSPECTED = [
    {
        "Id": "c" * 64,
        "Created": "2027-01-15T08:00:42.123456789Z",
        "State": {"Running": True},
        "Config": {
            "Env": ["GPUPILOT_JOB_ID=job1", "NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b", "A=b=c"],
            "Labels": {"com.amazonaws.ecs.task-arn": "arn:aws:ecs:us-east-1:1:task/c/t1"},
        },
        "Mounts": [
            {"Type": "bind", "Source": "/var/lib/gpupilot/checkpoints/job1/1", "Destination": "/gpupilot/checkpoint"},
            {"Type": "volume", "Source": "/var/lib/docker/volumes/x", "Destination": "/cache"},
        ],
    },
    {"Id": "d" * 64, "Created": "2027-01-15T07:00:00Z", "State": {"Running": False}, "Config": {"Env": []}},
]


def test_docker_says_which_containers_run_with_their_environment_mounts_and_creation(tmp_path: Path) -> None:
    # Given docker answering `ps` and `inspect` as it does on a host
    (tmp_path / "inspect.json").write_text(json.dumps(INSPECTED))
    docker = script(
        tmp_path / "docker",
        f"""echo "$*" >> {tmp_path}/calls
case "$1" in
  ps) echo {"c" * 64}; echo {"d" * 64} ;;
  inspect) cat {tmp_path}/inspect.json ;;
  kill) exit 0 ;;
esac
""",
    )
    # When the agent asks
    [container] = DockerContainers(docker, introspection="http://127.0.0.1:9/none").running() or []
    # Then it has the running one's environment (a value may hold '='), its bind mounts, and when it was created
    assert container.env == {"GPUPILOT_JOB_ID": "job1", "NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b", "A": "b=c"}
    assert container.mounts == {"/gpupilot/checkpoint": "/var/lib/gpupilot/checkpoints/job1/1"}
    assert container.created_at == pytest.approx(1800000042.123457, abs=1e-5)
    # And a signal goes to the container through docker kill
    assert DockerContainers(docker).signal(container.id, "SIGUSR1")
    assert (tmp_path / "calls").read_text().splitlines()[-1] == f"kill --signal=SIGUSR1 {'c' * 64}"


def test_an_image_pull_starts_when_the_ecs_agent_first_lists_the_task(tmp_path: Path, imds: FakeImds) -> None:
    # Given the ECS agent's introspection API listing the task 30 s before docker created its container
    from host_agent.tests.conftest import serve

    tasks = {"Tasks": [{"Arn": "arn:aws:ecs:us-east-1:1:task/c/t1", "KnownStatus": "NONE"}]}
    (tmp_path / "inspect.json").write_text(json.dumps(INSPECTED[:1]))
    answers = f'case "$1" in ps) echo {"c" * 64} ;; inspect) cat {tmp_path}/inspect.json ;; esac\n'
    docker = script(tmp_path / "docker", answers)
    with serve(tasks) as introspection:
        looks = iter([1800000012.0, 1800000014.0])
        containers = DockerContainers(docker, introspection=introspection, clock=lambda: next(looks))
        # When the agent looks while the image is pulled, and again (2 s later) once the container exists
        containers.running()
        [container] = containers.running() or []
    # Then the pull's start is the first look
    assert container.pull_started_at == 1800000012.0


def test_nvidia_smi_gives_each_gpus_utilisation_and_memory(tmp_path: Path) -> None:
    nvidia_smi = script(
        tmp_path / "nvidia-smi",
        """echo "0, GPU-a, 87, 30512"
echo "1, GPU-b, 0, 3"
echo "2, GPU-c, [N/A], [N/A]"
""",
    )
    assert NvidiaSmi(nvidia_smi).sample() == [
        GpuSample("GPU-a", 0, 0.87, 30512.0),
        GpuSample("GPU-b", 1, 0.0, 3.0),
        GpuSample("GPU-c", 2, 0.0, 0.0),
    ]


def test_an_nvidia_smi_that_hangs_is_left_behind_in_bounded_time_and_not_asked_again_for_a_minute(
    tmp_path: Path,
) -> None:
    # Given a driver that hangs nvidia-smi past any signal it can catch
    started = tmp_path / "started"
    nvidia_smi = script(tmp_path / "nvidia-smi", f"trap '' TERM INT HUP\necho $$ >> {started}\nexec sleep 600\n")
    clock = [0.0]
    gpus = NvidiaSmi(nvidia_smi, timeout=0.5, clock=lambda: clock[0])
    # When the agent samples / Then it gives up within its bound, without waiting for the hung process
    began = time.monotonic()
    assert gpus.sample() is None
    assert time.monotonic() - began < 5
    # When it samples again within the minute / Then no new nvidia-smi is started; after it, one is
    assert gpus.sample() is None and len(started.read_text().split()) == 1
    clock[0] = 61.0
    gpus.sample()
    pids = started.read_text().split()
    assert len(pids) == 2
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), 9)


def test_a_command_that_is_not_there_is_no_answer() -> None:
    assert bounded(["/nonexistent/docker", "ps"], 1) is None
