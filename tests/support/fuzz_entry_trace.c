/* fuzz_entry_trace.c — the trace reader, health and evidence build on untrusted
 * JSONL (see fuzz_entry.h).
 *
 * Invariants:
 *   - cg_trace_read_mem and cg_trace_read_file (the streaming path, fed the same
 *     bytes through a memfd) agree: both accept, or both reject with the same
 *     code, message and line; rejections are CG_EPARSE / CG_ELIMIT;
 *   - the reader's fast path (lib/trace/scan.c) and its general path
 *     (cg_trace_limits.general_only) agree the same way, and an accepted trace
 *     writes the same bytes and span lines both ways;
 *   - an accepted trace gives a summary and a health report that serialize, a
 *     cohort row that round-trips through its JSON, an (ineligible) unverified
 *     self-comparison, and
 *     the evidence build either succeeds (its packet JSON passes
 *     cg_evidence_validate_schema after a write/parse round trip) or fails with
 *     a message;
 *   - every event line of an accepted trace has unique fields (serde);
 *   - writing an accepted trace and reading it back is accepted and writes the
 *     same bytes again (write ∘ read is idempotent). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/evidence.h"
#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "comparison/cohort.h"
#include "comparison/compare.h"
#include "fuzz_entry.h"
#include "trace/health.h"
#include "trace/trace.h"

static const cg_errcode read_codes[] = {CG_EPARSE, CG_ELIMIT, CG_OK};
static const cg_errcode build_codes[] = {CG_EINVAL, CG_ESTATE, CG_EPARSE, CG_OK};

/* Reads the bytes through the file path; display path equals the one used for memory. */
static cg_trace *read_via_file(const uint8_t *data, size_t size, char *path, size_t path_cap, cg_error *err) {
    int fd = memfd_create("cg-fuzz-trace", MFD_CLOEXEC);
    CG_FUZZ_REQUIRE(fd >= 0, "memfd_create failed");
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        CG_FUZZ_REQUIRE(w > 0, "memfd write failed");
        off += (size_t)w;
    }
    snprintf(path, path_cap, "/proc/self/fd/%d", fd);
    cg_trace *t = cg_trace_read_file(path, NULL, err);
    close(fd);
    return t;
}

static void check_health(const cg_trace *t) {
    cg_health *h = cg_health_analyze(t);
    CG_FUZZ_REQUIRE(h != NULL, "cg_health_analyze returned NULL");
    bool any_error = false;
    for (size_t i = 0; i < h->n_issues; i++) {
        CG_FUZZ_REQUIRE(h->issues[i].code && h->issues[i].code[0], "health issue without a code");
        CG_FUZZ_REQUIRE(h->issues[i].message && h->issues[i].message[0], "health issue %s without a message",
                        h->issues[i].code);
        if (h->issues[i].severity == CG_SEV_ERROR) any_error = true;
    }
    CG_FUZZ_REQUIRE(h->structurally_valid == !any_error, "structurally_valid disagrees with the issue list");
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, cg_health_to_json(&a, h), false);
    cg_buf_free(&b);

    /* comparison over the same hostile trace: cohort row round trip and a self-comparison */
    cg_cohort_row row, back;
    cg_cohort_row_from_trace(&a, t, h, NULL, &row);
    cg_buf r1 = CG_BUF_INIT, r2 = CG_BUF_INIT;
    cg_cohort_row_write(&r1, &row);
    cg_error err;
    cg_err_clear(&err);
    CG_FUZZ_REQUIRE(cg_cohort_row_parse(&a, r1.data, r1.len, &back, &err) == 0, "a written cohort row does not parse: %s",
                    err.msg);
    cg_cohort_row_write(&r2, &back);
    CG_FUZZ_REQUIRE(r1.len == r2.len && memcmp(r1.data, r2.data, r1.len) == 0, "cohort row write is not stable");
    cg_buf_free(&r1);
    cg_buf_free(&r2);
    const cg_trace *one[1] = {t};
    cg_jv *cmp = cg_compare_unverified_traces(&a, one, 1, one, 1);
    CG_FUZZ_REQUIRE(cmp != NULL && cg_comparison_is_ineligible(cmp), "an unverified self-comparison must be ineligible");
    cg_json_write(&b, cmp, false);
    cg_buf_free(&b);
    cg_arena_free(&a);
    cg_health_free(h);
}

