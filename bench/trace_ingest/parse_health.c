/* parse_health — the trace ingest core on its own: cg_trace_read_file (JSONL →
 * document model) + cg_health_analyze (spec §5), nothing else. Prints one line
 * "records=N (model records, metadata excluded) issues=N valid=B complete=B parse_s=S health_s=S" on stdout.
 * Exit status: 0 when parsed, 1 on a read/parse error (message on stderr),
 * 2 on usage errors.
 *
 * usage: bench_parse_health [--general] TRACE.jsonl
 *   --general  read through the reader's general path only (cg_trace_limits.general_only),
 *              to compare it with the default single-pass fast path */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "trace/health.h"
#include "trace/trace.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    bool general = argc == 3 && !strcmp(argv[1], "--general");
    if (argc != 2 && !general) {
        fprintf(stderr, "usage: bench_parse_health [--general] TRACE.jsonl\n");
        return 2;
    }
    cg_trace_limits lim;
    cg_trace_limits_default(&lim);
    lim.general_only = general;
    cg_error err;
    cg_err_clear(&err);
    double t0 = now_s();
    cg_trace *t = cg_trace_read_file(argv[argc - 1], &lim, &err);
    if (!t) {
        fprintf(stderr, "bench_parse_health: %s\n", err.msg);
        return 1;
    }
    double t1 = now_s();
    cg_health *h = cg_health_analyze(t);
    double t2 = now_s();
    size_t records = t->n_spans + t->n_ops + t->n_tensors + t->n_tensor_stats + t->n_memory + t->n_device_memory +
                     t->n_device_intervals + t->n_gradients + t->n_edges;
    printf("records=%zu issues=%zu valid=%d complete=%d parse_s=%.3f health_s=%.3f\n", records, h->n_issues,
           (int)h->structurally_valid, (int)h->capture_complete, t1 - t0, t2 - t1);
    cg_health_free(h);
    cg_trace_free(t);
    return 0;
}
