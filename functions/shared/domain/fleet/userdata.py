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

userdata_risks.py proves the rendered script bounded and free of the deadlock.

The host agent (host_agent/) is installed as a systemd service: user data only writes its bootstrap and its unit and
queues its start (`systemctl enable --now --no-block`: the start waits for cloud-final, ordered after it, and nothing
waits for the start). The bootstrap fetches the agent the launch template pins (its SHA-256) when the service starts,
after cloud-init, so no network call of the agent's is ever in cloud-init's way; a fetch that fails is tried again by
systemd, and the ECS agent and the jobs never wait for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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

AGENT_UNIT = "gpupilot-agent.service"
# The one systemctl call the user data makes: the agent's start queued, never waited for.
AGENT_START = f"systemctl enable --now --no-block {AGENT_UNIT}"
AGENT_SCRIPT = """# The host agent: bootstrap and unit written, start queued (after cloud-final; nothing waits for it).
AGENT_HOME=/opt/gpupilot
UNITS=/etc/systemd/system
mkdir -p "$AGENT_HOME" /var/lib/gpupilot/checkpoints "$UNITS"
cat > "$AGENT_HOME/bootstrap.py" <<'GPUPILOT_BOOTSTRAP'
@BOOTSTRAP@GPUPILOT_BOOTSTRAP
cat > "$UNITS/@UNIT@" <<'GPUPILOT_UNIT'
[Unit]
Description=GPU Pilot host agent
After=cloud-final.service docker.service
[Service]
ExecStartPre=/usr/bin/python3 /opt/gpupilot/bootstrap.py @PREFIX@ @REGION@ @DIGEST@ /opt/gpupilot/agent.pyz
ExecStart=/usr/bin/python3 /opt/gpupilot/agent.pyz run
Restart=always
RestartSec=15
TimeoutStartSec=120
[Install]
WantedBy=multi-user.target
GPUPILOT_UNIT
@START@
"""

FOOTER = "# Nothing here starts ecs or docker: their units wait for cloud-init, which waits for us.\n"
# EC2 takes 16 KB of user data ("User data is limited to 16 KB, in raw form, before it is base64-encoded": Amazon EC2
# User Guide, "Run commands when you launch an EC2 instance with user data input"), and AWS Batch adds its own part.
USER_DATA_BUDGET_BYTES = 15_000


@dataclass(frozen=True)
class AgentInstall:
    """The host agent a launch template pins: its bootstrap's source, the SHA-256 of the agent it fetches, and where
    from (the hosts bucket `<bucket_prefix>-<account>-<home_region>`, the account read on the host)."""

    bootstrap: str
    digest: str
    bucket_prefix: str
    home_region: str


def _cases(expected_gpus: Mapping[str, int]) -> str:
    """`case` arms: the instance types of each GPU count."""
    by_count: dict[int, list[str]] = {}
    for instance_type, gpus in sorted(expected_gpus.items()):
        by_count.setdefault(gpus, []).append(instance_type)
    return "\n".join(f"  {'|'.join(types)}) expected={count} ;;" for count, types in sorted(by_count.items()))


def agent_script(agent: AgentInstall) -> str:
    """The host agent's part of the script: its bootstrap and systemd unit written, its start queued."""
    values = {"@BOOTSTRAP@": agent.bootstrap.rstrip("\n") + "\n", "@UNIT@": AGENT_UNIT, "@PREFIX@": agent.bucket_prefix,
              "@REGION@": agent.home_region, "@DIGEST@": agent.digest, "@START@": AGENT_START}  # fmt: skip
    if "\nGPUPILOT_BOOTSTRAP\n" in "\n" + agent.bootstrap:
        raise ValueError("the bootstrap's source ends its own heredoc")
    body = AGENT_SCRIPT
    for placeholder, value in values.items():
        body = body.replace(placeholder, value)
    return body


def gpu_user_data(
    expected_gpus: Mapping[str, int] | None = None, boot_check: bool = True, agent: AgentInstall | None = None
) -> str:
    """The MIME multipart user data that Batch merges into its own for every GPU instance: the boot check (unless a
    deployment turns it off) against `expected_gpus` (instance type -> GPUs), then the ECS agent's GPU support, then
    (`agent`) the host agent's install."""
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
    script = CONFIG_SCRIPT + body + (agent_script(agent) if agent is not None else "") + FOOTER
    return (
        'Content-Type: multipart/mixed; boundary="' + BOUNDARY + '"\n'
        "MIME-Version: 1.0\n\n"
        f"--{BOUNDARY}\n"
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        f"{script}\n"
        f"--{BOUNDARY}--\n"
    )
