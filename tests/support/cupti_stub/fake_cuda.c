/* fake_cuda.c — stand-in libcuda.so for the collector tests (see
 * cupti_stub.h). cuInit loads CUDA_INJECTION64_PATH and calls its
 * InitializeInjection once, as the CUDA driver does; cuMemGetInfo_v2 and
 * cuCtxGetDevice report a 16 GiB device 0 whose used memory grows by 1 MiB
 * per query (so start and end samples differ). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int injected;
static size_t used = (size_t)512 << 20;

CUresult cuInit(unsigned int flags) {
    (void)flags;
    if (injected) return CUDA_SUCCESS;
    injected = 1;
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (!path || !*path) return CUDA_SUCCESS;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "fake libcuda: cannot load %s: %s\n", path, dlerror());
        return CUDA_SUCCESS;
    }
    int (*init)(void) = NULL;
    *(void **)(&init) = dlsym(h, "InitializeInjection");
    if (init) init();
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    if (!injected) return CUDA_ERROR_NOT_INITIALIZED;
    size_t total = (size_t)16 << 30;
    *total_bytes = total;
    *free_bytes = total - used;
    used += (size_t)1 << 20;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
    *device = 0;
    return CUDA_SUCCESS;
}
