/* A stand-in libcuda.so.1 for the CUDA smoke test's tests: the driver API's context model, and no GPU.
 *
 * STUB_CUDA_GPUS GPUs (2 unless set), each with a primary context that is reference counted (the last
 * release resets it: its memory and modules are gone), and a per-thread stack of current contexts. As in
 * the CUDA driver, allocations, module loads and launches bind to the thread's current context; a call that
 * needs one without one fails with CUDA_ERROR_INVALID_CONTEXT. Kernels (the payload's vector_add and matmul)
 * are computed on the CPU over the grid the launch asked for, and only from memory of the launching
 * context's GPU: another GPU's pointer is an illegal address, reported by the next cuCtxSynchronize.
 *
 * STUB_CUDA_LOG names a file that gets one line per allocation, module load and launch, "<device of the
 * current context> <function> <detail>", and at exit what is left: "exit <contexts held> <contexts
 * current> <allocations> <modules>" (a context is held while retained, or from cuCtxCreate on).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    INVALID_DEVICE = 101,
    INVALID_CONTEXT = 201,
    INVALID_PTX = 218,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    ILLEGAL_ADDRESS = 700,
};
enum { MAX_GPUS = 8, MAX_CONTEXTS = 32, MAX_STACK = 16, MAX_ALLOCATIONS = 64, MAX_MODULES = 16 };
enum { VECTOR_ADD, MATMUL, KERNELS };
static const char *const KERNEL_NAMES[KERNELS] = {"vector_add", "matmul"};

struct context {
    int device;
    int live;
};
struct allocation {
    unsigned char *base;
    size_t size;
    int device;
};
struct module {
    int device;
    int live;
    struct function {
        struct module *module;
        int kernel;
    } functions[KERNELS];
};

static int gpus = -1;
static struct context contexts[MAX_CONTEXTS]; /* contexts[d] is GPU d's primary context */
static int references[MAX_GPUS];
static int pending[MAX_GPUS]; /* a launch's error, for the next cuCtxSynchronize */
static size_t used[MAX_GPUS];
static struct allocation allocations[MAX_ALLOCATIONS];
static struct module modules[MAX_MODULES];
static __thread struct context *stack[MAX_STACK];
static __thread int depth;
static FILE *log_file;

static void setup(void) {
    if (gpus >= 0)
        return;
    const char *count = getenv("STUB_CUDA_GPUS");
    gpus = count ? atoi(count) : 2;
    if (gpus < 0 || gpus > MAX_GPUS)
        gpus = 0;
    for (int d = 0; d < MAX_GPUS; d++)
        contexts[d].device = d;
    const char *path = getenv("STUB_CUDA_LOG");
    if (path)
        log_file = fopen(path, "w");
}

static void record(int device, const char *function, const char *detail) {
    if (log_file) {
        fprintf(log_file, "%d %s %s\n", device, function, detail);
        fflush(log_file);
    }
}

static size_t total_memory(int device) { return ((size_t)16 + 8 * (size_t)device) << 30; }

static struct context *current(void) { return depth ? stack[depth - 1] : NULL; }

static int is_live(const struct context *context) {
    return context >= contexts && context < contexts + MAX_CONTEXTS && context->live;
}

static struct allocation *find(CUdeviceptr pointer) {
    for (int i = 0; i < MAX_ALLOCATIONS; i++)
        if (allocations[i].base && (CUdeviceptr)(size_t)allocations[i].base == pointer)
            return &allocations[i];
    return NULL;
}

static void release(struct allocation *allocation) {
    used[allocation->device] -= allocation->size;
    free(allocation->base);
    allocation->base = NULL;
}

static void reset(int device) {
    for (int i = 0; i < MAX_ALLOCATIONS; i++)
        if (allocations[i].base && allocations[i].device == device)
            release(&allocations[i]);
    for (int i = 0; i < MAX_MODULES; i++)
        if (modules[i].device == device)
            modules[i].live = 0;
    contexts[device].live = 0;
    pending[device] = SUCCESS;
}

CUresult cuInit(unsigned int flags) {
    setup();
    return flags == 0 ? SUCCESS : INVALID_VALUE;
}

