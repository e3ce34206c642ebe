/* Robustness: deterministic pseudo-random mutations (truncation, byte flips,
 * inserted CSV metacharacters and digits, deletions, duplications) of the
 * fixture inputs — CSV reports and the capture manifest — are loaded a few
 * thousand times. Every load must finish (no crash; ASan/UBSan clean in the
 * sanitizer build) and produce a well-formed result: JSON that writes and
 * parses back, a known status, display caps respected, and the same
 * counts/coverage as the in-memory evidence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "nsight/nsight.h"
#include "test_tmpdir.h"

#define ITERATIONS 3000

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

typedef struct file {
    char *name;
    char *data;
    size_t len;
} file;

static void load_case(const char *fixture, file *files, size_t *n) {
    const char *fx = getenv("CG_FIXTURES");
    char *root = cg_path_join(fx ? fx : "fixtures", "nsight");
    char *c = cg_path_join(root, fixture);
    char *in = cg_path_join(c, "input");
    static const char *const names[] = {
        "report_cuda_gpu_kern_sum.csv", "report_cuda_api_sum.csv", "report_cuda_gpu_mem_time_sum.csv",
        "report_nvtx_gpu_proj_trace.csv", "report_cuda_gpu_trace.csv", "report.nsys-rep",
        "capture-manifest.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *p = cg_path_join(in, names[i]);
        cg_error err;
        size_t len;
        char *d = cg_read_file(p, 0, &len, &err);
        if (!d) fail_msg("%s: %s", p, err.msg);
        files[*n].name = strdup(names[i]);
        files[*n].data = d;
        files[*n].len = len;
        (*n)++;
        free(p);
    }
    free(in);
    free(c);
    free(root);
}

static void mutate(const file *src, cg_buf *out) {
    cg_buf_reset(out);
    cg_buf_append(out, src->data, src->len);
    int rounds = 1 + (int)rnd_below(4);
    static const char meta[] = ",\"\n\r-.e9+0 \xff\xc3";
    for (int r = 0; r < rounds; r++) {
        size_t len = out->len;
        size_t pos = rnd_below(len + 1);
        switch (rnd_below(7)) {
        case 0: /* truncate */
            out->len = pos;
            out->data[pos] = '\0';
            break;
        case 1: /* flip a byte */
            if (len) out->data[rnd_below(len)] ^= (char)(1u << rnd_below(8));
            break;
        case 2: { /* insert a CSV metacharacter */
            char c = meta[rnd_below(sizeof meta - 1)];
            cg_buf tmp = CG_BUF_INIT;
            cg_buf_append(&tmp, out->data, pos);
            cg_buf_putc(&tmp, c);
            cg_buf_append(&tmp, out->data + pos, len - pos);
            cg_buf_reset(out);
            cg_buf_append(out, tmp.data, tmp.len);
            cg_buf_free(&tmp);
            break;
        }
        case 3: { /* delete a range */
            size_t n = rnd_below(len - pos + 1);
            memmove(out->data + pos, out->data + pos + n, len - pos - n);
            out->len = len - n;
            out->data[out->len] = '\0';
            break;
        }
        case 4: { /* duplicate a range (grows rows / fields) */
            size_t n = rnd_below(len - pos + 1);
            cg_buf tmp = CG_BUF_INIT;
            cg_buf_append(&tmp, out->data, pos + n);
            cg_buf_append(&tmp, out->data + pos, len - pos);
            cg_buf_reset(out);
            cg_buf_append(out, tmp.data, tmp.len);
            cg_buf_free(&tmp);
            break;
        }
        case 5: /* replace with a huge / negative / odd number */
            if (len) {
                static const char *const nums[] = {"18446744073709551616", "-1", "1e999", "nan",
                                                   "1,2,3", "0", "\"\"", "9999999999999999999"};
                const char *s = nums[rnd_below(sizeof nums / sizeof nums[0])];
                cg_buf tmp = CG_BUF_INIT;
                cg_buf_append(&tmp, out->data, pos);
                cg_buf_puts(&tmp, s);
                cg_buf_append(&tmp, out->data + pos, len - pos);
                cg_buf_reset(out);
                cg_buf_append(out, tmp.data, tmp.len);
                cg_buf_free(&tmp);
            }
            break;
        default: /* zero byte */
            if (len) out->data[rnd_below(len)] = '\0';
            break;
        }
    }
}

