/* stub_app.c — an uninstrumented "CUDA program" for the capture tests, run on
 * the stand-in libcuda/libcupti (CG_CUDA_LIBRARY, CG_CUPTI_LIBRARY): cuInit
 * (which injects the collector), NVTX ranges "train_step" > "forward" /
 * "backward", two kernels, a memcpy and a memset, then exit with the status
 * given as argv[1] (default 0). argv[2] = "crash" aborts instead (no atexit);
 * argv[2] = "drop" makes the stand-in CUPTI report 5 dropped records. */
#include <cupti_activity.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_stub.h"

static void *must(void *h, const char *name) {
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "stub_app: missing %s\n", name);
        exit(3);
    }
    return p;
}

int main(int argc, char **argv) {
    const char *cuda = getenv("CG_CUDA_LIBRARY"), *cupti = getenv("CG_CUPTI_LIBRARY");
    if (!cuda || !cupti) {
        fprintf(stderr, "stub_app: CG_CUDA_LIBRARY and CG_CUPTI_LIBRARY must be set\n");
        return 3;
    }
    void *hd = dlopen(cuda, RTLD_NOW), *hc = dlopen(cupti, RTLD_NOW);
    if (!hd || !hc) {
        fprintf(stderr, "stub_app: %s\n", dlerror());
        return 3;
    }
    int (*cu_init)(unsigned) = NULL;
    cupti_stub_launch_fn launch;
    cupti_stub_nvtx_push_fn push;
    cupti_stub_nvtx_pop_fn pop;
    cupti_stub_drop_fn drop;
    *(void **)(&cu_init) = must(hd, "cuInit");
    *(void **)(&launch) = must(hc, "cupti_stub_launch");
    *(void **)(&push) = must(hc, "cupti_stub_nvtx_push");
    *(void **)(&pop) = must(hc, "cupti_stub_nvtx_pop");
    *(void **)(&drop) = must(hc, "cupti_stub_drop");
    cu_init(0);
    launch(CUPTI_ACTIVITY_KIND_MEMCPY, 0, 7, 1000, 1500, NULL); /* before any range */
    push("train_step");
    push("forward");
    launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 2000, 2600, "_Z6matmulPfS_S_i");
    pop();
    push("backward");
    launch(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0, 7, 3000, 3900, "_Z8backwardPf");
    launch(CUPTI_ACTIVITY_KIND_MEMSET, 0, 8, 4000, 4100, NULL);
    pop();
    pop();
    if (argc > 2 && strcmp(argv[2], "crash") == 0) abort();
    if (argc > 2 && strcmp(argv[2], "drop") == 0) drop(5);
    return argc > 1 ? (int)strtol(argv[1], NULL, 10) : 0;
}