CUresult cuDriverGetVersion(int *version) {
    *version = 12040;
    return SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    *count = gpus;
    return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (ordinal < 0 || ordinal >= gpus)
        return INVALID_DEVICE;
    *device = ordinal;
    return SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
    if (device < 0 || device >= gpus)
        return INVALID_DEVICE;
    snprintf(name, (size_t)length, "Stub GPU %d", device);
    return SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
    if (device < 0 || device >= gpus)
        return INVALID_DEVICE;
    *bytes = total_memory(device);
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(struct context **context, CUdevice device) {
    if (device < 0 || device >= gpus)
        return INVALID_DEVICE;
    references[device]++;
    contexts[device].live = 1;
    *context = &contexts[device]; /* not made current */
    return SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    if (device < 0 || device >= gpus)
        return INVALID_DEVICE;
    if (references[device] == 0)
        return INVALID_CONTEXT;
    if (--references[device] == 0)
        reset(device); /* not popped from any stack */
    return SUCCESS;
}

/* A context of its own, made current (pushed), as cuCtxCreate does */
CUresult cuCtxCreate_v2(struct context **context, unsigned int flags, CUdevice device) {
    (void)flags;
    if (device < 0 || device >= gpus)
        return INVALID_DEVICE;
    for (int i = MAX_GPUS; i < MAX_CONTEXTS; i++)
        if (!contexts[i].live && depth < MAX_STACK) {
            contexts[i] = (struct context){device, 1};
            stack[depth++] = &contexts[i];
            *context = &contexts[i];
            return SUCCESS;
        }
    return OUT_OF_MEMORY;
}

/* Replaces the top of the thread's stack (NULL pops it) */
CUresult cuCtxSetCurrent(struct context *context) {
    if (!context) {
        if (depth)
            depth--;
        return SUCCESS;
    }
    if (!is_live(context))
        return INVALID_CONTEXT;
    if (depth)
        stack[depth - 1] = context;
    else
        stack[depth++] = context;
    return SUCCESS;
}

CUresult cuCtxPushCurrent_v2(struct context *context) {
    if (!is_live(context))
        return INVALID_CONTEXT;
    if (depth == MAX_STACK)
        return INVALID_VALUE;
    stack[depth++] = context;
    return SUCCESS;
}

CUresult cuCtxPopCurrent_v2(struct context **context) {
    if (!depth)
        return INVALID_CONTEXT;
    depth--;
    if (context)
        *context = stack[depth];
    return SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    struct context *context = current();
    if (!is_live(context))
        return INVALID_CONTEXT;
    CUresult status = pending[context->device];
    pending[context->device] = SUCCESS;
    return status;
}

CUresult cuModuleLoadData(struct module **module, const void *image) {
    struct context *context = current();
    if (!is_live(context))
        return INVALID_CONTEXT;
    for (int k = 0; k < KERNELS; k++) {
        char entry[64];
        snprintf(entry, sizeof entry, ".entry %s(", KERNEL_NAMES[k]);
        if (!strstr((const char *)image, entry))
            return INVALID_PTX;
    }
    for (int i = 0; i < MAX_MODULES; i++)
        if (!modules[i].live) {
            modules[i].device = context->device;
            modules[i].live = 1;
            for (int k = 0; k < KERNELS; k++)
                modules[i].functions[k] = (struct function){&modules[i], k};
            *module = &modules[i];
            record(context->device, "cuModuleLoadData", "PTX");
            return SUCCESS;
        }
    return OUT_OF_MEMORY;
}

CUresult cuModuleUnload(struct module *module) {
    struct context *context = current();
    if (!is_live(context))
        return INVALID_CONTEXT;
    if (module < modules || module >= modules + MAX_MODULES || !module->live)
        return INVALID_HANDLE;
    module->live = 0;
    return SUCCESS;
}

/* The module must be one of the current context's */
CUresult cuModuleGetFunction(struct function **function, struct module *module, const char *name) {
    struct context *context = current();
    if (!is_live(context))
        return INVALID_CONTEXT;
    if (module < modules || module >= modules + MAX_MODULES || !module->live || module->device != context->device)
        return INVALID_HANDLE;
    for (int k = 0; k < KERNELS; k++)
        if (strcmp(name, KERNEL_NAMES[k]) == 0) {
            *function = &module->functions[k];
            return SUCCESS;
        }
    return NOT_FOUND;
}

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t size) {
    struct context *context = current();
    if (!is_live(context))
        return INVALID_CONTEXT;
    int device = context->device;
    if (size == 0)
        return INVALID_VALUE;
    if (size > total_memory(device) - used[device])
        return OUT_OF_MEMORY;
    for (int i = 0; i < MAX_ALLOCATIONS; i++)
        if (!allocations[i].base) {
            /* calloc: pages never written are never backed, so a large allocation costs nothing here */
            unsigned char *base = calloc(1, size);
            if (!base)
                return OUT_OF_MEMORY;
            allocations[i] = (struct allocation){base, size, device};
            used[device] += size;
            *pointer = (CUdeviceptr)(size_t)base;
            char detail[32];
            snprintf(detail, sizeof detail, "%zu", size);
            record(device, "cuMemAlloc_v2", detail);
            return SUCCESS;
        }
    return OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
    if (!is_live(current()))
        return INVALID_CONTEXT;
    struct allocation *allocation = find(pointer);
    if (!allocation)
        return INVALID_VALUE;
    release(allocation);
    return SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr target, const void *source, size_t size) {
    if (!is_live(current()))
        return INVALID_CONTEXT;
    struct allocation *allocation = find(target);
    if (!allocation || size > allocation->size)
        return INVALID_VALUE;
    memcpy(allocation->base, source, size);
    return SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *target, CUdeviceptr source, size_t size) {
    if (!is_live(current()))
        return INVALID_CONTEXT;
    struct allocation *allocation = find(source);
    if (!allocation || size > allocation->size)
        return INVALID_VALUE;
    memcpy(target, allocation->base, size);
    return SUCCESS;
}

