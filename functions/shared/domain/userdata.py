"""User data for GPU container instances: MIME multipart, and it can never deadlock cloud-init.

The ECS and Docker systemd units wait for cloud-init to finish, and cloud-init waits for user data:
so user data only writes configuration and never starts or restarts `ecs` or `docker` synchronously.
`ECS_CLUSTER` is left to AWS Batch, which writes it itself.
"""

from __future__ import annotations

BOUNDARY = "==GPUPILOT=="

GPU_SHELL_SCRIPT = """#!/bin/bash
set -euo pipefail
# Written before the ECS agent starts: the agent reads this file once, at start.
mkdir -p /etc/ecs
grep -q '^ECS_ENABLE_GPU_SUPPORT=' /etc/ecs/ecs.config 2>/dev/null \\
  || echo 'ECS_ENABLE_GPU_SUPPORT=true' >> /etc/ecs/ecs.config
grep -q '^ECS_ENABLE_CONTAINER_METADATA=' /etc/ecs/ecs.config \\
  || echo 'ECS_ENABLE_CONTAINER_METADATA=true' >> /etc/ecs/ecs.config
# Persistence mode keeps the driver loaded between jobs, so CUDA init is fast.
if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -pm 1 || true; fi
# Nothing here starts ecs or docker: their units wait for cloud-init, which waits for us.
"""

FORBIDDEN_SYNC_STARTS = (
    "systemctl start ecs",
    "systemctl restart ecs",
    "systemctl start docker",
    "systemctl restart docker",
    "service ecs start",
    "service docker start",
    "service docker restart",
)


def gpu_user_data() -> str:
    """The MIME multipart user data that Batch merges into its own for every GPU instance."""
    return (
        'Content-Type: multipart/mixed; boundary="' + BOUNDARY + '"\n'
        "MIME-Version: 1.0\n\n"
        f"--{BOUNDARY}\n"
        'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
        f"{GPU_SHELL_SCRIPT}\n"
        f"--{BOUNDARY}--\n"
    )


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
