"""POST /plan and SelectGpuType: rank the GPU offerings that fit a request against live availability."""

from __future__ import annotations

from functions.shared.domain.requests import JobRequest
from functions.shared.domain.selection import WORKFLOW_CANDIDATES, Plan, plan, within_filters
from functions.shared.domain.steps import NoGpuTypeAvailable, SelectInput, Selection
from functions.shared.domain.vocabulary import JobStatus
from functions.shared.ports import Ports


def plan_request(request: JobRequest, ports: Ports) -> Plan:
    """Every GPU offering for `request`, best first, and every type left out with its reason."""
    gpu_types = ports.catalog.gpu_types()
    snapshot = ports.availability.snapshot(sorted(gpu_types), ports.offerings.unavailable_offerings())
    return plan(request, gpu_types, snapshot, ports.prices.on_demand, arm64_ami=bool(ports.settings.arm64_gpu_ami_id))


def select_gpu_type(payload: SelectInput, ports: Ports) -> Selection:
    """SelectGpuType: the ranked offerings the workflow will try in order."""
    ports.jobs.advance(payload.job_id, JobStatus.SELECTING, attempt=0)
    ranked = plan_request(payload.request, ports)
    if not ranked.candidates:
        # Types the request's own filters left out say least about why nothing fits: show the others first.
        gpu_types = ports.catalog.gpu_types()
        telling = sorted(
            ranked.rejected,
            key=lambda r: (
                r.instance_type not in gpu_types or not within_filters(payload.request, gpu_types[r.instance_type])
            ),
        )
        reasons = "; ".join(f"{r.instance_type}: {r.reason}" for r in telling[:5])
        raise NoGpuTypeAvailable(f"no GPU instance type fits the request ({reasons})")
    return Selection(candidates=ranked.candidates[:WORKFLOW_CANDIDATES], index=0, catalog=ports.catalog.source)
