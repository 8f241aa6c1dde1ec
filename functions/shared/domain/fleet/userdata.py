"""User data for GPU container instances: MIME multipart, a bounded GPU check at boot, and it can never deadlock
cloud-init.

The ECS and Docker systemd units wait for cloud-init to finish, and cloud-init waits for user data ("starting ECS or
Docker via Amazon EC2 user data may cause a deadlock": Installing the Amazon ECS container agent), so user data only
writes configuration and never starts, restarts or waits on `ecs` or `docker`. `ECS_CLUSTER` is left to AWS Batch,
which writes it itself. The ECS agent starts after cloud-final (its unit's After=cloud-final.service), so what user
data writes to /etc/ecs/ecs.config is what the agent registers with.

The boot check asks the driver for the instance's GPUs before the agent starts. A host that fails it registers
without GPUs (ECS_ENABLE_GPU_SUPPORT=false): ECS places a GPU task only where enough GPUs are registered ("The number
of GPUs reserved for all containers in a task cannot exceed the number of available GPUs on the container instance":
Specifying GPUs in your task definition), and every GPU Pilot job asks for one at least, so Batch never places a job
on it; the instance stays visible to the sweep, which quarantines it quoting the verdict the check printed on the
console. (Shutting it down instead would take the evidence with it, depends on Batch carrying the launch template's
instance-initiated shutdown behaviour into the template it launches from, which Batch does not document, and would
loop launch-fail-terminate on a bad AMI with nothing to bound it.) `nvidia-smi` can hang in the kernel on a failed
driver, where no signal reaches it: the check runs it detached and waits a bounded time for its answer, never for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

BOUNDARY = "==GPUPILOT=="
# How long the boot check waits for nvidia-smi's answer (polled once a second), and for each metadata call.
BOOT_CHECK_SECONDS = 60
METADATA_SECONDS = 2
# The boot check's worst case, with room: the agent registers at most this much later than without it.
BOOT_CHECK_BUDGET_SECONDS = 90
BOOT_CHECK_MARKER = "gpupilot-boot-check"

CONFIG_SCRIPT = """#!/bin/bash
set -uo pipefail
ECS_CONFIG=/etc/ecs/ecs.config
STATE=/var/lib/gpupilot
CONSOLE=/dev/console
# Written before the ECS agent starts: the agent reads this file once, at start.
mkdir -p "$(dirname "$ECS_CONFIG")" "$STATE"
touch "$ECS_CONFIG"
grep -q '^ECS_ENABLE_CONTAINER_METADATA=' "$ECS_CONFIG" || echo 'ECS_ENABLE_CONTAINER_METADATA=true' >> "$ECS_CONFIG"
"""

GPU_SUPPORT_SCRIPT = """grep -q '^ECS_ENABLE_GPU_SUPPORT=' "$ECS_CONFIG" \\
  || echo 'ECS_ENABLE_GPU_SUPPORT=true' >> "$ECS_CONFIG"
