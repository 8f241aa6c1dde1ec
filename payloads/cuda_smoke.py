"""CUDA smoke test: is this a working GPU host? Python 3 standard library only, plus the NVIDIA driver.

It reports the driver's CUDA version and every GPU's name and memory and, on each GPU in turn and in that
GPU's own (primary) context, allocates memory, runs two kernels (a vector add and a matrix multiply, shipped
as PTX that the driver compiles, so no CUDA toolkit is needed) and checks their results against the same
computation on the CPU; it prints one JSON report on stdout. Run it on any host or container with the NVIDIA
driver:

    python3 payloads/cuda_smoke.py
    docker run --rm --gpus all -i python:3.12-slim python3 - < payloads/cuda_smoke.py
    gpupilot submit --smoke --wait            # as a GPU Pilot job (python:3.12-slim; Batch mounts the driver)

Exit codes: 0 every GPU passed; 10 no NVIDIA driver (libcuda cannot be loaded); 11 the driver sees no GPU;
12 a kernel's result is wrong; 13 out of GPU memory; 14 any other CUDA error (the report says which).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import random
import sys
from array import array
from collections.abc import Iterator
from typing import Any, Protocol

PASS, NO_DRIVER, NO_GPU, WRONG_RESULT, OUT_OF_MEMORY, CUDA_ERROR = 0, 10, 11, 12, 13, 14
STATUS = {PASS: "pass", NO_DRIVER: "no_driver", NO_GPU: "no_gpu", WRONG_RESULT: "wrong_result",
          OUT_OF_MEMORY: "out_of_memory", CUDA_ERROR: "cuda_error"}  # fmt: skip
VECTOR_N = 1 << 16
MATRIX_N = 64
ALLOCATE_MIB = 256
TOLERANCE = 1e-3  # float32 on the GPU against float64 on the CPU
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_OUT_OF_MEMORY = 2

PTX = r"""
.version 7.0
.target sm_50
.address_size 64

.visible .entry vector_add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
    .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<4>; .reg .b64 %rd<11>;
    ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [b]; ld.param.u64 %rd3, [c]; ld.param.u32 %r2, [n];
    mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x; mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra VA_DONE;
    cvta.to.global.u64 %rd4, %rd1; cvta.to.global.u64 %rd5, %rd2; cvta.to.global.u64 %rd6, %rd3;
    mul.wide.u32 %rd7, %r1, 4;
    add.s64 %rd8, %rd4, %rd7; add.s64 %rd9, %rd5, %rd7; add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8]; ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
VA_DONE:
    ret;
}

.visible .entry matmul(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
    .reg .pred %p<3>; .reg .b32 %r<14>; .reg .f32 %f<4>; .reg .b64 %rd<13>;
    ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [b]; ld.param.u64 %rd3, [c]; ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.y; mov.u32 %r3, %ntid.y; mov.u32 %r4, %tid.y;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    mov.u32 %r6, %ctaid.x; mov.u32 %r7, %ntid.x; mov.u32 %r8, %tid.x;
    mad.lo.s32 %r9, %r6, %r7, %r8;
    setp.ge.u32 %p1, %r5, %r1;
    setp.ge.u32 %p2, %r9, %r1;
    or.pred %p1, %p1, %p2;
    @%p1 bra MM_DONE;
    cvta.to.global.u64 %rd4, %rd1; cvta.to.global.u64 %rd5, %rd2; cvta.to.global.u64 %rd6, %rd3;
    mov.f32 %f1, 0f00000000;
    mov.u32 %r10, 0;
MM_LOOP:
    mad.lo.s32 %r11, %r5, %r1, %r10;
    mul.wide.u32 %rd7, %r11, 4; add.s64 %rd8, %rd4, %rd7; ld.global.f32 %f2, [%rd8];
    mad.lo.s32 %r12, %r10, %r1, %r9;
    mul.wide.u32 %rd9, %r12, 4; add.s64 %rd10, %rd5, %rd9; ld.global.f32 %f3, [%rd10];
    fma.rn.f32 %f1, %f2, %f3, %f1;
    add.s32 %r10, %r10, 1;
    setp.lt.u32 %p2, %r10, %r1;
    @%p2 bra MM_LOOP;
    mad.lo.s32 %r13, %r5, %r1, %r9;
    mul.wide.u32 %rd11, %r13, 4; add.s64 %rd12, %rd6, %rd11;
    st.global.f32 [%rd12], %f1;
MM_DONE:
    ret;
}
"""


class SmokeFailure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Gpu(Protocol):
    """What the test needs of one GPU (the driver's, or a test's stand-in): held with `with` for its check."""

    index: int
    name: str
    memory_mib: int

    def __enter__(self) -> Gpu: ...

    def __exit__(self, *exc: object) -> None: ...

    def allocate(self, mib: int) -> None: ...

    def vector_add(self, a: list[float], b: list[float]) -> list[float]: ...

    def matmul(self, a: list[float], b: list[float], n: int) -> list[float]: ...


# -- what the GPU's answers are checked against --------------------------------------------------------
def inputs(seed: int) -> tuple[list[float], list[float], list[float], list[float]]:
    """Vectors and matrices of float32-exact values, the same on every run."""
    rng = random.Random(seed)

    def values(count: int) -> list[float]:
        return list(array("f", (rng.uniform(-1.0, 1.0) for _ in range(count))))

    return values(VECTOR_N), values(VECTOR_N), values(MATRIX_N * MATRIX_N), values(MATRIX_N * MATRIX_N)


def cpu_vector_add(a: list[float], b: list[float]) -> list[float]:
    return [x + y for x, y in zip(a, b, strict=True)]


def cpu_matmul(a: list[float], b: list[float], n: int) -> list[float]:
    return [sum(a[row * n + k] * b[k * n + col] for k in range(n)) for row in range(n) for col in range(n)]


def max_error(got: list[float], want: list[float]) -> float:
    """The largest difference, relative to the value's size where it is over 1."""
    if len(got) != len(want):
        return float("inf")
    return max((abs(g - w) / max(1.0, abs(w)) for g, w in zip(got, want, strict=True)), default=0.0)


