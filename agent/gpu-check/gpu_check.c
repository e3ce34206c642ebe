/* gpu_check.c — host side of the GPU check (agent/gpu-check/run.sh).
 *
 *   gpu_check spans          capture-API instrumented run: measured span
 *                            "step" with children "forward" (4 × gc_scale) and
 *                            "backward" (gc_reduce, a memset, a D2H memcpy);
 *                            writes $CG_CAPTURE_TRACE.
 *   gpu_check nvtx           the same work, uninstrumented: NVTX ranges
 *                            "step" > "forward" / "backward" only.
 *   gpu_check loop N         N empty-kernel launches, each followed by a
 *                            synchronize, inside a span when $CG_CAPTURE_TRACE
 *                            is set; prints the loop's wall time in ns.
 * Links against libcandlegraph-cupti.so for the capture API, so the sessions
 * it opens are the ones the injected collector feeds. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/capture.h"

int gc_launch_scale(float *x, float a, int n);
int gc_launch_reduce(const float *x, float *out, int n);
int gc_launch_empty(void);

#define N (1 << 20)
#define CK(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "gpu_check: %s: %s\n", #call, cudaGetErrorString(e_));      \
            exit(2);                                                                    \
        }                                                                               \
    } while (0)

static cg_session *open_session(void) {
    const char *path = getenv("CG_CAPTURE_TRACE");
    if (!path) return NULL;
    const char *entry = getenv("CG_CAPTURE_ENTRYPOINT");
    const char *step = getenv("CG_CAPTURE_STEP");
    cg_profile_run *run = cg_profile_run_training(entry ? entry : "gpu_check",
                                                  step ? strtoull(step, NULL, 10) : 1, "cuda:0");
    cg_error err;
    cg_session *s = cg_session_open(path, run, &err);
    cg_profile_run_free(run);
    if (!s) {
        fprintf(stderr, "gpu_check: %s\n", err.msg);
        exit(2);
    }
    return s;
}

static void check(int rc, const cg_error *err) {
    if (rc != 0) {
        fprintf(stderr, "gpu_check: %s\n", err->msg);
        exit(2);
    }
}

static void work_forward(float *x) {
    for (int i = 0; i < 4; i++) CK((cudaError_t)gc_launch_scale(x, 0.5f, N));
    CK(cudaDeviceSynchronize());
}

static void work_backward(float *x, float *sum, float *host) {
    CK(cudaMemset(sum, 0, sizeof(float)));
    CK((cudaError_t)gc_launch_reduce(x, sum, N));
    CK(cudaMemcpy(host, sum, sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaDeviceSynchronize());
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "spans";
    float *x = NULL, *sum = NULL, host = 0;
    CK(cudaMalloc((void **)&x, N * sizeof(float)));
    CK(cudaMalloc((void **)&sum, sizeof(float)));
    CK(cudaMemset(x, 0, N * sizeof(float)));
    CK(cudaDeviceSynchronize());
    cg_error err;
    if (strcmp(mode, "spans") == 0) {
        cg_session *s = open_session();
        if (!s) {
            fprintf(stderr, "gpu_check spans: CG_CAPTURE_TRACE is not set (run under capture)\n");
            return 2;
        }
        cg_span_id step, fwd, bwd;
        check(cg_session_begin_measurement(s, "step", &step, &err), &err);
        check(cg_session_begin_step_span(s, "forward", CG_STEP_FORWARD, CG_SPAN_FUNCTION, &fwd, &err), &err);
        work_forward(x);
        check(cg_session_end_span(s, fwd, &err), &err);
        check(cg_session_begin_step_span(s, "backward", CG_STEP_BACKWARD, CG_SPAN_FUNCTION, &bwd, &err), &err);
        work_backward(x, sum, &host);
        check(cg_session_end_span(s, bwd, &err), &err);
        check(cg_session_end_span(s, step, &err), &err);
        check(cg_session_finish(s, &err), &err);
        cg_session_free(s);
    } else if (strcmp(mode, "nvtx") == 0) {
        nvtxRangePushA("step");
        nvtxRangePushA("forward");
        work_forward(x);
        nvtxRangePop();
        nvtxRangePushA("backward");
        work_backward(x, sum, &host);
        nvtxRangePop();
        nvtxRangePop();
    } else if (strcmp(mode, "loop") == 0 && argc > 2) {
        long n = strtol(argv[2], NULL, 10);
        cg_session *s = open_session();
        cg_span_id step = 0;
        if (s) check(cg_session_begin_measurement(s, "loop", &step, &err), &err);
        uint64_t t0 = mono_ns();
        for (long i = 0; i < n; i++) {
            CK((cudaError_t)gc_launch_empty());
            CK(cudaDeviceSynchronize());
        }
        uint64_t t1 = mono_ns();
        if (s) {
            check(cg_session_end_span(s, step, &err), &err);
            check(cg_session_finish(s, &err), &err);
            cg_session_free(s);
        }
        printf("%llu\n", (unsigned long long)(t1 - t0));
    } else {
        fprintf(stderr, "usage: gpu_check spans | nvtx | loop N\n");
        return 2;
    }
    cudaFree(x);
    cudaFree(sum);
    return 0;
}
