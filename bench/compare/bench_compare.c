/* bench_compare — cost of a 20 vs 20 comparison/6, from published bundles and
 * from the cohort sample table (stored rows).
 *
 * Setup (not timed): writes 40 trace/10 files (a measured step with OPS op
 * events and LABELS tensor_stats labels), publishes each with
 * cg_publish_bundle, builds each bundle's cohort row and keeps its JSON text
 * (what the server stores). Timed: ITER comparisons through
 * cg_compare_verified_bundles (verify + parse + health per bundle) and ITER
 * through cg_compare_rows on rows parsed from the stored texts. Both outputs
 * must be byte-identical (exit 1 otherwise).
 *
 * usage: bench_compare [--iterations N] [--ops N] [--labels N] [--dir DIR]
 * Prints one JSON object: per-comparison milliseconds for both paths and the
 * ratio bundles/rows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"
#include "bundle/publish.h"
#include "comparison/compare.h"

#define RUNS 20

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void trace_text(cg_buf *b, const char *run_id, const char *impl, uint64_t dur, unsigned ops, unsigned labels,
                       unsigned seed) {
    cg_buf_printf(b,
                  "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"%s\",\"correlation_id\":"
                  "\"bench/update-3\",\"entrypoint\":\"bench\",\"phase\":\"train\",\"timestamp\":"
                  "\"2026-11-30T00:00:00.000Z\",\"capture_step\":3,\"warmup_steps\":2,\"device\":\"cpu\","
                  "\"timing_mode\":\"host\",\"capture_contract\":{\"measurement_scope\":\"production_equivalent\","
                  "\"operations\":\"complete\",\"logical_memory\":\"none\",\"physical_memory\":\"none\","
                  "\"device_timing\":\"none\"},\"comparison_identity\":{\"implementation_id\":\"%s\","
                  "\"workload_id\":\"w\",\"model_id\":\"m\",\"config_id\":\"c\",\"data_id\":\"d\",\"seed_policy\":"
                  "\"fixed\",\"physical_batch\":16,\"accumulation_steps\":1,\"precision\":\"f32\",\"device_state\":"
                  "\"idle\"},\"tags\":{}}\n",
                  run_id, impl);
    cg_buf_puts(b, "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"bench\",\"start_ns\":0,\"span_kind\":\"function\"}\n");
    cg_buf_puts(b, "{\"kind\":\"span_start\",\"id\":\"s2\",\"parent_id\":\"s1\",\"name\":\"step\",\"start_ns\":10,"
                   "\"span_kind\":\"function\",\"measured\":true}\n");
    for (unsigned i = 0; i < ops; i++)
        cg_buf_printf(b,
                      "{\"kind\":\"op\",\"span_id\":\"s2\",\"op_name\":\"matmul\",\"inputs\":[],\"shape\":[16,64],"
                      "\"dtype\":\"f32\",\"device\":\"cpu\",\"duration_ns\":%u,\"timestamp_ns\":%u,"
                      "\"input_dense_bytes\":8192}\n",
                      1 + i % 7, 11 + i);
    for (unsigned i = 0; i < labels; i++)
        cg_buf_printf(b,
                      "{\"kind\":\"tensor_stats\",\"span_id\":\"s2\",\"label\":\"layer.%u.weight\",\"shape\":[64],"
                      "\"dtype\":\"f32\",\"elements\":64,\"non_finite\":0,\"rms\":%u.%u,\"abs_max\":%u.5,"
                      "\"mean\":0.0}\n",
                      i, 1 + (seed + i) % 5, (seed * 7 + i) % 10, 2 + i % 3);
    cg_buf_printf(b, "{\"kind\":\"span_end\",\"id\":\"s2\",\"duration_ns\":%llu}\n", (unsigned long long)dur);
    cg_buf_printf(b, "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":%llu}\n", (unsigned long long)dur + 100);
    cg_buf_printf(b, "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":%llu}\n",
                  (unsigned long long)dur + 200 + ops + 20);
}

static int parse_uint(const char *s, unsigned *out) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || !*s || *end || v == 0 || v > 1000000) return -1;
    *out = (unsigned)v;
    return 0;
}

int main(int argc, char **argv) {
    unsigned iterations = 20, ops = 2000, labels = 200;
    const char *keep = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--iterations") && v && !parse_uint(v, &iterations)) i++;
        else if (!strcmp(argv[i], "--ops") && v && !parse_uint(v, &ops)) i++;
        else if (!strcmp(argv[i], "--labels") && v && !parse_uint(v, &labels)) i++;
        else if (!strcmp(argv[i], "--dir") && v) keep = argv[++i];
        else {
            fprintf(stderr, "usage: bench_compare [--iterations N] [--ops N] [--labels N] [--dir DIR]\n");
            return 2;
        }
    }
    char tmp[256];
    const char *root = keep;
    if (!root) {
        snprintf(tmp, sizeof tmp, "/tmp/cg-bench-compare-XXXXXX");
        if (!mkdtemp(tmp)) return perror("mkdtemp"), 1;
        root = tmp;
    }
    cg_error err;
    cg_err_clear(&err);
    if (cg_mkdir_p(root, &err) != 0) return fprintf(stderr, "%s\n", err.msg), 1;
    cg_arena setup;
    cg_arena_init(&setup, 0);
    const char *base[RUNS], *cand[RUNS];
    for (unsigned k = 0; k < 2 * RUNS; k++) {
        bool is_base = k < RUNS;
        unsigned i = is_base ? k : k - RUNS;
        char *run_id = cg_arena_printf(&setup, "%s-%u", is_base ? "base" : "cand", i);
        char *trace = cg_arena_printf(&setup, "%s/%s.jsonl", root, run_id);
        char *bundle = cg_arena_printf(&setup, "%s/%s", root, run_id);
        cg_buf b = CG_BUF_INIT;
        trace_text(&b, run_id, is_base ? "impl-a" : "impl-b", (is_base ? 100000 : 95000) + (i * 37) % 900, ops, labels,
                   k);
        if (cg_write_file(trace, b.data, b.len, false, &err) != 0 || cg_publish_bundle(bundle, trace, NULL, NULL, &err) != 0)
            return fprintf(stderr, "setup: %s\n", err.msg), 1;
        cg_buf_free(&b);
        (is_base ? base : cand)[i] = bundle;
    }
    /* the cohort sample table (stored row texts) */
    char *texts[2 * RUNS];
    size_t lens[2 * RUNS], table_bytes = 0;
    double t0 = now_ms();
    for (unsigned k = 0; k < 2 * RUNS; k++) {
        cg_cohort_row row;
        if (cg_cohort_row_from_bundle(&setup, k < RUNS ? base[k] : cand[k - RUNS], k < RUNS ? "baseline" : "candidate",
                                      (k % RUNS) + 1, &row, &err) != 0)
            return fprintf(stderr, "row: %s\n", err.msg), 1;
        cg_buf b = CG_BUF_INIT;
        cg_cohort_row_write(&b, &row);
        lens[k] = b.len;
        table_bytes += b.len;
        texts[k] = cg_buf_take(&b, NULL);
    }
    double table_ms = now_ms() - t0;

    cg_buf from_bundles = CG_BUF_INIT, from_rows = CG_BUF_INIT;
    t0 = now_ms();
    for (unsigned it = 0; it < iterations; it++) {
        cg_arena a;
        cg_arena_init(&a, 1 << 20);
        cg_jv *v = cg_compare_verified_bundles(&a, base, RUNS, cand, RUNS, &err);
        if (!v) return fprintf(stderr, "compare: %s\n", err.msg), 1;
        if (it == 0) cg_json_write(&from_bundles, v, true);
        cg_arena_free(&a);
    }
    double bundles_ms = (now_ms() - t0) / iterations;
    t0 = now_ms();
    for (unsigned it = 0; it < iterations; it++) {
        cg_arena a;
        cg_arena_init(&a, 1 << 20);
        cg_cohort_row rows[2 * RUNS];
        for (unsigned k = 0; k < 2 * RUNS; k++)
            if (cg_cohort_row_parse(&a, texts[k], lens[k], &rows[k], &err) != 0)
                return fprintf(stderr, "row parse: %s\n", err.msg), 1;
        cg_jv *v = cg_compare_rows(&a, rows, RUNS, rows + RUNS, RUNS, CG_CMP_VERIFIED_BUNDLES);
        if (it == 0) cg_json_write(&from_rows, v, true);
        cg_arena_free(&a);
    }
    double rows_ms = (now_ms() - t0) / iterations;
    int identical = from_bundles.len == from_rows.len && !memcmp(from_bundles.data, from_rows.data, from_rows.len);
    printf("{\"benchmark\": \"compare_20_vs_20\", \"iterations\": %u, \"ops_per_trace\": %u, \"labels_per_trace\": %u, "
           "\"table_build_ms\": %.3f, \"table_bytes\": %zu, \"from_bundles_ms\": %.3f, \"from_rows_ms\": %.3f, "
           "\"ratio_bundles_over_rows\": %.1f, \"identical_json\": %s}\n",
           iterations, ops, labels, table_ms, table_bytes, bundles_ms, rows_ms, rows_ms > 0 ? bundles_ms / rows_ms : 0.0,
           identical ? "true" : "false");
    for (unsigned k = 0; k < 2 * RUNS; k++) free(texts[k]);
    cg_buf_free(&from_bundles);
    cg_buf_free(&from_rows);
    cg_arena_free(&setup);
    if (!keep) cg_rm_rf(root);
    return identical ? 0 : 1;
}