/* Memory a kernel on `device` may read or write: one of that GPU's allocations, large enough */
static float *on_device(CUdeviceptr pointer, int device, size_t bytes) {
    struct allocation *allocation = find(pointer);
    if (!allocation || allocation->device != device || allocation->size < bytes)
        return NULL;
    return (float *)allocation->base;
}

CUresult cuLaunchKernel(struct function *function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                        unsigned int block_x, unsigned int block_y, unsigned int block_z, unsigned int shared_bytes,
                        void *stream, void **params, void **extra) {
    (void)grid_z, (void)block_z, (void)shared_bytes, (void)stream;
    struct context *context = current();
    if (!is_live(context))
        return INVALID_CONTEXT;
    if (!function || !function->module || !function->module->live)
        return INVALID_HANDLE;
    if (function->module->device != context->device)
        return INVALID_CONTEXT;
    if (!params || extra)
        return INVALID_VALUE;
    int device = context->device;
    unsigned int n = *(unsigned int *)params[3];
    size_t count = function->kernel == VECTOR_ADD ? n : (size_t)n * n;
    float *a = on_device(*(CUdeviceptr *)params[0], device, count * sizeof(float));
    float *b = on_device(*(CUdeviceptr *)params[1], device, count * sizeof(float));
    float *c = on_device(*(CUdeviceptr *)params[2], device, count * sizeof(float));
    if (!a || !b || !c) {
        pending[device] = ILLEGAL_ADDRESS;
        return SUCCESS;
    }
    /* Only the elements the grid covers, as the GPU would */
    size_t columns = (size_t)grid_x * block_x, rows = (size_t)grid_y * block_y;
    if (function->kernel == VECTOR_ADD) {
        for (size_t i = 0; i < count && i < columns; i++)
            c[i] = a[i] + b[i];
    } else {
        for (size_t row = 0; row < n && row < rows; row++)
            for (size_t col = 0; col < n && col < columns; col++) {
                float sum = 0.0f;
                for (size_t k = 0; k < n; k++)
                    sum += a[row * n + k] * b[k * n + col];
                c[row * n + col] = sum;
            }
    }
    record(device, "cuLaunchKernel", KERNEL_NAMES[function->kernel]);
    return SUCCESS;
}

__attribute__((destructor)) static void report_what_is_left(void) {
    if (!log_file)
        return;
    int held = 0, left = 0, loaded = 0;
    for (int d = 0; d < MAX_GPUS; d++)
        held += references[d];
    for (int i = MAX_GPUS; i < MAX_CONTEXTS; i++)
        held += contexts[i].live;
    for (int i = 0; i < MAX_ALLOCATIONS; i++)
        left += allocations[i].base != NULL;
    for (int i = 0; i < MAX_MODULES; i++)
        loaded += modules[i].live;
    fprintf(log_file, "exit %d %d %d %d\n", held, depth, left, loaded);
    fclose(log_file);
}