static void check_well_formed(cg_arena *a, const cg_nsight_evidence *ev) {
    assert_true(ev->status == CG_NSIGHT_AVAILABLE || ev->status == CG_NSIGHT_UNAVAILABLE ||
                ev->status == CG_NSIGHT_FAILED);
    assert_true(ev->provenance.binding == CG_NSIGHT_PARTIAL || ev->provenance.binding == CG_NSIGHT_BOUND ||
                ev->provenance.binding == CG_NSIGHT_MISMATCH);
    assert_true(ev->kernels.displayed <= CG_NSIGHT_SUMMARY_DISPLAY_ROWS);
    assert_true(ev->gpu_timeline.displayed <= CG_NSIGHT_TIMELINE_DISPLAY_ROWS);
    assert_true(ev->n_limits <= ev->n_source_csv);
    bool any = ev->kernels.n || ev->runtime_calls.n || ev->memory_operations.n || ev->nvtx_ranges.n ||
               ev->gpu_timeline.n;
    if (ev->status == CG_NSIGHT_AVAILABLE) assert_true(any);
    else assert_non_null(ev->reason);
    cg_jv *j = cg_nsight_to_json(a, ev);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, j, false);
    cg_error err;
    cg_jv *back = cg_json_parse(a, b.data, b.len, NULL, &err);
    if (!back) fail_msg("output JSON does not parse back: %s", err.msg);
    assert_true(cg_jv_equal(j, back));
    assert_int_equal(cg_jv_len(cg_jv_get(back, "kernels")), ev->kernels.displayed);
    assert_int_equal(cg_jv_len(cg_jv_get(back, "nvtx_ranges")), ev->nvtx_ranges.displayed);
    assert_int_equal(cg_jv_len(cg_jv_get(back, "limits")), ev->n_limits);
    assert_int_equal(cg_jv_len(cg_jv_get(back, "diagnostics")), ev->diagnostics.n);
    cg_jv *cov = cg_jv_get(back, "coverage");
    assert_true(cg_jv_get(cov, "kernel_summary")->u.b == ev->coverage[CG_NSIGHT_KERNELS]);
    cg_buf_free(&b);
}

static void test_mutated_inputs(void **st) {
    (void)st;
    file files[16];
    size_t n = 0;
    load_case("spec_fixture_bound", files, &n);
    char dir[1024];
    assert_int_equal(test_tmpdir_in(dir, sizeof dir, "nsight-fuzz"), 0);
    const char *fwd = "toy/update-000000000003/forward";
    cg_strlist req = {&fwd, 1};
    cg_buf mutated = CG_BUF_INIT;
    size_t statuses[3] = {0, 0, 0}, with_diagnostics = 0, mismatched = 0;
    for (int it = 0; it < ITERATIONS; it++) {
        /* write every file, one or two of them mutated */
        size_t victim = rnd_below(n), victim2 = rnd_below(4) == 0 ? rnd_below(n) : n;
        for (size_t i = 0; i < n; i++) {
            char *p = cg_path_join(dir, files[i].name);
            if (i == victim || i == victim2) {
                mutate(&files[i], &mutated);
                assert_int_equal(cg_write_file(p, mutated.data, mutated.len, false, NULL), 0);
            } else {
                assert_int_equal(cg_write_file(p, files[i].data, files[i].len, false, NULL), 0);
            }
            free(p);
        }
        cg_arena a;
        cg_arena_init(&a, 0);
        cg_nsight_evidence *ev = cg_nsight_load(&a, dir, &req, NULL, NULL);
        cg_nsight_bind_to_trace(ev, "run-4242-1", "toy::train::update/update-3");
        check_well_formed(&a, ev);
        statuses[ev->status]++;
        with_diagnostics += ev->diagnostics.n > 0;
        mismatched += ev->provenance.binding == CG_NSIGHT_MISMATCH;
        cg_arena_free(&a);
    }
    print_message("nsight fuzz: %d iterations: %zu available, %zu unavailable, %zu failed, %zu with "
                  "diagnostics, %zu provenance mismatches\n",
                  ITERATIONS, statuses[0], statuses[1], statuses[2], with_diagnostics, mismatched);
    /* the mutations must both keep and break reports, or the test proves little */
    assert_true(statuses[CG_NSIGHT_AVAILABLE] > 0);
    assert_true(with_diagnostics > ITERATIONS / 10);
    assert_true(mismatched > ITERATIONS / 2);
    cg_buf_free(&mutated);
    for (size_t i = 0; i < n; i++) {
        free(files[i].name);
        free(files[i].data);
    }
    assert_int_equal(cg_rm_rf(dir), 0);
}

/* Pure in-memory garbage: random bytes as every report kind. */
static void test_random_bytes(void **st) {
    (void)st;
    char dir[1024];
    assert_int_equal(test_tmpdir_in(dir, sizeof dir, "nsight-rand"), 0);
    char buf[512];
    for (int it = 0; it < 500; it++) {
        for (int k = 0; k < CG_NSIGHT_REPORT_COUNT; k++) {
            size_t len = rnd_below(sizeof buf);
            for (size_t i = 0; i < len; i++) {
                static const char alpha[] = "ab,\"\n\r0123456789.-e ";
                buf[i] = rnd_below(8) == 0 ? (char)rnd() : alpha[rnd_below(sizeof alpha - 1)];
            }
            char name[64];
            snprintf(name, sizeof name, "r_%s.csv", cg_nsight_report_pattern((cg_nsight_report)k));
            char *p = cg_path_join(dir, name);
            assert_int_equal(cg_write_file(p, buf, len, false, NULL), 0);
            free(p);
        }
        cg_arena a;
        cg_arena_init(&a, 0);
        cg_nsight_evidence *ev = cg_nsight_load(&a, dir, NULL, NULL, NULL);
        check_well_formed(&a, ev);
        cg_arena_free(&a);
    }
    assert_int_equal(cg_rm_rf(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutated_inputs),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
