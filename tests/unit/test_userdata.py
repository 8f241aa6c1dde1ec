"""User data for GPU instances: MIME multipart, a boot-time GPU check that is bounded whatever the driver does, GPU
support on only for a host that passed it, and never a cloud-init deadlock."""

from __future__ import annotations

import email
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from functions.shared.domain.fleet.userdata import (
    AGENT_UNIT,
    BOOT_CHECK_BUDGET_SECONDS,
    USER_DATA_BUDGET_BYTES,
    AgentInstall,
    gpu_user_data,
)
from functions.shared.domain.fleet.userdata_risks import agent_unit_risks, boot_time_risks, deadlock_risks, shell_script

EXPECTED = {"g4dn.xlarge": 1, "g4dn.12xlarge": 4, "p5.48xlarge": 8}


def shell_part(user_data: str | None = None) -> str:
    message = email.message_from_string(user_data or gpu_user_data(EXPECTED))
    parts = [part for part in message.walk() if part.get_content_type() == "text/x-shellscript"]
    assert len(parts) == 1
    return str(parts[0].get_payload())


def test_gpu_user_data_is_mime_multipart_with_one_shell_script():
    # Given / When: the user data Batch merges into its own
    message = email.message_from_string(gpu_user_data(EXPECTED))

    # Then it is multipart/mixed with one shell-script part (Batch rejects plain scripts)
    assert message.is_multipart()
    assert message.get_content_type() == "multipart/mixed"
    assert [p.get_content_type() for p in message.get_payload()] == ["text/x-shellscript"]


def test_without_the_boot_check_gpu_support_is_enabled_in_the_ecs_agent_config():
    # Given / When: a deployment that turned the boot check off
    script = shell_part(gpu_user_data(boot_check=False))

    # Then it appends ECS_ENABLE_GPU_SUPPORT=true to /etc/ecs/ecs.config, and checks nothing
    assert "ECS_CONFIG=/etc/ecs/ecs.config" in script
    assert "echo 'ECS_ENABLE_GPU_SUPPORT=true' >> \"$ECS_CONFIG\"" in script
    assert "gpupilot-boot-check" not in script and script.startswith("#!/bin/bash")


def test_the_boot_check_knows_how_many_gpus_each_instance_type_has():
    # Given / When / Then
    script = shell_part()
    assert "g4dn.xlarge) expected=1 ;;" in script and "g4dn.12xlarge) expected=4 ;;" in script
    assert "p5.48xlarge) expected=8 ;;" in script


def test_gpu_user_data_never_sets_ecs_cluster():
    # Given / When / Then: Batch writes ECS_CLUSTER itself; a second value would misregister the instance
    assert "ECS_CLUSTER" not in gpu_user_data(EXPECTED)


@pytest.mark.parametrize("boot_check", [True, False])
def test_gpu_user_data_has_no_deadlock_risk_and_a_bounded_worst_case(boot_check):
    # Given / When
    user_data = gpu_user_data(EXPECTED, boot_check=boot_check)
    worst, risks = boot_time_risks(user_data)

    # Then nothing starts ecs or docker, nothing waits unboundedly, and the worst case fits the budget
    assert deadlock_risks(user_data) == []
    assert risks == []
    assert worst <= BOOT_CHECK_BUDGET_SECONDS


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("nvidia-smi -L", "foreground"),
        ('sh -c "$probe" "$STATE"', "foreground"),
        ("timeout 30 nvidia-smi -L", "`timeout` cannot reap"),
        ("while true; do sleep 1; done", "a loop without a fixed number of rounds"),
        ("sleep 5", "a sleep outside a bounded loop"),
        ("curl -s http://169.254.169.254/latest/meta-data/instance-type", "without --max-time"),
        ("nvidia-smi -L & wait", "`wait` waits"),
        ("systemctl enable --now --no-block ecs.service", "docker or systemd"),
        ("docker info", "docker or systemd"),
    ],
)
def test_what_could_hold_cloud_init_unboundedly_is_flagged(line, why):
    # Given user data with a line that can wait on a hung driver, a network, a loop or the agent's units
    user_data = f"#!/bin/bash\nset -u\n{line}\n--==GPUPILOT==--\n"

    # When / Then
    _, risks = boot_time_risks(user_data)
    assert any(why in risk for risk in risks), risks


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


