"""What a GPU instance's console output says: the boot-time GPU check's verdict (userdata.py prints it), the
kernel's GPU errors, its last lines. Pure."""

from __future__ import annotations

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.fleet.userdata import BOOT_CHECK_MARKER

BOOT_CHECK_PREFIX = f"{BOOT_CHECK_MARKER}:"
# Kernel lines of a GPU gone bad: "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus" (NVIDIA/NVSentinel#155).
KERNEL_GPU_MARKERS = ("NVRM: Xid", "fallen off the bus", "NVRM: GPU")
CONSOLE_LINES = 20


class BootVerdict(DomainModel):
    """What the launch template's boot-time GPU check printed on the console."""

    passed: bool
    line: str


def boot_verdict(console: str | None) -> BootVerdict | None:
    """The boot check's last verdict on the console (`gpupilot-boot-check: PASS ...` or `... FAIL ...`), if any."""
    lines = [line.strip() for line in (console or "").splitlines() if BOOT_CHECK_PREFIX in line]
    if not lines:
        return None
    verdict = lines[-1][lines[-1].index(BOOT_CHECK_PREFIX) :]
    return BootVerdict(passed=verdict[len(BOOT_CHECK_PREFIX) :].strip().startswith("PASS"), line=verdict)


def console_evidence(console: str | None) -> dict[str, object]:
    """What a console says of a host, as evidence: the boot check's verdict, the kernel's GPU errors, its last lines."""
    if not console:
        return {}
    lines = [line.rstrip() for line in console.splitlines() if line.strip()]
    evidence: dict[str, object] = {"console_tail": lines[-CONSOLE_LINES:]}
    verdict = boot_verdict(console)
    if verdict is not None:
        evidence["boot_check"] = verdict.line
    gpu_errors = [line for line in lines if any(marker in line for marker in KERNEL_GPU_MARKERS)]
    if gpu_errors:
        evidence["kernel_gpu_errors"] = gpu_errors[-5:]
    return evidence


def printed(
    consoles: dict[str, str], instance_ids: list[str]
) -> tuple[dict[str, dict[str, object]], list[tuple[str, str]]]:
    """What the instances' consoles say: evidence per instance, and one line of each to quote."""
    evidence = {i: found for i in instance_ids if (found := console_evidence(consoles.get(i)))}
    return evidence, [(i, line) for i in instance_ids if (line := console_summary(consoles.get(i)))]


def console_summary(console: str | None) -> str | None:
    """One line a diagnosis can quote: the boot check's verdict, the kernel's last GPU error, or the last line."""
    evidence = console_evidence(console)
    if "boot_check" in evidence:
        return str(evidence["boot_check"])
    gpu_errors = evidence.get("kernel_gpu_errors")
    if isinstance(gpu_errors, list) and gpu_errors:
        return str(gpu_errors[-1])
    tail = evidence.get("console_tail")
    return str(tail[-1]) if isinstance(tail, list) and tail else None