static void check_evidence(const cg_trace *t) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    cg_evidence *e = cg_evidence_build(&a, t, NULL, &err);
    if (!e) {
        cg_fuzz_check_error(&err, "cg_evidence_build", build_codes);
    } else {
        cg_jv *packet = cg_evidence_to_json(&a, e);
        CG_FUZZ_REQUIRE(packet != NULL, "cg_evidence_to_json returned NULL");
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, packet, true);
        cg_arena pa;
        cg_arena_init(&pa, 0);
        cg_jv *back = cg_json_parse(&pa, b.data, b.len, NULL, &err);
        CG_FUZZ_REQUIRE(back != NULL, "evidence JSON does not parse back: %s", err.msg);
        CG_FUZZ_REQUIRE(cg_evidence_validate_schema(back, &err) == 0, "evidence packet fails its own schema: %s",
                        err.msg);
        cg_arena_free(&pa);
        cg_buf_free(&b);
        cg_evidence_free(e);
    }
    cg_arena_free(&a);
}

/* serde struct semantics: an accepted event line has no duplicated field. */
static void check_no_duplicate_fields(const uint8_t *data, size_t size) {
    cg_arena a;
    cg_arena_init(&a, 0);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        cg_error err;
        cg_jv *o = cg_json_parse(&a, p, (size_t)(le - p), NULL, &err);
        if (o && o->type == CG_JOBJ)
            CG_FUZZ_REQUIRE(cg_jv_obj_dup_key(o) == NULL, "accepted an event with duplicate field `%s`",
                            cg_jv_obj_dup_key(o));
        cg_arena_reset(&a);
        p = nl ? nl + 1 : end;
    }
    cg_arena_free(&a);
}

static void check_rewrite(const cg_trace *t, const char *path) {
    cg_buf w1 = CG_BUF_INIT, w2 = CG_BUF_INIT;
    cg_trace_write(&w1, t);
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t2 = cg_trace_read_mem(w1.data, w1.len, path, NULL, &err);
    CG_FUZZ_REQUIRE(t2 != NULL, "a written trace does not read back: %s", err.msg);
    cg_trace_write(&w2, t2);
    CG_FUZZ_REQUIRE(w1.len == w2.len && memcmp(w1.data, w2.data, w1.len) == 0,
                    "trace write is not stable after a read");
    cg_trace_free(t2);
    cg_buf_free(&w1);
    cg_buf_free(&w2);
}

/* The general path alone must decide exactly as the default (fast) path did. */
static void check_general_path(const uint8_t *data, size_t size, const char *path, const cg_trace *t,
                               const cg_error *em) {
    cg_trace_limits lim;
    cg_trace_limits_default(&lim);
    lim.general_only = true;
    cg_error eg;
    cg_err_clear(&eg);
    cg_trace *g = cg_trace_read_mem((const char *)data, size, path, &lim, &eg);
    CG_FUZZ_REQUIRE(!t == !g, "fast and general paths disagree: fast=%s general=%s", t ? "ok" : em->msg,
                    g ? "ok" : eg.msg);
    if (!t) {
        CG_FUZZ_REQUIRE(em->code == eg.code && em->line == eg.line && strcmp(em->msg, eg.msg) == 0,
                        "fast and general paths reject differently:\n  fast:    %s\n  general: %s", em->msg, eg.msg);
        return;
    }
    cg_buf w1 = CG_BUF_INIT, w2 = CG_BUF_INIT;
    cg_trace_write(&w1, t);
    cg_trace_write(&w2, g);
    CG_FUZZ_REQUIRE(w1.len == w2.len && memcmp(w1.data, w2.data, w1.len) == 0, "fast and general paths read differently");
    for (size_t i = 0; i < t->n_spans; i++)
        CG_FUZZ_REQUIRE(t->spans[i].line == g->spans[i].line, "fast and general paths disagree on a span's line");
    cg_buf_free(&w1);
    cg_buf_free(&w2);
    cg_trace_free(g);
}

int cg_fuzz_trace(const uint8_t *data, size_t size) {
    char path[64];
    cg_error ef, em;
    cg_err_clear(&ef);
    cg_err_clear(&em);
    cg_trace *tf = read_via_file(data, size, path, sizeof path, &ef);
    cg_trace *t = cg_trace_read_mem((const char *)data, size, path, NULL, &em);
    CG_FUZZ_REQUIRE(!t == !tf, "memory and file readers disagree: mem=%s file=%s", t ? "ok" : em.msg,
                    tf ? "ok" : ef.msg);
    cg_trace_free(tf);
    check_general_path(data, size, path, t, &em);
    if (!t) {
        cg_fuzz_check_error(&em, "cg_trace_read_mem", read_codes);
        CG_FUZZ_REQUIRE(em.code == ef.code && em.line == ef.line && strcmp(em.msg, ef.msg) == 0,
                        "memory and file readers reject differently:\n  mem:  %s\n  file: %s", em.msg, ef.msg);
        return 0;
    }
    check_no_duplicate_fields(data, size);
    cg_trace_summary s;
    cg_trace_summary_build(t, &s);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, cg_trace_summary_to_json(&a, &s), false);
    cg_buf_free(&b);
    cg_arena_free(&a);
    check_health(t);
    check_evidence(t);
    check_rewrite(t, path);
    cg_trace_free(t);
    return 0;
}