# -- the rendered script, run with stand-ins for the driver, the metadata service and systemd -----------------------
HANGS = "#!/bin/bash\ntrap '' TERM HUP INT\necho $$ >> \"$HUNG\"\nexec /bin/sleep 600\n"
STAND_INS = {
    "answers": "#!/bin/bash\necho 'NVIDIA A10G'\n",
    "three_of_four": "#!/bin/bash\nprintf 'NVIDIA A10G\\nNVIDIA A10G\\nNVIDIA A10G\\n'\n",
    "fails": "#!/bin/bash\necho 'NVIDIA-SMI has failed because it could not communicate with the driver.'\nexit 9\n",
    "hangs": HANGS,
}


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Path]:
    """A stand-in host: bin/ with curl (the metadata service), systemctl, docker and service (each records its call
    and hangs, as a synchronous start would), and paths the script writes instead of /etc, /var/lib and the console."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "calls").write_text("")
    scripts = {
        "curl": '#!/bin/bash\ncase "$*" in *instance-type*) echo "${INSTANCE_TYPE}" ;; *) echo token ;; esac\n',
        **{name: f'#!/bin/bash\necho "{name} $*" >> "$CALLS"\nexec /bin/sleep 600\n'
           for name in ("systemctl", "docker", "service")},
    }  # fmt: skip
    for name, body in scripts.items():
        _executable(bin_dir / name, body)
    yield tmp_path
    for pid in (tmp_path / "hung").read_text().split() if (tmp_path / "hung").exists() else []:
        os.kill(int(pid), signal.SIGKILL)


def _executable(path: Path, body: str) -> None:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def run_boot(host: Path, nvidia_smi: str, instance_type: str, fast_sleep: bool = False) -> tuple[str, str]:
    """Run the rendered script on the stand-in host: (the agent's config it wrote, what it printed on the console)."""
    _executable(host / "bin" / "nvidia-smi", STAND_INS[nvidia_smi])
    if fast_sleep:  # the check's rounds pass at once: a driver that never answers costs no test minute
        _executable(host / "bin" / "sleep", "#!/bin/bash\nexit 0\n")
    config, console = host / "ecs.config", host / "console"
    config.write_text("ECS_ENABLE_GPU_SUPPORT=true\n")  # as if an image had set it already
    script = shell_script(gpu_user_data(EXPECTED))
    for line, path in (("ECS_CONFIG=/etc/ecs/ecs.config", config), ("STATE=/var/lib/gpupilot", host / "state"),
                       ("CONSOLE=/dev/console", console)):  # fmt: skip
        assert line in script
        script = script.replace(line, f"{line.split('=')[0]}={path}")
    (host / "boot.sh").write_text(script)
    environment = {"PATH": f"{host / 'bin'}:/usr/bin:/bin", "INSTANCE_TYPE": instance_type,
                   "CALLS": str(host / "calls"), "HUNG": str(host / "hung")}  # fmt: skip
    # A guard, not a measure: the script must end by itself (a synchronous start or a wait on nvidia-smi never would).
    subprocess.run(["bash", str(host / "boot.sh")], env=environment, timeout=60, check=True, capture_output=True)
    assert (host / "calls").read_text() == "", "the boot check called systemd or docker"
    return config.read_text(), console.read_text() if console.exists() else ""


def test_a_host_whose_driver_answers_with_every_gpu_passes_and_registers_its_gpus(host):
    # Given / When
    config, console = run_boot(host, "answers", "g4dn.xlarge")

    # Then
    assert console.strip() == "gpupilot-boot-check: PASS 1 GPUs visible (g4dn.xlarge): NVIDIA A10G"
    assert config.splitlines()[-1] == "ECS_ENABLE_GPU_SUPPORT=true" and config.count("ECS_ENABLE_GPU_SUPPORT") == 1


def test_a_host_whose_driver_hangs_fails_the_check_within_its_bound_and_registers_without_gpus(host):
    # Given an nvidia-smi that never returns (a driver hung in the kernel ignores signals)
    # When the user data runs / Then it ends anyway, says so on the console, and the agent registers no GPU
    config, console = run_boot(host, "hangs", "g4dn.xlarge", fast_sleep=True)
    assert console.strip() == "gpupilot-boot-check: FAIL nvidia-smi did not answer within 60 s (g4dn.xlarge)"
    assert "ECS_ENABLE_GPU_SUPPORT=false" in config and "ECS_ENABLE_GPU_SUPPORT=true" not in config


@pytest.mark.parametrize(
    ("nvidia_smi", "instance_type", "verdict"),
    [
        ("three_of_four", "g4dn.12xlarge", "FAIL 3 of 4 GPUs visible (g4dn.12xlarge)"),
        ("fails", "g4dn.xlarge", "FAIL nvidia-smi exited 9 (g4dn.xlarge): NVIDIA-SMI has failed because it"),
    ],
)
def test_a_host_that_misses_a_gpu_or_whose_driver_fails_registers_without_gpus(
    host, nvidia_smi, instance_type, verdict
):
    # Given / When
    config, console = run_boot(host, nvidia_smi, instance_type)

    # Then
    assert console.strip().startswith(f"gpupilot-boot-check: {verdict}")
    assert config.splitlines()[-1] == "ECS_ENABLE_GPU_SUPPORT=false"


# -- the host agent's install -----------------------------------------------------------------------------------------
def agent_install() -> AgentInstall:
    from host_agent import package

    return AgentInstall(package.bootstrap_source(), package.digest(), "gpupilot-hosts", "us-east-1")


def test_with_the_host_agent_the_user_data_still_cannot_block_cloud_init_and_fits_ec2s_limit():
    # Given / When: the user data with the boot check and the agent's install
    user_data = gpu_user_data(EXPECTED, agent=agent_install())
    worst, risks = boot_time_risks(user_data)

    # Then nothing in it waits on the agent, its unit orders it after cloud-init, and it fits EC2's 16 KB with room
    assert deadlock_risks(user_data) == [] and risks == [] and agent_unit_risks(user_data) == []
    assert worst <= BOOT_CHECK_BUDGET_SECONDS
    assert len(user_data.encode()) <= USER_DATA_BUDGET_BYTES


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("systemctl enable --now gpupilot-agent.service", "docker or systemd"),
        ("systemctl start gpupilot-agent.service", "docker or systemd"),
        ("cat > /opt/gpupilot/x <<GPUPILOT_X\n$(docker info)\nGPUPILOT_X", "an unquoted heredoc"),
        ("cat > /opt/gpupilot/x <<'GPUPILOT_X'\nnever ended", "a heredoc never ended"),
    ],
)
def test_an_agent_start_that_would_be_waited_for_or_a_heredoc_that_runs_is_flagged(line, why):
    user_data = f"#!/bin/bash\nset -u\n{line}\n--==GPUPILOT==--\n"
    _, risks = boot_time_risks(user_data)
    assert any(why in risk for risk in risks), risks


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("After=cloud-final.service docker.service", "After=docker.service"), "not ordered after cloud-final"),
        (("[Service]", "Before=ecs.service\n[Service]"), "makes another unit wait"),
        (("[Service]", "RequiredBy=docker.service\n[Service]"), "makes another unit wait"),
        (("TimeoutStartSec=120\n", ""), "has no bound"),
        (("WantedBy=multi-user.target", "WantedBy=cloud-init.target"), "wanted by something other"),
    ],
)
def test_an_agent_unit_that_could_hold_cloud_init_ecs_or_docker_is_flagged(change, why):
    # Given the agent's unit changed so / When checked / Then the change is named
    user_data = gpu_user_data(EXPECTED, agent=agent_install()).replace(*change)
    assert any(why in risk for risk in agent_unit_risks(user_data)), agent_unit_risks(user_data)


