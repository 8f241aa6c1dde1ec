"""The CUDA smoke payload, run everywhere but on a GPU: the CPU reference, the checks, the report, and every
failure path with its exit code (a GPU stand-in computes in Python; the driver's absence is real here), and
the driver calls themselves against stand-in drivers that model CUDA contexts: one in Python, and a C stub
libcuda the payload loads the ordinary way where a C compiler is found."""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import shutil
import subprocess
import sys
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from payloads import cuda_smoke as smoke

PAYLOAD = Path(smoke.__file__)
STUB_SOURCE = Path(__file__).with_name("stub_libcuda.c")


class StandInGpu:
    """A GPU that computes in Python, and can be told to go wrong."""

    def __init__(self, index: int = 0, wrong: bool = False, allocation_status: int = 0,
                 events: list[str] | None = None) -> None:  # fmt: skip
        self.index, self.name, self.memory_mib = index, "NVIDIA A10G", 22_888
        self.wrong, self.allocation_status = wrong, allocation_status
        self.allocated: list[int] = []
        self.events = [] if events is None else events

    def __enter__(self) -> StandInGpu:
        self.events.append(f"hold {self.index}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.events.append(f"let go {self.index}")

    def allocate(self, mib: int) -> None:
        self.events.append(f"allocate {self.index}")
        smoke._call(self.allocation_status, f"cuMemAlloc of {mib} MiB")
        self.allocated.append(mib)

    def vector_add(self, a: list[float], b: list[float]) -> list[float]:
        self.events.append(f"add {self.index}")
        result = smoke.cpu_vector_add(a, b)
        return [result[0] + 0.5, *result[1:]] if self.wrong else result

    def matmul(self, a: list[float], b: list[float], n: int) -> list[float]:
        self.events.append(f"multiply {self.index}")
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
    from gpupilot.cli.jobs import SMOKE_IMAGE, smoke_body

    body = smoke_body({"gpus": 2})
    assert (body["name"], body["image"], body["gpus"]) == ("cuda-smoke", SMOKE_IMAGE, 2)
    # The command is what Batch runs: here it finds no driver, exactly as the payload file does
    done = subprocess.run([sys.executable, *body["command"][1:]], capture_output=True, text=True, timeout=60)
    assert done.returncode == 10 and json.loads(done.stdout)["status"] == "no_driver"
    from functions.shared.domain.requests.job_request import JobRequest

    JobRequest.model_validate(body)  # within the API's limits (command length)


# -- the driver calls, against a Python stand-in for libcuda that models contexts --------------------------
SUCCESS, INVALID_VALUE, OUT_OF_MEMORY, INVALID_DEVICE, INVALID_CONTEXT = 0, 1, 2, 101, 201
INVALID_HANDLE, NOT_FOUND, ILLEGAL_ADDRESS = 400, 500, 700
STAND_IN_BROKE = 999  # the stand-in itself raised: `driver.errors` says what
c = ctypes
# The driver's functions as cuda.h declares them (what the library receives); the payload declares its own
C_SIGNATURES: dict[str, list[Any]] = {
    "cuInit": [c.c_uint],
    "cuDriverGetVersion": [c.POINTER(c.c_int)],
    "cuDeviceGetCount": [c.POINTER(c.c_int)],
    "cuDeviceGet": [c.POINTER(c.c_int), c.c_int],
    "cuDeviceGetName": [c.c_void_p, c.c_int, c.c_int],
    "cuDeviceTotalMem_v2": [c.POINTER(c.c_size_t), c.c_int],
    "cuDevicePrimaryCtxRetain": [c.POINTER(c.c_void_p), c.c_int],
    "cuDevicePrimaryCtxRelease_v2": [c.c_int],
    "cuCtxCreate_v2": [c.POINTER(c.c_void_p), c.c_uint, c.c_int],
    "cuCtxSetCurrent": [c.c_void_p],
    "cuCtxPushCurrent_v2": [c.c_void_p],
    "cuCtxPopCurrent_v2": [c.POINTER(c.c_void_p)],
    "cuCtxSynchronize": [],
    "cuModuleLoadData": [c.POINTER(c.c_void_p), c.c_void_p],
    "cuModuleUnload": [c.c_void_p],
    "cuModuleGetFunction": [c.POINTER(c.c_void_p), c.c_void_p, c.c_char_p],
    "cuMemAlloc_v2": [c.POINTER(c.c_uint64), c.c_size_t],
    "cuMemFree_v2": [c.c_uint64],
    "cuMemcpyHtoD_v2": [c.c_uint64, c.c_void_p, c.c_size_t],
    "cuMemcpyDtoH_v2": [c.c_void_p, c.c_uint64, c.c_size_t],
    "cuLaunchKernel": [c.c_void_p, *[c.c_uint] * 7, c.c_void_p, c.POINTER(c.c_void_p), c.POINTER(c.c_void_p)],
}
PRIMARY = 0x100  # GPU d's primary context is PRIMARY + d
VECTOR_BYTES, MATRIX_BYTES = smoke.VECTOR_N * 4, smoke.MATRIX_N * smoke.MATRIX_N * 4
ONE_GPU_CHECK = Counter(
    {
        ("cuMemAlloc_v2", str(smoke.ALLOCATE_MIB << 20)): 1,
        ("cuModuleLoadData", "PTX"): 1,
        ("cuMemAlloc_v2", str(VECTOR_BYTES)): 3,
        ("cuLaunchKernel", "vector_add"): 1,
        ("cuMemAlloc_v2", str(MATRIX_BYTES)): 3,
        ("cuLaunchKernel", "matmul"): 1,
    }
)


@dataclass
class Allocation:
    device: int
    size: int
    data: bytearray | None = None  # written by the first copy: a large allocation costs nothing until then

    def floats(self) -> array:
        return array("f", bytes(self.data if self.data is not None else bytearray(self.size)))


class StandInDriver:
    """libcuda's context model in Python: GPUs whose primary contexts are reference counted (the last release
    resets one), the thread's stack of current contexts, and allocations, module loads and launches bound to
    the current context, failing without one. Kernels run on the CPU over the launch's grid, from the
    launching GPU's memory only. Each function is a C function pointer, so the payload's declared signatures
    convert every argument as they do for the real library. `work` lists (device, function, detail)."""

    def __init__(self, gpus: int = 2, free_mib: dict[int, int] | None = None, wrong: frozenset[int] = frozenset()):
        self.names = [f"Stand-in GPU {d}" for d in range(gpus)]
        self.total = 22_888 << 20
        self.free = {d: (free_mib or {}).get(d, self.total >> 20) << 20 for d in range(gpus)}
        self.wrong = wrong  # GPUs whose vector add is off
        self.references = dict.fromkeys(range(gpus), 0)
        self.contexts = {PRIMARY + d: d for d in range(gpus)}  # context -> its GPU
        self.stack: list[int] = []  # the thread's current contexts, top last
        self.allocations: dict[int, Allocation] = {}
        self.modules: dict[int, tuple[int, bytes]] = {}  # module -> (GPU, PTX)
        self.functions: dict[int, tuple[int, str]] = {}  # function -> (module, kernel)
        self.pending: dict[int, int] = {}  # GPU -> a launch's error, for the next cuCtxSynchronize
        self.work: list[tuple[int, str, str]] = []
        self.errors: list[str] = []
        self._handles = itertools.count(0x1000)
        self._addresses = itertools.count(0x7F00_0000_0000, 1 << 32)
        for name, argtypes in C_SIGNATURES.items():
            function = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(self._guarded(name, getattr(self, f"_{name}")))
            setattr(self, name, function)

    def _guarded(self, name: str, method: Callable[..., int]) -> Callable[..., int]:
        # An exception cannot cross the C boundary: keep it for the test to see
        def call(*args: Any) -> int:
            try:
                return method(*args)
            except Exception as error:
                self.errors.append(f"{name}: {error!r}")
                return STAND_IN_BROKE

        return call

    def _current(self) -> int | None:
        """The GPU of the thread's current context."""
        return self.contexts[self.stack[-1]] if self.stack else None

    def _live(self, context: int | None) -> bool:
        if context is None or context not in self.contexts:
            return False
        return context >= PRIMARY + len(self.names) or self.references[context - PRIMARY] > 0

    def _cuInit(self, flags: int) -> int:
        return SUCCESS if flags == 0 else INVALID_VALUE

    def _cuDriverGetVersion(self, version: Any) -> int:
        version[0] = 12040
        return SUCCESS

    def _cuDeviceGetCount(self, count: Any) -> int:
        count[0] = len(self.names)
        return SUCCESS

    def _cuDeviceGet(self, device: Any, ordinal: int) -> int:
        if not 0 <= ordinal < len(self.names):
            return INVALID_DEVICE
        device[0] = ordinal
        return SUCCESS

    def _cuDeviceGetName(self, buffer: int, length: int, device: int) -> int:
        name = self.names[device].encode()[: length - 1] + b"\0"
        ctypes.memmove(buffer, name, len(name))
        return SUCCESS

    def _cuDeviceTotalMem_v2(self, total: Any, device: int) -> int:
        total[0] = self.total
        return SUCCESS

    def _cuDevicePrimaryCtxRetain(self, context: Any, device: int) -> int:
        self.references[device] += 1
        context[0] = PRIMARY + device  # not made current
        return SUCCESS

    def _cuDevicePrimaryCtxRelease_v2(self, device: int) -> int:
        if not self.references[device]:
            return INVALID_CONTEXT
        self.references[device] -= 1
        if not self.references[device]:  # reset, but not popped from any stack
            for address in [a for a, allocation in self.allocations.items() if allocation.device == device]:
                self.free[device] += self.allocations.pop(address).size
            self.modules = {m: (gpu, ptx) for m, (gpu, ptx) in self.modules.items() if gpu != device}
        return SUCCESS

    def _cuCtxCreate_v2(self, context: Any, flags: int, device: int) -> int:
        handle = next(self._handles)
        self.contexts[handle] = device
        self.stack.append(handle)
        context[0] = handle
        return SUCCESS

    def _cuCtxSetCurrent(self, context: int | None) -> int:
        if context is None:
            self.stack[-1:] = []
        elif not self._live(context):
            return INVALID_CONTEXT
        else:
            self.stack[-1:] = [context]
        return SUCCESS

    def _cuCtxPushCurrent_v2(self, context: int | None) -> int:
        if not self._live(context):
            return INVALID_CONTEXT
        self.stack.append(context)
        return SUCCESS

    def _cuCtxPopCurrent_v2(self, popped: Any) -> int:
        if not self.stack:
            return INVALID_CONTEXT
        popped[0] = self.stack.pop()
        return SUCCESS

    def _cuCtxSynchronize(self) -> int:
        device = self._current()
        return INVALID_CONTEXT if device is None else self.pending.pop(device, SUCCESS)

    def _cuModuleLoadData(self, module: Any, image: int) -> int:
        device = self._current()
        if device is None:
            return INVALID_CONTEXT
        handle = next(self._handles)
        self.modules[handle] = (device, ctypes.string_at(image))
        module[0] = handle
        self.work.append((device, "cuModuleLoadData", "PTX"))
        return SUCCESS

    def _cuModuleUnload(self, module: int) -> int:
        if self._current() is None:
            return INVALID_CONTEXT
        return SUCCESS if self.modules.pop(module, None) else INVALID_HANDLE

    def _cuModuleGetFunction(self, function: Any, module: int, name: bytes) -> int:
        device = self._current()
        if device is None:
            return INVALID_CONTEXT
        if module not in self.modules or self.modules[module][0] != device:
            return INVALID_HANDLE
        if b".entry " + name + b"(" not in self.modules[module][1]:
            return NOT_FOUND
        handle = next(self._handles)
        self.functions[handle] = (module, name.decode())
        function[0] = handle
        return SUCCESS

    def _cuMemAlloc_v2(self, pointer: Any, size: int) -> int:
        device = self._current()
        if device is None:
            return INVALID_CONTEXT
        if size > self.free[device]:
            return OUT_OF_MEMORY
        address = next(self._addresses)
        self.allocations[address] = Allocation(device, size)
        self.free[device] -= size
        pointer[0] = address
        self.work.append((device, "cuMemAlloc_v2", str(size)))
        return SUCCESS

    def _cuMemFree_v2(self, address: int) -> int:
        if self._current() is None:
            return INVALID_CONTEXT
        if address not in self.allocations:
            return INVALID_VALUE
        allocation = self.allocations.pop(address)
        self.free[allocation.device] += allocation.size
        return SUCCESS

    def _cuMemcpyHtoD_v2(self, address: int, source: int, size: int) -> int:
        if self._current() is None:
            return INVALID_CONTEXT
        self.allocations[address].data = bytearray(ctypes.string_at(source, size))
        return SUCCESS

    def _cuMemcpyDtoH_v2(self, target: int, address: int, size: int) -> int:
        if self._current() is None:
            return INVALID_CONTEXT
        ctypes.memmove(target, self.allocations[address].floats().tobytes(), size)
        return SUCCESS

    def _cuLaunchKernel(self, function: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,
                        stream: int | None, params: Any, extra: Any) -> int:  # fmt: skip
        device = self._current()
        if device is None:
            return INVALID_CONTEXT
        module, kernel = self.functions[function]
        if self.modules[module][0] != device:
            return INVALID_CONTEXT
        pointers = [ctypes.c_uint64.from_address(params[i]).value for i in range(3)]
        n = ctypes.c_uint32.from_address(params[3]).value
        count = n if kernel == "vector_add" else n * n
        buffers = [self.allocations.get(p) for p in pointers]
        usable = [b for b in buffers if b is not None and b.device == device and b.size >= count * 4]
        if len(usable) < len(buffers):
            self.pending[device] = ILLEGAL_ADDRESS  # a fault on the GPU: the next synchronize reports it
            return SUCCESS
        a, b, out = (buffer.floats() for buffer in usable)
        columns, rows = gx * bx, gy * by  # only what the grid covers, as on a GPU
        if kernel == "vector_add":
            for i in range(min(n, columns)):
                out[i] = a[i] + b[i] + (0.5 if device in self.wrong and i == 0 else 0.0)
        else:
            for row, col in itertools.product(range(min(n, rows)), range(min(n, columns))):
                out[row * n + col] = sum(a[row * n + k] * b[k * n + col] for k in range(n))
        usable[2].data = bytearray(out.tobytes())
        self.work.append((device, "cuLaunchKernel", kernel))
        return SUCCESS


def run_smoke(driver: StandInDriver) -> tuple[dict[str, Any], int]:
    report, code = smoke.smoke(lambda: smoke.open_nvidia_driver(driver))
    assert driver.errors == []
    return report, code


def checks_in_order(work: list[tuple[int, str, str]]) -> list[tuple[int, Counter]]:
    """The work as unbroken stretches on one GPU: (GPU, what ran there)."""
    return [(gpu, Counter((f, d) for _, f, d in run)) for gpu, run in itertools.groupby(work, key=lambda w: w[0])]


def test_each_gpu_allocates_loads_and_launches_in_its_own_context_one_gpu_after_another():
    # Given a host with three GPUs
    driver = StandInDriver(gpus=3)
    # When the smoke test runs
    report, code = run_smoke(driver)
    # Then it passes, and each GPU's memory check, module and kernels ran on that GPU, in one stretch
    assert (code, [g["name"] for g in report["gpus"]]) == (0, ["Stand-in GPU 0", "Stand-in GPU 1", "Stand-in GPU 2"])
    assert checks_in_order(driver.work) == [(0, ONE_GPU_CHECK), (1, ONE_GPU_CHECK), (2, ONE_GPU_CHECK)]


def test_after_the_smoke_test_no_context_is_held_or_current_and_nothing_is_left_on_any_gpu():
    driver = StandInDriver(gpus=2)
    run_smoke(driver)
    assert (driver.references, driver.stack, driver.allocations, driver.modules) == ({0: 0, 1: 0}, [], {}, {})
    assert set(driver.contexts) == {PRIMARY, PRIMARY + 1}  # the primary contexts, none of its own


def test_a_gpu_without_free_memory_fails_its_own_memory_check_after_the_gpus_before_it_passed():
    # Given a host whose second GPU's memory is all taken (another process holds it)
    driver = StandInDriver(gpus=2, free_mib={1: 0})
    # When the smoke test runs
    report, code = run_smoke(driver)
    # Then GPU 0 passed and GPU 1 is the one out of memory
    assert (code, report["status"], [g["index"] for g in report["gpus"]]) == (13, "out_of_memory", [0])
    assert report["message"] == "GPU 1 (Stand-in GPU 1): cuMemAlloc of 256 MiB: out of GPU memory (CUDA error 2)"


def test_a_gpu_that_adds_wrong_is_the_one_the_report_names():
    driver = StandInDriver(gpus=2, wrong=frozenset({1}))
    report, code = run_smoke(driver)
    assert (code, [g["index"] for g in report["gpus"]]) == (smoke.WRONG_RESULT, [0])
    assert report["message"].startswith("GPU 1 (Stand-in GPU 1): vector_add is wrong by ")


def test_each_gpu_is_held_for_its_whole_check_and_let_go_before_the_next():
    events: list[str] = []
    smoke.smoke(lambda: ("12.4", [StandInGpu(0, events=events), StandInGpu(1, events=events)]))
    assert events == [f"{step} {i}" for i in (0, 1) for step in ("hold", "allocate", "add", "multiply", "let go")]


def test_a_driver_without_a_function_the_test_calls_is_a_cuda_error_saying_it_is_too_old():
    # Given a driver from before CUDA 11, without cuDevicePrimaryCtxRelease_v2
    driver = StandInDriver(gpus=1)
    del driver.cuDevicePrimaryCtxRelease_v2
    # When the smoke test opens it / Then it stops with the CUDA error code and says why
    report, code = smoke.smoke(lambda: smoke.open_nvidia_driver(driver))
    assert (code, report["status"]) == (smoke.CUDA_ERROR, "cuda_error")
    assert report["message"] == "the NVIDIA driver has no cuDevicePrimaryCtxRelease_v2: it is older than CUDA 11"


# -- the real ctypes bindings, against a stub libcuda built from C here ------------------------------------
def c_compiler() -> str | None:
    return next(filter(None, map(shutil.which, (os.environ.get("CC", "cc"), "gcc", "clang"))), None)


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The payload run as on a GPU host with three GPUs, its libcuda the C stub: (the run, the stub's log)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the stub libcuda is a Linux shared library, found through LD_LIBRARY_PATH")
    compiler = c_compiler()
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc or clang) found: the stub libcuda cannot be built")
    directory = tmp_path_factory.mktemp("stub-libcuda")
    command = [compiler, "-shared", "-fPIC", "-O2", "-o", str(directory / "libcuda.so.1"), str(STUB_SOURCE)]
    built = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    log = directory / "calls.log"
    # The payload finds the stub where it would find the driver: the dynamic loader's search path
    environment = os.environ | {"LD_LIBRARY_PATH": str(directory), "STUB_CUDA_GPUS": "3", "STUB_CUDA_LOG": str(log)}
    done = subprocess.run([sys.executable, str(PAYLOAD)], capture_output=True, text=True, timeout=120, env=environment)
    return done, log.read_text().splitlines() if log.exists() else []


def test_through_the_real_bindings_each_gpu_is_checked_in_its_own_context(stub_run):
    done, log = stub_run
    report = json.loads(done.stdout)
    assert (done.returncode, report["status"], report["message"]) == (0, "pass", "3 GPU(s) passed")
    # Each GPU's own name and size (size_t) came through, and its kernels' results are right
    assert [(g["name"], g["memory_mib"]) for g in report["gpus"]] == [
        ("Stub GPU 0", 16_384), ("Stub GPU 1", 24_576), ("Stub GPU 2", 32_768)
    ]  # fmt: skip
    work = [(int(gpu), function, detail) for gpu, function, detail in (line.split() for line in log[:-1])]
    assert checks_in_order(work) == [(0, ONE_GPU_CHECK), (1, ONE_GPU_CHECK), (2, ONE_GPU_CHECK)]


def test_through_the_real_bindings_no_context_memory_or_module_is_left_at_exit(stub_run):
    _, log = stub_run
    assert log[-1] == "exit 0 0 0 0"  # contexts held, contexts current, allocations, modules
