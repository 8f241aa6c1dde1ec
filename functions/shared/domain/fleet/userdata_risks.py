"""What could make GPU user data hold cloud-init: a synchronous start of ecs or docker (the deadlock), a wait without
a bound (a loop, a network call, a hung nvidia-smi), a heredoc that runs what it holds, or a host agent unit that makes
another unit wait on it. Checks of the shapes userdata.py writes, not of any shell script; the tests run them on the
synthesized template's user data."""

from __future__ import annotations

import re

from functions.shared.domain.fleet.userdata import AGENT_START, BOUNDARY

FORBIDDEN_SYNC_STARTS = (
    "systemctl start ecs",
    "systemctl restart ecs",
    "systemctl start docker",
    "systemctl restart docker",
    "service ecs start",
    "service docker start",
    "service docker restart",
)


def shell_script(user_data: str) -> str:
    """The shell part of the user data (what cloud-init runs)."""
    start = user_data.index("#!/bin/bash")
    return user_data[start : user_data.index(f"--{BOUNDARY}--", start)]


def deadlock_risks(user_data: str) -> list[str]:
    """Lines of user data that start ecs or docker synchronously (each one can hang cloud-init)."""
    risky = []
    for line in user_data.splitlines():
        text = " ".join(line.split())
        if "--no-block" in text:
            continue
        if any(pattern in text for pattern in FORBIDDEN_SYNC_STARTS):
            risky.append(line.strip())
    return risky


_HEREDOC = re.compile(r"<<\s*(['\"]?)(\w+)\1\s*$")
_LOOP = re.compile(r"^for \w+ in \$\(seq 1 (\d+)\); do .*\bsleep (\d+); done$")
_CURL_LIMIT = re.compile(r"--max-time (\d+)")
_DETACHED = re.compile(r"^setsid .*</dev/null >/dev/null 2>&1 &$")
_QUOTED = re.compile(r"^\w+='[^']*'$")
# Commands that never wait on anything outside the script (files, text, the console).
_UNBOUNDED = (
    (re.compile(r"\bwhile\b|\buntil\b"), "a loop without a fixed number of rounds"),
    (re.compile(r"(^|[;&|]\s*)wait\b"), "`wait` waits for a background process (a hung nvidia-smi never ends)"),
    (
        re.compile(r"\bdocker\b|\bsystemctl\b|(^|[;&|(]\s*)(sudo\s+)?service\s"),
        "a call to docker or systemd (their units wait for us)",
    ),
    (re.compile(r"\btimeout\b"), "`timeout` cannot reap a process hung in the kernel (it waits for it)"),
)


def boot_time_risks(user_data: str) -> tuple[float, list[str]]:
    """(worst-case seconds the user data can take, what makes it unbounded): every loop counts its rounds and sleeps,
    every metadata call has --max-time, nvidia-smi runs only detached (setsid, its input and output redirected, in the
    background), and nothing waits on a background process, docker or systemd. A check of the shapes this module
    writes, not of any shell script."""
    worst = 0.0
    risks: list[str] = []
    ending: str | None = None
    for raw in shell_script(user_data).splitlines():
        line = raw.strip()
        if ending is not None:
            ending = None if raw == ending else ending  # a quoted heredoc's lines are data, never run
            continue
        if not line or line.startswith("#"):
            continue
        heredoc = _HEREDOC.search(line)
        if heredoc:
            ending = heredoc.group(2)
            if not heredoc.group(1):
                risks.append(f"an unquoted heredoc (the shell expands, and may run, what it holds): {line}")
        if line == AGENT_START:
            continue  # queued, never waited for: the agent's unit starts after cloud-final
        for pattern, why in _UNBOUNDED:
            if pattern.search(line):
                risks.append(f"{why}: {line}")
        quoted = _QUOTED.match(line) is not None  # an assignment of quoted text runs nothing
        runs_the_driver = "nvidia-smi" in line or "$probe" in line  # the probe holds the nvidia-smi call
        if runs_the_driver and not quoted and not line.startswith("verdict ") and not _DETACHED.match(line):
            risks.append(f"nvidia-smi runs in the foreground (it can hang unkillably): {line}")
        if "curl " in line:
            limit = _CURL_LIMIT.search(line)
            if limit is None:
                risks.append(f"a network call without --max-time: {line}")
            else:
                worst += float(limit.group(1))
        if re.search(r"\bsleep\b", line):
            loop = _LOOP.match(line)
            if loop is None:
                risks.append(f"a sleep outside a bounded loop: {line}")
            else:
                worst += float(loop.group(1)) * float(loop.group(2))
        elif line.startswith("for ") and not re.match(r"^for \w+ in \$\(seq 1 \d+\); do", line):
            risks.append(f"a loop without a fixed number of rounds: {line}")
    if ending is not None:
        risks.append(f"a heredoc never ended (missing {ending})")
    return worst, risks


# What the agent's unit may say of the units around it: started after cloud-init (and Docker, when there), and nothing
# that makes another unit wait for it or stop with it.
_UNIT_FORBIDDEN = ("Before=", "Requires=", "RequiredBy=", "BindsTo=", "PartOf=", "Requisite=", "Conflicts=")


def agent_unit_risks(user_data: str) -> list[str]:
    """What in the agent's systemd unit could hold cloud-init, the ECS agent or Docker: it must start after
    cloud-final (its start is queued from within cloud-final), name no unit that would wait for it, and bound its
    start."""
    match = re.search(r"<<'GPUPILOT_UNIT'\n(.*?)\nGPUPILOT_UNIT\n", shell_script(user_data), re.DOTALL)
    if match is None:
        return []
    unit = match.group(1).splitlines()
    risks = [f"the unit makes another unit wait on it: {line}" for line in unit if line.startswith(_UNIT_FORBIDDEN)]
    after = " ".join(line for line in unit if line.startswith("After="))
    if "cloud-final.service" not in after:
        risks.append("the unit is not ordered after cloud-final (its start would wait on nothing, or hold cloud-init)")
    if not any(line.startswith("TimeoutStartSec=") for line in unit):
        risks.append("the unit's start (the agent's fetch) has no bound")
    if [line for line in unit if line.startswith("WantedBy=")] != ["WantedBy=multi-user.target"]:
        risks.append("the unit is wanted by something other than multi-user.target")
    return risks