def test_the_rendered_user_data_writes_the_agents_bootstrap_and_unit_and_queues_its_start(host):
    # Given the rendered script, its paths moved onto the stand-in host, and a systemctl that, like systemd's, waits for
    # a start ordered after cloud-final (which waits for this script) unless told not to
    install = agent_install()
    script = shell_script(gpu_user_data(EXPECTED, agent=install))
    moved = {"ECS_CONFIG=/etc/ecs/ecs.config": host / "ecs.config", "STATE=/var/lib/gpupilot": host / "state",
             "CONSOLE=/dev/console": host / "console", "AGENT_HOME=/opt/gpupilot": host / "opt",
             "UNITS=/etc/systemd/system": host / "units"}  # fmt: skip
    for line, path in moved.items():
        assert line in script
        script = script.replace(line, f"{line.split('=')[0]}={path}")
    script = script.replace("/var/lib/gpupilot/checkpoints", str(host / "checkpoints"))
    _executable(host / "bin" / "nvidia-smi", STAND_INS["answers"])
    _executable(host / "bin" / "systemctl", '#!/bin/bash\necho "systemctl $*" >> "$CALLS"\n'
                '[[ " $* " == *" --no-block "* ]] && exit 0\nexec /bin/sleep 600\n')  # fmt: skip
    (host / "boot.sh").write_text(script)
    environment = {"PATH": f"{host / 'bin'}:/usr/bin:/bin", "INSTANCE_TYPE": "g4dn.xlarge",
                   "CALLS": str(host / "calls"), "HUNG": str(host / "hung")}  # fmt: skip

    # When cloud-init runs it / Then it ends by itself (a start it waited for would not)
    subprocess.run(["bash", str(host / "boot.sh")], env=environment, timeout=30, check=True, capture_output=True)

    # And the bootstrap is the agent's, the unit pins the agent and runs it, and its start was queued, not waited for
    assert (host / "opt" / "bootstrap.py").read_text() == install.bootstrap
    unit = (host / "units" / AGENT_UNIT).read_text()
    assert f"bootstrap.py gpupilot-hosts us-east-1 {install.digest} /opt/gpupilot/agent.pyz" in unit
    assert "ExecStart=/usr/bin/python3 /opt/gpupilot/agent.pyz run" in unit
    assert (host / "calls").read_text() == f"systemctl enable --now --no-block {AGENT_UNIT}\n"
    assert (host / "checkpoints").is_dir()
