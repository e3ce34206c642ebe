/* Targeted tests for trace health (spec §5) and the contract validators
 * (§2.1, bundles §5.2–5.3): digest golden value, validation messages,
 * coverage counts, the memory pairing walk, codes the reader makes
 * unreachable (health must still report them on documents built in memory),
 * issue order and JSON shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "trace/health.h"
#include "trace/trace.h"

static cg_trace *load_illustrative(void) {
    const char *fx = getenv("CG_FIXTURES");
    char path[4096];
    snprintf(path, sizeof path, "%s/trace/illustrative/trace.jsonl", fx ? fx : "fixtures");
    cg_error err;
    cg_err_clear(&err);
    cg_trace *t = cg_trace_read_file(path, NULL, &err);
    if (!t) fail_msg("%s", err.msg);
    return t;
}

static size_t count_code(const cg_health *h, const char *code) {
    size_t n = 0;
    for (size_t i = 0; i < h->n_issues; i++) n += !strcmp(h->issues[i].code, code);
    return n;
}

static const cg_health_issue *find_issue(const cg_health *h, const char *code) {
    for (size_t i = 0; i < h->n_issues; i++)
        if (!strcmp(h->issues[i].code, code)) return &h->issues[i];
    return NULL;
}

static void dump_issues(const cg_health *h) {
    for (size_t i = 0; i < h->n_issues; i++)
        print_message("  %s %s: %s\n", cg_severity_name(h->issues[i].severity), h->issues[i].code,
                      h->issues[i].message);
}

/* ---- gradient manifest digest ---- */

static const cg_expected_gradient GOLDEN[] = {
    {"parameters", "trunk.weight", "trunk"},
    {"parameters", "frozen.weight", "frozen"},
    {"parameters", "optional.weight", "optional"},
};

static void test_digest_golden(void **st) {
    (void)st;
    char d[72];
    cg_gradient_manifest_digest(GOLDEN, 3, d);
    assert_string_equal(d, "sha256:d7f0b4aa8a4072b9824018c8d3eff5757286f1348366c15ef8780be38945fcc6");
    const cg_expected_gradient swapped[] = {GOLDEN[1], GOLDEN[0], GOLDEN[2]};
    char d2[72];
    cg_gradient_manifest_digest(swapped, 3, d2);
    assert_string_not_equal(d, d2); /* order matters */
    /* length prefixes keep ("ab","c") and ("a","bc") apart */
    const cg_expected_gradient x[] = {{"ab", "c", "f"}}, y[] = {{"a", "bc", "f"}};
    cg_gradient_manifest_digest(x, 1, d);
    cg_gradient_manifest_digest(y, 1, d2);
    assert_string_not_equal(d, d2);
}

/* ---- gradient contract validation ---- */

typedef struct gc_fixture {
    cg_expected_gradient e[3];
    cg_family_contract f[3];
    char digest[72];
    cg_gradient_contract g;
} gc_fixture;

static void gc_init(gc_fixture *x) {
    memcpy(x->e, GOLDEN, sizeof GOLDEN);
    x->f[0] = (cg_family_contract){"trunk", CG_FAM_ACTIVE, 1};
    x->f[1] = (cg_family_contract){"frozen", CG_FAM_INACTIVE, 0};
    x->f[2] = (cg_family_contract){"optional", CG_FAM_DATA_CONDITIONAL, 1};
    cg_gradient_manifest_digest(x->e, 3, x->digest);
    x->g = (cg_gradient_contract){x->digest, x->e, 3, x->f, 3};
}

static void gc_redigest(gc_fixture *x) { cg_gradient_manifest_digest(x->e, x->g.n_expected, x->digest); }

