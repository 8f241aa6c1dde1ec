"""User data for GPU instances: MIME multipart, GPU support on, and never a cloud-init deadlock."""

from __future__ import annotations

import email

import pytest

from functions.shared.domain.userdata import deadlock_risks, gpu_user_data


def shell_part() -> str:
    message = email.message_from_string(gpu_user_data())
    parts = [part for part in message.walk() if part.get_content_type() == "text/x-shellscript"]
    assert len(parts) == 1
    return str(parts[0].get_payload())


def test_gpu_user_data_is_mime_multipart_with_one_shell_script():
    # Given / When: the user data Batch merges into its own
    message = email.message_from_string(gpu_user_data())

    # Then it is multipart/mixed with one shell-script part (Batch rejects plain scripts)
    assert message.is_multipart()
    assert message.get_content_type() == "multipart/mixed"
    assert [p.get_content_type() for p in message.get_payload()] == ["text/x-shellscript"]


def test_gpu_user_data_enables_gpu_support_in_the_ecs_agent_config():
    # Given / When: the shell part
    script = shell_part()

    # Then it appends ECS_ENABLE_GPU_SUPPORT=true to /etc/ecs/ecs.config
    assert "echo 'ECS_ENABLE_GPU_SUPPORT=true' >> /etc/ecs/ecs.config" in script
    assert script.startswith("#!/bin/bash")


def test_gpu_user_data_never_sets_ecs_cluster():
    # Given / When / Then: Batch writes ECS_CLUSTER itself; a second value would misregister the instance
    assert "ECS_CLUSTER" not in gpu_user_data()


def test_gpu_user_data_has_no_deadlock_risk():
    # Given / When / Then
    assert deadlock_risks(gpu_user_data()) == []


@pytest.mark.parametrize(
    "line",
    [
        "systemctl restart docker",
        "systemctl start ecs",
        "  sudo systemctl   start  ecs  ",
        "service docker restart",
        "systemctl enable ecs && systemctl start ecs",
    ],
)
def test_synchronous_start_of_ecs_or_docker_is_flagged(line):
    # Given user data with a synchronous start of ecs or docker
    user_data = f"#!/bin/bash\necho hello\n{line}\n"

    # When checking it
    risks = deadlock_risks(user_data)

    # Then that line (stripped) is the one risk
    assert risks == [line.strip()]


@pytest.mark.parametrize(
    "line", ["systemctl restart docker --no-block", "systemctl start --no-block ecs", "systemctl status ecs"]
)
def test_non_blocking_or_harmless_systemctl_lines_are_not_flagged(line):
    # Given / When / Then
    assert deadlock_risks(f"#!/bin/bash\n{line}\n") == []
