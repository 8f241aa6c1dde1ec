"""The CUDA smoke payload, run everywhere but on a GPU: the CPU reference, the checks, the report, and every
failure path with its exit code (a GPU stand-in computes in Python; the driver's absence is real here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from payloads import cuda_smoke as smoke

PAYLOAD = Path(smoke.__file__)


class StandInGpu:
    """A GPU that computes in Python, and can be told to go wrong."""

    def __init__(self, index: int = 0, wrong: bool = False, allocation_status: int = 0) -> None:
        self.index, self.name, self.memory_mib = index, "NVIDIA A10G", 22_888
        self.wrong, self.allocation_status = wrong, allocation_status
        self.allocated: list[int] = []

    def allocate(self, mib: int) -> None:
        smoke._call(self.allocation_status, f"cuMemAlloc of {mib} MiB")
        self.allocated.append(mib)

    def vector_add(self, a: list[float], b: list[float]) -> list[float]:
        result = smoke.cpu_vector_add(a, b)
        return [result[0] + 0.5, *result[1:]] if self.wrong else result

    def matmul(self, a: list[float], b: list[float], n: int) -> list[float]:
        return smoke.cpu_matmul(a, b, n)


def test_every_gpu_allocates_adds_and_multiplies_correctly_and_the_report_says_so():
    gpus = [StandInGpu(0), StandInGpu(1)]
    report, code = smoke.smoke(lambda: ("12.4", gpus))
    assert (code, report["status"], report["driver_cuda_version"]) == (0, "pass", "12.4")
    assert [g["index"] for g in report["gpus"]] == [0, 1] and all(g.allocated == [256] for g in gpus)
    assert report["gpus"][0]["vector_add"] == {"n": 65536, "max_error": 0.0, "ok": True}
    assert report["gpus"][0]["matmul"]["ok"] and json.loads(json.dumps(report)) == report


@pytest.mark.parametrize(
    ("gpus", "code", "status", "words"),
    [
        ([], smoke.NO_GPU, "no_gpu", "sees no GPU"),
        ([StandInGpu(wrong=True)], smoke.WRONG_RESULT, "wrong_result", "GPU 0 (NVIDIA A10G): vector_add is wrong by "),
        ([StandInGpu(allocation_status=2)], smoke.OUT_OF_MEMORY, "out_of_memory", "out of GPU memory"),
        ([StandInGpu(allocation_status=700)], smoke.CUDA_ERROR, "cuda_error", "CUDA error 700"),
        ([StandInGpu(allocation_status=100)], smoke.NO_GPU, "no_gpu", "no CUDA-capable GPU"),
    ],
)
def test_each_failure_has_its_exit_code_and_a_clear_message(gpus, code, status, words):
    report, exit_code = smoke.smoke(lambda: ("12.4", gpus))
    assert (exit_code, report["status"], report["exit_code"]) == (code, status, code)
    assert words in report["message"]


def test_without_an_nvidia_driver_the_payload_says_so_and_exits_10():
    # This machine has no GPU and no driver: the real path, end to end
    done = subprocess.run([sys.executable, str(PAYLOAD)], capture_output=True, text=True, timeout=60)
    report = json.loads(done.stdout)
    assert (done.returncode, report["status"]) == (10, "no_driver")
    assert done.stderr.strip() == f"cuda_smoke: {report['message']}"


def test_the_cpu_reference_is_the_textbook_computation():
    assert smoke.cpu_vector_add([1.0, 2.0], [3.0, 4.0]) == [4.0, 6.0]
    assert smoke.cpu_matmul([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], 2) == [19.0, 22.0, 43.0, 50.0]
    assert smoke.max_error([1.0, 200.0], [1.0, 202.0]) == pytest.approx(0.0099, rel=1e-2)  # relative above 1
    assert smoke.max_error([1.0], [1.0, 2.0]) == float("inf")


def test_the_ptx_defines_both_kernels_the_driver_is_asked_for():
    for kernel in ("vector_add", "matmul"):
        assert f".visible .entry {kernel}(" in smoke.PTX


def test_the_smoke_job_carries_the_payload_itself_and_runs_it_with_python_alone():
    from gpupilot.cli import SMOKE_IMAGE, smoke_body

    body = smoke_body({"gpus": 2})
    assert (body["name"], body["image"], body["gpus"]) == ("cuda-smoke", SMOKE_IMAGE, 2)
    # The command is what Batch runs: here it finds no driver, exactly as the payload file does
    done = subprocess.run([sys.executable, *body["command"][1:]], capture_output=True, text=True, timeout=60)
    assert done.returncode == 10 and json.loads(done.stdout)["status"] == "no_driver"
    from functions.shared.domain.requests import JobRequest

    JobRequest.model_validate(body)  # within the API's limits (command length)