def check_gpu(gpu: Gpu, seed: int = 7) -> dict[str, Any]:
    """Allocate, add, multiply and check one GPU; SmokeFailure, naming the GPU, on the first thing wrong."""
    va, vb, ma, mb = inputs(seed)
    try:
        with gpu:
            gpu.allocate(min(ALLOCATE_MIB, max(1, gpu.memory_mib // 4)))
            vector, product = gpu.vector_add(va, vb), gpu.matmul(ma, mb, MATRIX_N)
    except SmokeFailure as failure:
        # On a host with several GPUs, which one failed is the finding
        raise SmokeFailure(failure.code, f"GPU {gpu.index} ({gpu.name}): {failure}") from failure
    vector_error = max_error(vector, cpu_vector_add(va, vb))
    matmul_error = max_error(product, cpu_matmul(ma, mb, MATRIX_N))
    errors = {"vector_add": (VECTOR_N, vector_error), "matmul": (MATRIX_N, matmul_error)}
    for kernel, (_, error) in errors.items():
        if error > TOLERANCE:
            raise SmokeFailure(WRONG_RESULT, f"GPU {gpu.index} ({gpu.name}): {kernel} is wrong by {error:g}")
    kernels = {k: {"n": n, "max_error": e, "ok": True} for k, (n, e) in errors.items()}
    return {"index": gpu.index, "name": gpu.name, "memory_mib": gpu.memory_mib} | kernels


def smoke(open_driver: Any) -> tuple[dict[str, Any], int]:
    """The report and the exit code: `open_driver()` gives (driver version, [Gpu]) or raises SmokeFailure."""
    report: dict[str, Any] = {"gpus": []}
    try:
        version, gpus = open_driver()
        report["driver_cuda_version"] = version
        if not gpus:
            raise SmokeFailure(NO_GPU, "the NVIDIA driver is loaded but sees no GPU (NVIDIA_VISIBLE_DEVICES?)")
        for gpu in gpus:
            report["gpus"].append(check_gpu(gpu))
        code, message = PASS, f"{len(gpus)} GPU(s) passed"
    except SmokeFailure as failure:
        code, message = failure.code, str(failure)
    report |= {"status": STATUS[code], "exit_code": code, "message": message}
    return report, code


# -- the NVIDIA driver, through ctypes ------------------------------------------------------------------
class CudaGpu:
    """One GPU through the CUDA driver API: its primary context, the PTX module, memory, two kernels.

    Allocations, module loads and launches bind to the calling thread's current context, whatever GPU that
    context is on, so each runs with this GPU's context pushed, and popped after: the thread's context is as
    it was between calls, and one GPU's check can never run on another GPU."""

    def __init__(self, cuda: Any, index: int) -> None:
        self.cuda, self.index = cuda, index
        self.device = ctypes.c_int()
        _call(cuda.cuDeviceGet(ctypes.byref(self.device), index), "cuDeviceGet")
        name = ctypes.create_string_buffer(256)
        _call(cuda.cuDeviceGetName(name, 256, self.device), "cuDeviceGetName")
        memory = ctypes.c_size_t()
        _call(cuda.cuDeviceTotalMem_v2(ctypes.byref(memory), self.device), "cuDeviceTotalMem")
        self.name, self.memory_mib = name.value.decode(), memory.value // (1 << 20)
        self.context = ctypes.c_void_p()
        self.module = ctypes.c_void_p()

    def __enter__(self) -> CudaGpu:
        # The device's primary context (the one the CUDA runtime uses), rather than a context of our own;
        # retaining it does not make it current
        _call(self.cuda.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device), "cuDevicePrimaryCtxRetain")
        return self

    def __exit__(self, *exc: object) -> None:
        # Best effort, so that nothing here hides the check's own result: releasing the last reference resets
        # the primary context, which frees whatever a failed kernel left allocated
        if self.module.value and self.cuda.cuCtxPushCurrent_v2(self.context) == 0:
            self.cuda.cuModuleUnload(self.module)
            self.cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        self.module = ctypes.c_void_p()
        self.cuda.cuDevicePrimaryCtxRelease_v2(self.device)

    @contextlib.contextmanager
    def _current(self) -> Iterator[None]:
        _call(self.cuda.cuCtxPushCurrent_v2(self.context), "cuCtxPushCurrent")
        try:
            yield
        finally:
            # Its status is not checked: the next GPU pushes its own context on top whatever happens here
            self.cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))

    def allocate(self, mib: int) -> None:
        pointer = ctypes.c_uint64()
        with self._current():
            _call(self.cuda.cuMemAlloc_v2(ctypes.byref(pointer), mib << 20), f"cuMemAlloc of {mib} MiB")
            _call(self.cuda.cuMemFree_v2(pointer), "cuMemFree")

    def vector_add(self, a: list[float], b: list[float]) -> list[float]:
        n = len(a)
        return self._run("vector_add", [a, b], n, n, grid=((n + 255) // 256, 1), block=(256, 1))

    def matmul(self, a: list[float], b: list[float], n: int) -> list[float]:
        tiles = (n + 15) // 16
        return self._run("matmul", [a, b], n * n, n, grid=(tiles, tiles), block=(16, 16))

    def _run(self, kernel: str, inputs: list[list[float]], out_count: int, n: int, grid: tuple[int, int],
             block: tuple[int, int]) -> list[float]:  # fmt: skip
        cuda = self.cuda
        with self._current():
            if not self.module.value:
                _call(cuda.cuModuleLoadData(ctypes.byref(self.module), PTX.encode()), "cuModuleLoadData (PTX JIT)")
            function = ctypes.c_void_p()
            _call(cuda.cuModuleGetFunction(ctypes.byref(function), self.module, kernel.encode()),
                  "cuModuleGetFunction")  # fmt: skip
            buffers = []
            for values in [*inputs, [0.0] * out_count]:
                host = array("f", values)
                device = ctypes.c_uint64()
                _call(cuda.cuMemAlloc_v2(ctypes.byref(device), len(host) * 4), "cuMemAlloc")
                _call(cuda.cuMemcpyHtoD_v2(device, host.buffer_info()[0], len(host) * 4), "cuMemcpyHtoD")
                buffers.append((device, host))
            count = ctypes.c_uint32(n)
            params = [ctypes.c_void_p(ctypes.addressof(device)) for device, _ in buffers]
            params.append(ctypes.c_void_p(ctypes.addressof(count)))
            args = (ctypes.c_void_p * len(params))(*params)
            _call(cuda.cuLaunchKernel(function, grid[0], grid[1], 1, block[0], block[1], 1, 0, None, args, None),
                  f"cuLaunchKernel {kernel}")  # fmt: skip
            _call(cuda.cuCtxSynchronize(), f"{kernel} on the GPU")
            out_device, out_host = buffers[-1]
            _call(cuda.cuMemcpyDtoH_v2(out_host.buffer_info()[0], out_device, len(out_host) * 4), "cuMemcpyDtoH")
            for device, _ in buffers:
                cuda.cuMemFree_v2(device)
        return list(out_host)


def signatures() -> dict[str, list[Any]]:
    """The driver functions' C argument types (sizes are size_t and device pointers 64-bit: without these,
    ctypes would pass them as C ints). The _v2 names are what cuda.h maps the plain names to; the primary
    context's cuDevicePrimaryCtxRelease_v2 came with CUDA 11, which the PTX's version 7.0 needs anyway."""
    c = ctypes
    return {
        "cuInit": [c.c_uint],
        "cuDriverGetVersion": [c.POINTER(c.c_int)],
        "cuDeviceGetCount": [c.POINTER(c.c_int)],
        "cuDeviceGet": [c.POINTER(c.c_int), c.c_int],
        "cuDeviceGetName": [c.c_char_p, c.c_int, c.c_int],
        "cuDeviceTotalMem_v2": [c.POINTER(c.c_size_t), c.c_int],
        "cuDevicePrimaryCtxRetain": [c.POINTER(c.c_void_p), c.c_int],
        "cuDevicePrimaryCtxRelease_v2": [c.c_int],
        "cuCtxPushCurrent_v2": [c.c_void_p],
        "cuCtxPopCurrent_v2": [c.POINTER(c.c_void_p)],
        "cuCtxSynchronize": [],
        "cuModuleLoadData": [c.POINTER(c.c_void_p), c.c_char_p],
        "cuModuleUnload": [c.c_void_p],
        "cuModuleGetFunction": [c.POINTER(c.c_void_p), c.c_void_p, c.c_char_p],
        "cuMemAlloc_v2": [c.POINTER(c.c_uint64), c.c_size_t],
        "cuMemFree_v2": [c.c_uint64],
        "cuMemcpyHtoD_v2": [c.c_uint64, c.c_void_p, c.c_size_t],
        "cuMemcpyDtoH_v2": [c.c_void_p, c.c_uint64, c.c_size_t],
        "cuLaunchKernel": [c.c_void_p, *[c.c_uint] * 7, c.c_void_p, c.POINTER(c.c_void_p), c.POINTER(c.c_void_p)],
    }


def bind(cuda: Any) -> Any:
    """Declare the driver functions' C signatures; SmokeFailure when the driver lacks one (too old)."""
    for name, argtypes in signatures().items():
        try:
            function = getattr(cuda, name)
        except AttributeError:
            raise SmokeFailure(CUDA_ERROR, f"the NVIDIA driver has no {name}: it is older than CUDA 11") from None
        function.argtypes, function.restype = argtypes, ctypes.c_int
    return cuda


def _call(status: int, what: str) -> None:
    if status == CUDA_ERROR_OUT_OF_MEMORY:
        raise SmokeFailure(OUT_OF_MEMORY, f"{what}: out of GPU memory (CUDA error 2)")
    if status == CUDA_ERROR_NO_DEVICE:
        raise SmokeFailure(NO_GPU, f"{what}: no CUDA-capable GPU is visible (CUDA error 100)")
    if status != 0:
        raise SmokeFailure(CUDA_ERROR, f"{what} failed with CUDA error {status}")


def load_libcuda() -> Any:
    """The NVIDIA driver library, found where the dynamic loader looks; SmokeFailure when there is none."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise SmokeFailure(NO_DRIVER, "no NVIDIA driver: libcuda cannot be loaded (is this a GPU host or a GPU container?)")


def open_nvidia_driver(cuda: Any = None) -> tuple[str, list[Gpu]]:
    """The driver's CUDA version and every visible GPU; SmokeFailure when there is no driver. `cuda` is the
    driver library (libcuda by default; a test's stand-in otherwise)."""
    cuda = bind(load_libcuda() if cuda is None else cuda)
    _call(cuda.cuInit(0), "cuInit")
    version, count = ctypes.c_int(), ctypes.c_int()
    _call(cuda.cuDriverGetVersion(ctypes.byref(version)), "cuDriverGetVersion")
    _call(cuda.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    cuda_version = f"{version.value // 1000}.{version.value % 1000 // 10}"
    return cuda_version, [CudaGpu(cuda, index) for index in range(count.value)]


def main() -> int:
    report, code = smoke(open_nvidia_driver)
    print(json.dumps(report, indent=2))
    if code != PASS:
        print(f"cuda_smoke: {report['message']}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