# Persistence mode keeps the driver loaded between jobs, so CUDA init is fast (detached: a bad driver can hang it).
setsid nvidia-smi -pm 1 </dev/null >/dev/null 2>&1 &
"""

BOOT_CHECK_SCRIPT = """# The boot check: does the driver answer and see every GPU? The verdict goes to the console.
verdict() { echo "@MARKER@: $*" | tee "$STATE/boot-check" > "$CONSOLE" 2>/dev/null || true; }
token=$(curl -sf --max-time @METADATA@ -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' \\
  http://169.254.169.254/latest/api/token || true)
type=$(curl -sf --max-time @METADATA@ -H "X-aws-ec2-metadata-token: $token" \\
  http://169.254.169.254/latest/meta-data/instance-type || true)
expected=0
case "$type" in
@CASES@
esac
rm -f "$STATE/gpus" "$STATE/gpus.rc"
# Detached, its output in files: a hung nvidia-smi holds neither this script nor cloud-init's output.
probe='nvidia-smi --query-gpu=name --format=csv,noheader > "$0/gpus" 2>&1; echo $? > "$0/gpus.rc"'
setsid sh -c "$probe" "$STATE" </dev/null >/dev/null 2>&1 &
for _ in $(seq 1 @SECONDS@); do [ -s "$STATE/gpus.rc" ] && break; sleep 1; done
passed=0
if [ ! -s "$STATE/gpus.rc" ]; then
  verdict "FAIL nvidia-smi did not answer within @SECONDS@ s ($type)"
elif [ "$(cat "$STATE/gpus.rc")" != 0 ]; then
  verdict "FAIL nvidia-smi exited $(cat "$STATE/gpus.rc") ($type): $(head -c 200 "$STATE/gpus" | tr '\\n' ' ')"
else
  seen=$(grep -c . "$STATE/gpus" || true)
  if [ "$seen" -lt 1 ] || [ "$seen" -lt "$expected" ]; then
    verdict "FAIL $seen of $expected GPUs visible ($type)"
  else
    verdict "PASS $seen GPUs visible ($type): $(head -n 1 "$STATE/gpus")"
    passed=1
  fi
fi
# A host that failed registers without GPUs: ECS never places a GPU job on it, and the sweep quarantines it.
sed -i '/^ECS_ENABLE_GPU_SUPPORT=/d' "$ECS_CONFIG"
if [ "$passed" = 1 ]; then
  echo 'ECS_ENABLE_GPU_SUPPORT=true' >> "$ECS_CONFIG"
  setsid nvidia-smi -pm 1 </dev/null >/dev/null 2>&1 &
else
  echo 'ECS_ENABLE_GPU_SUPPORT=false' >> "$ECS_CONFIG"
fi
"""

FOOTER = "# Nothing here starts ecs or docker: their units wait for cloud-init, which waits for us.\n"

FORBIDDEN_SYNC_STARTS = (
    "systemctl start ecs",
    "systemctl restart ecs",
    "systemctl start docker",
    "systemctl restart docker",
    "service ecs start",
    "service docker start",
    "service docker restart",
)


def _cases(expected_gpus: Mapping[str, int]) -> str:
    """`case` arms: the instance types of each GPU count."""
    by_count: dict[int, list[str]] = {}
    for instance_type, gpus in sorted(expected_gpus.items()):
        by_count.setdefault(gpus, []).append(instance_type)
    return "\n".join(f"  {'|'.join(types)}) expected={count} ;;" for count, types in sorted(by_count.items()))


def gpu_user_data(expected_gpus: Mapping[str, int] | None = None, boot_check: bool = True) -> str:
    """The MIME multipart user data that Batch merges into its own for every GPU instance: the boot check (unless a
    deployment turns it off) against `expected_gpus` (instance type -> GPUs), then the ECS agent's GPU support."""
    if boot_check:
        values = {
            "@MARKER@": BOOT_CHECK_MARKER,
            "@METADATA@": str(METADATA_SECONDS),
            "@SECONDS@": str(BOOT_CHECK_SECONDS),
            "@CASES@": _cases(expected_gpus or {}) or "  *) expected=0 ;;",
        }
        body = BOOT_CHECK_SCRIPT
        for placeholder, value in values.items():
            body = body.replace(placeholder, value)
    else:
        body = GPU_SUPPORT_SCRIPT
    script = CONFIG_SCRIPT + body + FOOTER
    return (
        'Content-Type: multipart/mixed; boundary="' + BOUNDARY + '"\n'
        "MIME-Version: 1.0\n\n"
        f"--{BOUNDARY}\n"
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        f"{script}\n"
        f"--{BOUNDARY}--\n"
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


_LOOP = re.compile(r"^for \w+ in \$\(seq 1 (\d+)\); do .*\bsleep (\d+); done$")
_CURL_LIMIT = re.compile(r"--max-time (\d+)")
_DETACHED = re.compile(r"^setsid .*</dev/null >/dev/null 2>&1 &$")
_QUOTED = re.compile(r"^\w+='[^']*'$")
# Commands that never wait on anything outside the script (files, text, the console).
_UNBOUNDED = (
    (re.compile(r"\bwhile\b|\buntil\b"), "a loop without a fixed number of rounds"),
    (re.compile(r"(^|[;&|]\s*)wait\b"), "`wait` waits for a background process (a hung nvidia-smi never ends)"),
    (re.compile(r"\bdocker\b|\bsystemctl\b|\bservice\b"), "a call to docker or systemd (their units wait for us)"),
    (re.compile(r"\btimeout\b"), "`timeout` cannot reap a process hung in the kernel (it waits for it)"),
)


def boot_time_risks(user_data: str) -> tuple[float, list[str]]:
    """(worst-case seconds the user data can take, what makes it unbounded): every loop counts its rounds and sleeps,
    every metadata call has --max-time, nvidia-smi runs only detached (setsid, its input and output redirected, in the
    background), and nothing waits on a background process, docker or systemd. A check of the shapes this module
    writes, not of any shell script."""
    worst = 0.0
    risks: list[str] = []
    for raw in shell_script(user_data).splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
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
    return worst, risks
