"""Use cases over in-memory fakes: each test shapes the fake world, runs one use case, looks at the fakes."""

from __future__ import annotations

from typing import Any

import pytest

from functions.shared.domain.jobs.steps import SelectInput, Selection, SubmitInput
from functions.shared.domain.pools.specs import QueueStatus
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import select_gpu_type
from functions.shared.usecases.jobs.attempt import submit_batch_job
from tests.fakes import fake_ports

JOB_ID = "0123456789abcdef0123"
REQUEST: dict[str, Any] = {"name": "train", "image": "nvidia/cuda:12.4.1-base", "command": ["nvidia-smi", "-L"]}


@pytest.fixture
def ports() -> Ports:
    return fake_ports()


def create_job(ports: Ports, **request: Any) -> JobRequest:
    """A SUBMITTED job JOB_ID with REQUEST (and overrides)."""
    parsed = JobRequest.model_validate(REQUEST | request)
    ports.jobs.create_job(JOB_ID, parsed)
    return parsed


def selected(ports: Ports, **request: Any) -> tuple[JobRequest, Selection]:
    """A job past SelectGpuType."""
    parsed = create_job(ports, **request)
    return parsed, select_gpu_type(SelectInput(job_id=JOB_ID, request=parsed), ports)


def ready_queue(selection: Selection) -> QueueStatus:
    name = f"gpupilot-od-x8664-{selection.current().instance_type.replace('.', '-')}"
    return QueueStatus(job_queue=name, compute_environment=name, ready=True, checks=1, status="VALID/VALID")


def submitted(ports: Ports, **request: Any) -> SubmitInput:
    """A job whose first attempt was submitted to Batch; returns the SubmitBatchJob input."""
    parsed, selection = selected(ports, **request)
    payload = SubmitInput(job_id=JOB_ID, request=parsed, selection=selection, queue=ready_queue(selection))
    submit_batch_job(payload, ports)
    return payload