static void expect_gc_error(const cg_gradient_contract *g, const char *needle) {
    cg_error err;
    cg_err_clear(&err);
    assert_int_equal(cg_gradient_contract_validate(g, &err), -1);
    if (!strstr(err.msg, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_gradient_contract_validation(void **st) {
    (void)st;
    gc_fixture x;
    cg_error err;
    gc_init(&x);
    assert_int_equal(cg_gradient_contract_validate(&x.g, &err), 0);

    gc_init(&x);
    x.g.n_expected = 0;
    expect_gc_error(&x.g, "gradient manifest must not be empty");
    gc_init(&x);
    x.g.n_families = 0;
    expect_gc_error(&x.g, "gradient families must not be empty");
    gc_init(&x);
    x.digest[10] = x.digest[10] == 'a' ? 'b' : 'a';
    expect_gc_error(&x.g, "gradient manifest SHA-256 does not match its ordered parameter manifest");
    gc_init(&x);
    x.e[1].key = " ";
    gc_redigest(&x);
    expect_gc_error(&x.g, "gradient manifest root, key, and family must not be empty");
    gc_init(&x);
    x.e[2].key = "trunk.weight";
    x.e[2].family = "trunk";
    gc_redigest(&x);
    expect_gc_error(&x.g, "gradient manifest declares (\"parameters\", \"trunk.weight\") more than once");
    gc_init(&x);
    x.f[2].family = "trunk";
    expect_gc_error(&x.g, "gradient family \"trunk\" is declared more than once");
    gc_init(&x);
    x.e[2].family = "trunk"; /* optional loses its only member */
    gc_redigest(&x);
    expect_gc_error(&x.g, "gradient family \"optional\" has no manifest members");
    gc_init(&x);
    x.g.n_families = 2; /* optional members without a contract */
    expect_gc_error(&x.g, "gradient manifest family \"optional\" has no family contract");
    gc_init(&x);
    x.f[1].min_present = 1;
    expect_gc_error(&x.g, "inactive gradient family \"frozen\" must have min_present=0");
    gc_init(&x);
    x.f[0].min_present = 2;
    expect_gc_error(&x.g, "active or data-conditional gradient family \"trunk\" needs min_present in 1..=1");
    gc_init(&x);
    x.f[2].min_present = 0;
    expect_gc_error(&x.g, "active or data-conditional gradient family \"optional\" needs min_present in 1..=1");
}

/* ---- capture contract, identity, run metadata ---- */

static void expect_cc(const cg_capture_contract *c, const char *exact) {
    cg_error err;
    cg_err_clear(&err);
    if (!exact) {
        if (cg_capture_contract_validate(c, &err) != 0) fail_msg("unexpected: %s", err.msg);
        return;
    }
    assert_int_equal(cg_capture_contract_validate(c, &err), -1);
    assert_string_equal(err.msg, exact);
}

static void test_capture_contract_validation(void **st) {
    (void)st;
    const char *req[] = {"a/forward", "a/backward"};
    const char *gpu[] = {"a/forward"}, *cpu[] = {"a/backward"}, *both[] = {"a/forward", "a/backward"};
    cg_capture_contract c;
    memset(&c, 0, sizeof c);
    c.required_semantic_labels = (cg_strlist){req, 2};
    expect_cc(&c, NULL); /* legacy: no partition */

    c.gradients = CG_COV_COMPLETE;
    expect_cc(&c, "complete gradient coverage requires an exact gradient contract");
    gc_fixture x;
    gc_init(&x);
    c.gradients = CG_COV_PARTIAL;
    c.gradient_contract = &x.g;
    expect_cc(&c, "an exact gradient contract requires complete declared gradient coverage");
    c.gradients = CG_COV_COMPLETE;
    expect_cc(&c, NULL);
    x.digest[9] ^= 1;
    cg_error err;
    assert_int_equal(cg_capture_contract_validate(&c, &err), -1);
    assert_string_equal(err.msg, "gradient manifest SHA-256 does not match its ordered parameter manifest");
    c.gradient_contract = NULL;
    c.gradients = CG_COV_NONE;

    c.gpu_expected_semantic_labels = (cg_strlist){gpu, 1};
    c.cpu_only_semantic_labels = (cg_strlist){cpu, 1};
    expect_cc(&c, NULL);
    c.cpu_only_semantic_labels = (cg_strlist){NULL, 0};
    expect_cc(&c, "GPU-expected and CPU-only semantic labels must partition all required application labels");
    c.gpu_expected_semantic_labels = (cg_strlist){both, 2};
    c.cpu_only_semantic_labels = (cg_strlist){cpu, 1};
    expect_cc(&c, "semantic label `a/backward` is classified as both GPU-expected and CPU-only");
    const char *extra[] = {"a/forward", "a/loss"};
    c.gpu_expected_semantic_labels = (cg_strlist){extra, 2};
    expect_cc(&c, "GPU-expected semantic label `a/loss` is not a required application label");
    const char *dup[] = {"a/forward", "a/forward"};
    c.gpu_expected_semantic_labels = (cg_strlist){dup, 2};
    expect_cc(&c, "GPU-expected semantic label `a/forward` is declared more than once");

    const char *blank[] = {"a/forward", "\xe3\x80\x80"}; /* U+3000 ideographic space */
    c.required_semantic_labels = (cg_strlist){blank, 2};
    expect_cc(&c, "required semantic labels must not be empty");
    const char *twice[] = {"a/forward", "a/forward"};
    c.required_semantic_labels = (cg_strlist){twice, 2};
    expect_cc(&c, "required semantic label `a/forward` is declared more than once");
}

static cg_comparison_identity good_identity(void) {
    return (cg_comparison_identity){"git:abc", "w", "m", "c", "d", "fixed", 8, 1, "f32", "exclusive", NULL};
}

static void expect_id(const cg_comparison_identity *id, const char *exact) {
    cg_error err;
    cg_err_clear(&err);
    assert_int_equal(cg_comparison_identity_validate(id, &err), -1);
    assert_string_equal(err.msg, exact);
}

static void test_identity_validation(void **st) {
    (void)st;
    cg_error err;
    cg_comparison_identity id = good_identity();
    assert_int_equal(cg_comparison_identity_validate(&id, &err), 0);
    id.implementation_id = NULL; /* optional */
    assert_int_equal(cg_comparison_identity_validate(&id, &err), 0);
    id.implementation_id = "";
    expect_id(&id, "comparison identity implementation_id must not be empty when declared");
    id = good_identity();
    id.workload_id = " ";
    expect_id(&id, "comparison identity workload_id must not be empty");
    id = good_identity();
    id.seed_policy = "\t";
    expect_id(&id, "comparison identity seed_policy must not be empty");
    id = good_identity();
    id.device_state = "";
    expect_id(&id, "comparison identity device_state must not be empty");
    id = good_identity();
    id.physical_batch = 0;
    expect_id(&id, "comparison identity physical_batch must be greater than zero");
    id = good_identity();
    id.accumulation_steps = 0;
    expect_id(&id, "comparison identity accumulation_steps must be greater than zero");
    id = good_identity();
    id.pair_id = "  ";
    expect_id(&id, "comparison identity pair_id must not be empty when declared");
}

static void test_run_meta_validation(void **st) {
    (void)st;
    cg_trace *t = load_illustrative();
    cg_run_meta m = t->run;
    cg_error err;
    assert_int_equal(cg_run_meta_validate(&m, &err), 0);
    m.correlation_id = "";
    assert_int_equal(cg_run_meta_validate(&m, &err), -1);
    assert_string_equal(err.msg, "run provenance correlation_id must not be empty");
    m = t->run;
    m.device = " ";
    assert_int_equal(cg_run_meta_validate(&m, &err), -1);
    assert_string_equal(err.msg, "run provenance device must not be empty");
    m = t->run;
    m.capture_step = 0;
    m.warmup_steps = 0;
    assert_int_equal(cg_run_meta_validate(&m, &err), -1);
    assert_non_null(strstr(err.msg, "capture_step"));
    m = t->run;
    m.warmup_steps = m.capture_step;
    assert_int_equal(cg_run_meta_validate(&m, &err), -1);
    assert_string_equal(err.msg, "warmup_steps (3) must be fewer than the one-based capture_step (3)");
    m = t->run;
    cg_comparison_identity id = *m.identity;
    id.model_id = "";
    m.identity = &id;
    assert_int_equal(cg_run_meta_validate(&m, &err), -1);
    assert_string_equal(err.msg, "comparison identity model_id must not be empty");

    /* health reports it, with the validator's message */
    t->run.warmup_steps = 7;
    cg_health *h = cg_health_analyze(t);
    const cg_health_issue *is = find_issue(h, "run_provenance_invalid");
    assert_non_null(is);
    assert_int_equal(is->severity, CG_SEV_ERROR);
    assert_string_equal(is->message, "warmup_steps (7) must be fewer than the one-based capture_step (3)");
    assert_false(h->structurally_valid);
    cg_health_free(h);
    cg_trace_free(t);
}

static void test_str_blank(void **st) {
    (void)st;
    assert_true(cg_str_blank(NULL));
    assert_true(cg_str_blank(""));
    assert_true(cg_str_blank(" \t\r\n\v\f"));
    assert_true(cg_str_blank("\xc2\xa0\xe2\x80\x83\xe3\x80\x80\xc2\x85")); /* NBSP, EM SPACE, U+3000, NEL */
    assert_true(cg_str_blank("\xe2\x80\xa8\xe2\x80\xa9"));               /* line/paragraph separators */
    assert_false(cg_str_blank("a"));
    assert_false(cg_str_blank("  a  "));
    assert_false(cg_str_blank("\xe2\x80\x8b")); /* U+200B zero width space is not White_Space */
    assert_false(cg_str_blank("\xff"));         /* invalid UTF-8 is content */
}

/* ---- coverage and JSON ---- */

static void test_illustrative_clean_and_coverage(void **st) {
    (void)st;
    cg_trace *t = load_illustrative();
    cg_health *h = cg_health_analyze(t);
    if (h->n_issues) dump_issues(h);
    assert_int_equal(h->n_issues, 0);
    assert_true(h->structurally_valid);
    assert_true(h->capture_complete);
    const cg_evidence_coverage *c = &h->coverage;
    assert_int_equal(c->spans, 5);
    assert_int_equal(c->closed_spans, 5);
    assert_int_equal(c->root_spans, 1);
    assert_int_equal(c->measured_spans, 1);
    assert_int_equal(c->operations, 1);
    assert_int_equal(c->tensors, 1);
    assert_int_equal(c->memory_events, 2);
    assert_int_equal(c->device_memory_samples, 1);
    assert_int_equal(c->device_intervals, 1);
    assert_int_equal(c->gradients, 2);
    assert_int_equal(c->call_edges, 1);
    assert_int_equal(c->data_edges, 1);
    assert_int_equal(c->forward_spans, 1);
    assert_int_equal(c->backward_spans, 1);
    assert_int_equal(c->optimizer_spans, 1);

    cg_arena a;
    cg_arena_init(&a, 0);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, cg_health_to_json(&a, h), false);
    assert_string_equal(b.data,
                        "{\"structurally_valid\":true,\"capture_complete\":true,\"issues\":[],\"coverage\":{"
                        "\"spans\":5,\"closed_spans\":5,\"root_spans\":1,\"measured_spans\":1,\"operations\":1,"
                        "\"tensors\":1,\"memory_events\":2,\"device_memory_samples\":1,\"device_intervals\":1,"
                        "\"gradients\":2,\"call_edges\":1,\"data_edges\":1,\"forward_spans\":1,"
                        "\"backward_spans\":1,\"optimizer_spans\":1}}");
    cg_buf_free(&b);

    /* an issue serializes as {severity, code, message} */
    t->spans[4].closed = false; /* s5 */
    t->spans[4].duration_ns = 0;
    cg_health *h2 = cg_health_analyze(t);
    cg_json_write(&b, cg_jv_get(cg_health_to_json(&a, h2), "issues"), false);
    assert_string_equal(b.data, "[{\"severity\":\"error\",\"code\":\"open_span\",\"message\":\"span `s5` was not closed\"}]");
    assert_int_equal(h2->coverage.closed_spans, 4);
    assert_true(cg_health_has(h2, "open_span"));
    assert_false(cg_health_has(h2, "root_count"));
    cg_buf_free(&b);
    cg_health_free(h2);
    cg_arena_free(&a);
    cg_health_free(h);
    cg_trace_free(t);
}

/* ---- codes the reader rejects, reported by health on in-memory documents ---- */

static void test_parse_fatal_codes(void **st) {
    (void)st;
    cg_trace *t = load_illustrative();
    t->terminal.reason = "unexpected";
    cg_health *h = cg_health_analyze(t);
    assert_int_equal(h->n_issues, 1);
    assert_string_equal(h->issues[0].code, "complete_with_failure_reason");
    assert_int_equal(h->issues[0].severity, CG_SEV_ERROR);
    assert_false(h->structurally_valid);
    cg_health_free(h);

    t->terminal.outcome = CG_OUTCOME_FAILED;
    t->terminal.reason = " ";
    h = cg_health_analyze(t);
    assert_int_equal(h->n_issues, 2);
    assert_string_equal(h->issues[0].code, "failed_without_reason");
    assert_string_equal(h->issues[1].code, "capture_failed");
    assert_int_equal(h->issues[1].severity, CG_SEV_WARNING);
    assert_false(h->capture_complete);
    cg_health_free(h);

    t->terminal.outcome = CG_OUTCOME_COMPLETE;
    t->terminal.reason = NULL;
    t->terminal.timestamp_ns = 1099; /* s1 ends at 1100 */
    h = cg_health_analyze(t);
    assert_int_equal(h->n_issues, 1);
    assert_string_equal(h->issues[0].code, "terminal_precedes_evidence");
    assert_string_equal(h->issues[0].message,
                        "terminal timestamp 1099 precedes host evidence ending at 1100");
    cg_health_free(h);

    /* saturating: an op ending past u64::MAX ends at u64::MAX */
    t->terminal.timestamp_ns = UINT64_MAX;
    t->ops[0].timestamp_ns = UINT64_MAX - 1;
    t->ops[0].duration_ns = 10;
    h = cg_health_analyze(t);
    assert_false(cg_health_has(h, "terminal_precedes_evidence"));
    assert_true(cg_health_has(h, "operation_outside_span"));
    cg_health_free(h);
    t->terminal.timestamp_ns = UINT64_MAX - 1;
    h = cg_health_analyze(t);
    assert_true(cg_health_has(h, "terminal_precedes_evidence"));
    cg_health_free(h);
    t->terminal.timestamp_ns = 1100;
    t->ops[0].timestamp_ns = 200;
    t->ops[0].duration_ns = 400;

    /* duplicate span ids: one issue, whatever the number of duplicates */
    t->spans[4].id = "s4";
    t->spans[4].parent_id = "s2";
    h = cg_health_analyze(t);
    assert_int_equal(count_code(h, "duplicate_span_id"), 1);
    assert_string_equal(find_issue(h, "duplicate_span_id")->message, "span IDs must be unique");
    cg_health_free(h);
    cg_trace_free(t);
}

static void test_failed_without_reason_message(void **st) {
    (void)st;
    cg_trace *t = load_illustrative();
    t->terminal.outcome = CG_OUTCOME_FAILED;
    t->terminal.reason = "device lost";
    cg_health *h = cg_health_analyze(t);
    assert_int_equal(h->n_issues, 1);
    assert_string_equal(h->issues[0].code, "capture_failed");
    assert_string_equal(h->issues[0].message, "device lost");
    assert_true(h->structurally_valid);
    assert_false(h->capture_complete);
    cg_health_free(h);
    cg_trace_free(t);
}

/* ---- memory pairing walk ---- */

typedef struct mev {
    uint64_t ts;
    const char *storage, *tensor, *device;
    uint64_t bytes;
    bool is_free;
} mev;

static cg_health *walk(cg_trace *t, const mev *ev, size_t n) {
    free(t->memory);
    t->memory = calloc(n, sizeof *t->memory);
    assert_non_null(t->memory);
    t->n_memory = n;
    for (size_t i = 0; i < n; i++)
        t->memory[i] = (cg_memory){.timestamp_ns = 150 + ev[i].ts, /* inside s3 [150, 650] */
                                   .storage_id = ev[i].storage,
                                   .tensor_id = ev[i].tensor,
                                   .span_id = "s3",
                                   .device = ev[i].device ? ev[i].device : "cuda:0",
                                   .bytes = ev[i].bytes,
                                   .is_free = ev[i].is_free,
                                   .dtype = "f32"};
    return cg_health_analyze(t);
}

static void expect_walk(const mev *ev, size_t n, const char *const *codes, size_t n_codes) {
    cg_trace *t = load_illustrative();
    cg_health *h = walk(t, ev, n);
    if (h->n_issues != n_codes) dump_issues(h);
    assert_int_equal(h->n_issues, n_codes);
    for (size_t i = 0; i < n_codes; i++) assert_string_equal(h->issues[i].code, codes[i]);
    cg_health_free(h);
    cg_trace_free(t);
}

static void test_memory_alias_walk(void **st) {
    (void)st;
    /* alias: same storage, same bytes, new tensor; the alias itself is no issue,
     * re-allocation by a tensor already attached is; one free ends the lifetime */
    const mev alias[] = {{10, "S", "t1", NULL, 64, false},
                         {20, "S", "t2", NULL, 64, false},
                         {25, "S", "t2", NULL, 64, false},
                         {30, "S", "t1", NULL, 64, true}};
    const char *c1[] = {"duplicate_allocation"};
    expect_walk(alias, 4, c1, 1);

    /* the tensor that opened the lifetime allocating again is a duplicate too */
    const mev reopen[] = {{1, "S", "t1", NULL, 8, false}, {2, "S", "t1", NULL, 8, false}, {3, "S", "t1", NULL, 8, true}};
    expect_walk(reopen, 3, c1, 1);

    /* a walk longer than the lookup queue: storages interleaved, each opened,
     * aliased, re-allocated by its opener (one duplicate each) and freed */
    enum { NS = 12 };
    static const char *const sid[NS] = {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L"};
    mev longer[4 * NS];
    for (size_t i = 0; i < NS; i++) {
        longer[i] = (mev){i, sid[i], "open", NULL, 8, false};
        longer[NS + i] = (mev){NS + i, sid[i], "alias", NULL, 8, false};
        longer[2 * NS + i] = (mev){2 * NS + i, sid[i], "open", NULL, 8, false};
        longer[3 * NS + i] = (mev){3 * NS + i, sid[i], "alias", NULL, 8, true};
    }
    const char *dups[NS];
    for (size_t i = 0; i < NS; i++) dups[i] = "duplicate_allocation";
    expect_walk(longer, 4 * NS, dups, NS);

    /* a new lifetime after a free starts with fresh aliases */
    const mev reuse[] = {{1, "S", "t1", NULL, 8, false}, {2, "S", "t2", NULL, 8, false}, {3, "S", "t2", NULL, 8, true},
                         {4, "S", "t2", NULL, 8, false}, {5, "S", "t1", NULL, 8, false}, {6, "S", "t1", NULL, 8, true}};
    expect_walk(reuse, 6, NULL, 0);

    /* key is (device, storage_id): the same id on two devices is two storages */
    const mev devices[] = {{1, "S", "t1", "cuda:0", 8, false},
                           {2, "S", "t2", "cuda:1", 8, false},
                           {3, "S", "t1", "cuda:0", 8, true}};
    cg_trace *t = load_illustrative();
    cg_health *h = walk(t, devices, 3);
    assert_int_equal(h->n_issues, 1);
    assert_string_equal(h->issues[0].code, "retained_allocations");
    assert_int_equal(h->issues[0].severity, CG_SEV_WARNING);
    assert_string_equal(h->issues[0].message, "1 storages remained live at capture end");
    assert_true(h->structurally_valid);
    cg_health_free(h);
    cg_trace_free(t);

    /* stable timestamp order: equal timestamps keep document order (free first) */
    const mev same_ts[] = {{10, "S", "t1", NULL, 8, true}, {10, "S", "t1", NULL, 8, false}};
    const char *c2[] = {"unpaired_free", "retained_allocations"};
    expect_walk(same_ts, 2, c2, 2);

    /* document order differs from timestamp order: the walk sorts */
    const mev unsorted[] = {{30, "S", "t1", NULL, 8, true},
                            {10, "S", "t1", NULL, 8, false},
                            {40, "R", "t3", NULL, 4, true},
                            {20, "R", "t3", NULL, 4, false}};
    expect_walk(unsorted, 4, NULL, 0);

    /* size mismatches: realloc of a live storage, and free bytes */
    const mev sizes[] = {{1, "S", "t1", NULL, 8, false}, {2, "S", "t2", NULL, 16, false}, {3, "S", "t1", NULL, 4, true}};
    const char *c3[] = {"allocation_size_mismatch", "allocation_size_mismatch"};
    expect_walk(sizes, 3, c3, 2);
}

/* ---- span graph ---- */

static void test_span_cycle_and_order(void **st) {
    (void)st;
    cg_trace *t = load_illustrative();
    t->spans[0].parent_id = "s1"; /* s1 is its own parent: no root, every span leads into the cycle */
    cg_health *h = cg_health_analyze(t);
    assert_int_equal(count_code(h, "span_cycle"), 5);
    assert_int_equal(count_code(h, "root_count"), 1);
    assert_string_equal(find_issue(h, "root_count")->message, "expected exactly one root span, found 0");
    /* checks run in a fixed order: root_count before span_cycle */
    size_t root_at = 0, cycle_at = 0;
    for (size_t i = 0; i < h->n_issues; i++) {
        if (!strcmp(h->issues[i].code, "root_count")) root_at = i;
        if (!cycle_at && !strcmp(h->issues[i].code, "span_cycle")) cycle_at = i;
    }
    assert_true(root_at < cycle_at);
    cg_health *again = cg_health_analyze(t);
    assert_int_equal(again->n_issues, h->n_issues);
    for (size_t i = 0; i < h->n_issues; i++) {
        assert_string_equal(again->issues[i].code, h->issues[i].code);
        assert_string_equal(again->issues[i].message, h->issues[i].message);
    }
    cg_health_free(again);
    cg_health_free(h);
    cg_trace_free(t);
}

/* A long parent chain and a long cycle: the walk is iterative and linear. */
static void test_long_chains(void **st) {
    (void)st;
    enum { N = 200000 };
    cg_trace *t = load_illustrative();
    free(t->spans);
    t->spans = calloc(N, sizeof *t->spans);
    assert_non_null(t->spans);
    t->n_spans = N;
    for (size_t i = 0; i < N; i++) {
        cg_span *s = &t->spans[i];
        s->id = cg_arena_printf(&t->arena, "c%07zu", i);
        s->parent_id = i ? t->spans[i - 1].id : NULL;
        s->name = s->id;
        s->start_ns = 0;
        s->closed = true;
        s->duration_ns = 1000;
        s->measured = i == 1;
    }
    t->spans[5].name = "toy/update-000000000003/forward";
    t->spans[5].step = CG_STEP_FORWARD;
    t->spans[6].step = CG_STEP_BACKWARD;
    t->spans[7].step = CG_STEP_OPTIMIZER;
    t->ops[0].span_id = t->tensors[0].span_id = t->device_intervals[0].span_id = "c0000005";
    for (size_t i = 0; i < t->n_memory; i++) t->memory[i].span_id = "c0000005";
    for (size_t i = 0; i < t->n_tensor_stats; i++) t->tensor_stats[i].span_id = "c0000005";
    t->ops[0].timestamp_ns = 0;
    t->ops[0].duration_ns = 10;
    t->edges[1].from = "c0000004";
    t->edges[1].to = "c0000005";
    t->edges[1].host_duration_ns = 1000;
    cg_health *h = cg_health_analyze(t);
    if (h->n_issues) dump_issues(h);
    assert_int_equal(h->n_issues, 0);
    cg_health_free(h);

    t->spans[0].parent_id = t->spans[N - 1].id; /* one cycle through every span */
    h = cg_health_analyze(t);
    assert_int_equal(count_code(h, "span_cycle"), N);
    assert_int_equal(count_code(h, "root_count"), 1);
    assert_int_equal(h->n_issues, N + 1);
    cg_health_free(h);
    cg_trace_free(t);
}

/* Many ops naming spans in runs (one pointer, equal strings under other
 * pointers, missing spans): the span lookups, batched and prefetched, answer
 * each op in op order. */
static void test_many_span_references(void **st) {
    (void)st;
    enum { N = 3000 };
    cg_trace *t = load_illustrative();
    const cg_span *s2 = cg_trace_find_span(t, "s2"), *s3 = cg_trace_find_span(t, "s3");
    assert_true(s2 && s3 && s2->closed && s3->closed);
    cg_op proto = t->ops[0];
    free(t->ops);
    t->ops = calloc(N, sizeof *t->ops);
    assert_non_null(t->ops);
    t->n_ops = N;
    size_t want_unknown = 0, want_outside = 0;
    char first_unknown[64] = "", first_outside[128] = "";
    for (size_t i = 0; i < N; i++) {
        cg_op *o = &t->ops[i];
        *o = proto;
        const cg_span *s = (i / 10) % 3 == 0 ? s2 : s3;
        if (i % 97 == 5) { /* a missing span, its own pointer */
            o->span_id = cg_arena_printf(&t->arena, "gone%zu", i);
            if (!want_unknown++) snprintf(first_unknown, sizeof first_unknown, "%s", o->span_id);
            continue;
        }
        /* odd runs: the span's id under another pointer */
        o->span_id = (i / 10) % 2 ? cg_arena_printf(&t->arena, "%s", s->id) : s->id;
        o->timestamp_ns = s->start_ns;
        o->duration_ns = 0;
        if (i % 101 == 7) {
            o->timestamp_ns = s->start_ns + s->duration_ns + 1;
            if (!want_outside++)
                snprintf(first_outside, sizeof first_outside, "operation `%s` lies outside span `%s`", o->op_name,
                         s->id);
        }
    }
    cg_health *h = cg_health_analyze(t);
    assert_int_equal(count_code(h, "unknown_span"), want_unknown);
    assert_int_equal(count_code(h, "operation_outside_span"), want_outside);
    /* in op order: the first of each names the first such op */
    char msg[128];
    snprintf(msg, sizeof msg, "operation evidence refers to missing span `%s`", first_unknown);
    assert_string_equal(find_issue(h, "unknown_span")->message, msg);
    assert_string_equal(find_issue(h, "operation_outside_span")->message, first_outside);
    size_t k = 0;
    for (size_t i = 0; i < h->n_issues; i++) {
        if (strcmp(h->issues[i].code, "unknown_span") != 0) continue;
        while (k < N && k % 97 != 5) k++;
        snprintf(msg, sizeof msg, "operation evidence refers to missing span `gone%zu`", k);
        assert_string_equal(h->issues[i].message, msg);
        k++;
    }
    cg_health_free(h);
    cg_trace_free(t);
}

/* Many distinct data-edge endpoints and tensors (hash tables grow). */
static void test_many_data_edges(void **st) {
    (void)st;
    enum { N = 5000 };
    cg_trace *t = load_illustrative();
    free(t->edges);
    t->edges = calloc(N + 1, sizeof *t->edges);
    assert_non_null(t->edges);
    t->n_edges = N + 1;
    free(t->tensors);
    t->tensors = calloc(N, sizeof *t->tensors);
    assert_non_null(t->tensors);
    t->n_tensors = N;
    for (size_t i = 0; i < N; i++)
        t->tensors[i] = (cg_tensor){.span_id = "s3", .tensor_id = cg_arena_printf(&t->arena, "T%zu", i),
                                    .dtype = "f32", .device = "cpu"};
    for (size_t i = 0; i < N; i++)
        t->edges[i] = (cg_edge){.is_data = true, .from = t->tensors[i].tensor_id,
                                .to = i % 1000 == 999 ? cg_arena_printf(&t->arena, "U%zu", i)
                                                      : t->tensors[(i + 1) % N].tensor_id};
    t->edges[N] = (cg_edge){.is_data = false, .from = "s2", .to = "s3", .host_duration_ns = 500};
    cg_health *h = cg_health_analyze(t);
    assert_int_equal(count_code(h, "unknown_data_edge_tensor"), N / 1000);
    assert_int_equal(h->n_issues, N / 1000);
    assert_string_equal(h->issues[0].message,
                        "data edge `T999` -> `U999` refers to unknown tensor evidence");
    assert_int_equal(h->coverage.data_edges, N);
    assert_int_equal(h->coverage.call_edges, 1);
    cg_health_free(h);
    cg_trace_free(t);
}

/* ---- gradient contract checks on in-memory documents ---- */

static void test_gradient_health_stops(void **st) {
    (void)st;
    cg_trace *t = load_illustrative();
    gc_fixture x;
    gc_init(&x);
    /* a valid contract with none of its keys observed: 3 missing + 2 undeclared;
     * trunk (active) is below minimum; optional (data-conditional) with 0 present
     * and frozen (inactive) all absent are fine */
    t->run.contract.gradients = CG_COV_COMPLETE;
    t->run.contract.gradient_contract = &x.g;
    cg_health *h = cg_health_analyze(t);
    assert_int_equal(count_code(h, "gradient_manifest_missing_key"), 3);
    assert_int_equal(count_code(h, "gradient_manifest_undeclared_key"), 2);
    assert_int_equal(count_code(h, "gradient_active_family_below_minimum"), 1);
    assert_int_equal(h->n_issues, 6);
    cg_health_free(h);

    /* failed capture: missing keys downgrade; the active family is incompletely
     * captured so its minimum is not checked; undeclared stays an error */
    t->terminal.outcome = CG_OUTCOME_FAILED;
    t->terminal.reason = "killed";
    h = cg_health_analyze(t);
    assert_int_equal(count_code(h, "gradient_active_family_below_minimum"), 0);
    assert_int_equal(find_issue(h, "gradient_manifest_missing_key")->severity, CG_SEV_WARNING);
    assert_int_equal(find_issue(h, "gradient_manifest_undeclared_key")->severity, CG_SEV_ERROR);
    cg_health_free(h);
    t->terminal.outcome = CG_OUTCOME_COMPLETE;
    t->terminal.reason = NULL;

    /* an invalid contract stops after gradient_contract_invalid */
    x.f[0].min_present = 0;
    h = cg_health_analyze(t);
    assert_int_equal(h->n_issues, 1);
    assert_string_equal(h->issues[0].code, "gradient_contract_invalid");
    assert_non_null(strstr(h->issues[0].message, "trunk"));
    cg_health_free(h);
    cg_trace_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest_golden),
        cmocka_unit_test(test_gradient_contract_validation),
        cmocka_unit_test(test_capture_contract_validation),
        cmocka_unit_test(test_identity_validation),
        cmocka_unit_test(test_run_meta_validation),
        cmocka_unit_test(test_str_blank),
        cmocka_unit_test(test_illustrative_clean_and_coverage),
        cmocka_unit_test(test_parse_fatal_codes),
        cmocka_unit_test(test_failed_without_reason_message),
        cmocka_unit_test(test_memory_alias_walk),
        cmocka_unit_test(test_span_cycle_and_order),
        cmocka_unit_test(test_long_chains),
        cmocka_unit_test(test_many_span_references),
        cmocka_unit_test(test_many_data_edges),
        cmocka_unit_test(test_gradient_health_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
