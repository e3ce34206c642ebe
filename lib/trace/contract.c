/* contract.c — validation of run metadata, comparison identity, capture
 * contract and gradient contract, and the gradient manifest digest
 * (protocol-trace-evidence.md §2.1, protocol-bundles-comparison.md §5.2–5.3).
 *
 * Every validator reports the first failing rule, in the order the spec lists
 * the rules, and never allocates: uniqueness checks sort a temporary index
 * array (O(n log n)) that is freed before returning. */
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"

#include "base/alloc.h"
#include "trace/trace.h"



/* ---- run metadata and comparison identity (TraceRunMeta::validate,
 * ComparisonIdentity::validate: first failure, the crate's order and words) ---- */

static int require_text(const char *value, const char *what, const char *field, cg_error *err) {
    if (cg_str_blank(value)) return cg_err_set(err, CG_EINVAL, "%s %s must not be empty", what, field);
    return 0;
}

int cg_comparison_identity_validate(const cg_comparison_identity *id, cg_error *err) {
    static const char what[] = "comparison identity";
    if (require_text(id->workload_id, what, "workload_id", err) ||
        require_text(id->model_id, what, "model_id", err) ||
        require_text(id->config_id, what, "config_id", err) ||
        require_text(id->data_id, what, "data_id", err) ||
        require_text(id->seed_policy, what, "seed_policy", err) ||
        require_text(id->precision, what, "precision", err) ||
        require_text(id->device_state, what, "device_state", err))
        return -1;
    if (id->implementation_id && cg_str_blank(id->implementation_id))
        return cg_err_set(err, CG_EINVAL, "%s implementation_id must not be empty when declared", what);
    if (id->pair_id && cg_str_blank(id->pair_id))
        return cg_err_set(err, CG_EINVAL, "%s pair_id must not be empty when declared", what);
    if (id->physical_batch == 0)
        return cg_err_set(err, CG_EINVAL, "%s physical_batch must be greater than zero", what);
    if (id->accumulation_steps == 0)
        return cg_err_set(err, CG_EINVAL, "%s accumulation_steps must be greater than zero", what);
    return 0;
}

int cg_run_meta_validate(const cg_run_meta *m, cg_error *err) {
    static const char what[] = "run provenance";
    if (require_text(m->run_id, what, "run_id", err) ||
        require_text(m->correlation_id, what, "correlation_id", err) ||
        require_text(m->entrypoint, what, "entrypoint", err) ||
        require_text(m->timestamp, what, "timestamp", err) ||
        require_text(m->device, what, "device", err))
        return -1;
    if (m->capture_step == 0)
        return cg_err_set(err, CG_EINVAL, "capture_step must be one-based and greater than zero");
    if (m->warmup_steps >= m->capture_step)
        return cg_err_set(err, CG_EINVAL, "warmup_steps (%llu) must be fewer than the one-based capture_step (%llu)",
                          (unsigned long long)m->warmup_steps, (unsigned long long)m->capture_step);
    if (m->identity && cg_comparison_identity_validate(m->identity, err) != 0) return -1;
    return 0;
}

/* ---- sorted-index helpers for uniqueness checks ---- */

typedef struct keyed {
    const char *a, *b; /* b may be NULL (single-string keys) */
    size_t idx;        /* original position: ties keep document order */
} keyed;

static int keyed_cmp(const void *pa, const void *pb) {
    const keyed *x = pa, *y = pb;
    int c = strcmp(x->a, y->a);
    if (c) return c;
    if (x->b && y->b) {
        c = strcmp(x->b, y->b);
        if (c) return c;
    }
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool keyed_same(const keyed *x, const keyed *y) {
    return !strcmp(x->a, y->a) && (!x->b || !y->b || !strcmp(x->b, y->b));
}

static keyed *keyed_alloc(size_t n) {
    keyed *k = cg_xzalloc(n, sizeof *k);
    return k;
}

/* Binary search in keys sorted by keyed_cmp (b ignored); returns count of equal a. */
static size_t count_a(const keyed *k, size_t n, const char *a) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(k[mid].a, a) < 0) lo = mid + 1;
        else hi = mid;
    }
    size_t c = 0;
    while (lo + c < n && !strcmp(k[lo + c].a, a)) c++;
    return c;
}

/* ---- gradient manifest and contract ---- */

static void put_len_prefixed(cg_sha256 *h, const char *s) {
    uint64_t len = s ? (uint64_t)strlen(s) : 0;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(len >> (8 * i));
    cg_sha256_update(h, le, sizeof le);
    if (len) cg_sha256_update(h, s, (size_t)len);
}

void cg_gradient_manifest_digest(const cg_expected_gradient *e, size_t n, char out[72]) {
    cg_sha256 h;
    cg_sha256_init(&h);
    static const char domain[] = CG_GRADIENT_MANIFEST_SCHEMA;
    cg_sha256_update(&h, domain, sizeof domain - 1);
    unsigned char zero = 0;
    cg_sha256_update(&h, &zero, 1);
    for (size_t i = 0; i < n; i++) {
        put_len_prefixed(&h, e[i].root);
        put_len_prefixed(&h, e[i].key);
        put_len_prefixed(&h, e[i].family);
    }
    unsigned char d[32];
    cg_sha256_final(&h, d);
    memcpy(out, "sha256:", 7);
    cg_hex(d, 32, out + 7);
}

/* Marks, in original order, every element whose key occurred earlier (k is sorted). */
static bool *repeats(keyed *k, size_t n) {
    bool *rep = cg_xzalloc(n, sizeof *rep);
    qsort(k, n, sizeof *k, keyed_cmp);
    for (size_t i = 1; i < n; i++)
        if (keyed_same(&k[i - 1], &k[i])) rep[k[i].idx] = true;
    return rep;
}

/* Rust `{:?}` of s into a caller buffer (message argument). */
static const char *dbg(cg_buf *b, const char *s) {
    cg_buf_reset(b);
    cg_rust_debug_str(b, s);
    return b->data;
}

/* Expected entries in order: blank root/key/family, then a repeated (root, key). */
static int validate_manifest_entries(const cg_gradient_contract *g, cg_error *err) {
    keyed *k = keyed_alloc(g->n_expected);
    for (size_t i = 0; i < g->n_expected; i++) k[i] = (keyed){g->expected[i].root, g->expected[i].key, i};
    bool *rep = repeats(k, g->n_expected);
    cg_free(k);
    int rc = 0;
    cg_buf b1 = CG_BUF_INIT, b2 = CG_BUF_INIT;
    for (size_t i = 0; i < g->n_expected && !rc; i++) {
        const cg_expected_gradient *e = &g->expected[i];
        if (cg_str_blank(e->root) || cg_str_blank(e->key) || cg_str_blank(e->family))
            rc = cg_err_set(err, CG_EINVAL, "gradient manifest root, key, and family must not be empty");
        else if (rep[i])
            rc = cg_err_set(err, CG_EINVAL, "gradient manifest declares (%s, %s) more than once", dbg(&b1, e->root),
                            dbg(&b2, e->key));
    }
    cg_buf_free(&b1);
    cg_buf_free(&b2);
    cg_free(rep);
    return rc;
}

/* Families in order: blank, repeated, no members, min_present out of range. */
static int validate_families(const cg_gradient_contract *g, const keyed *members, cg_error *err) {
    keyed *f = keyed_alloc(g->n_families);
    for (size_t i = 0; i < g->n_families; i++) f[i] = (keyed){g->families[i].family, NULL, i};
    bool *rep = repeats(f, g->n_families);
    cg_free(f);
    int rc = 0;
    cg_buf b = CG_BUF_INIT;
    for (size_t i = 0; i < g->n_families && !rc; i++) {
        const cg_family_contract *c = &g->families[i];
        unsigned long long count = count_a(members, g->n_expected, c->family);
        if (cg_str_blank(c->family)) rc = cg_err_set(err, CG_EINVAL, "gradient family name must not be empty");
        else if (rep[i])
            rc = cg_err_set(err, CG_EINVAL, "gradient family %s is declared more than once", dbg(&b, c->family));
        else if (count == 0)
            rc = cg_err_set(err, CG_EINVAL, "gradient family %s has no manifest members", dbg(&b, c->family));
        else if (c->expectation == CG_FAM_INACTIVE && c->min_present != 0)
            rc = cg_err_set(err, CG_EINVAL, "inactive gradient family %s must have min_present=0", dbg(&b, c->family));
        else if (c->expectation != CG_FAM_INACTIVE && (c->min_present == 0 || c->min_present > count))
            rc = cg_err_set(err, CG_EINVAL,
                            "active or data-conditional gradient family %s needs min_present in 1..=%llu",
                            dbg(&b, c->family), count);
    }
    cg_buf_free(&b);
    cg_free(rep);
    return rc;
}

/* GradientContract::validate: the first failing rule, in the crate's order. */
int cg_gradient_contract_validate(const cg_gradient_contract *g, cg_error *err) {
    if (g->n_expected == 0) return cg_err_set(err, CG_EINVAL, "gradient manifest must not be empty");
    if (g->n_families == 0) return cg_err_set(err, CG_EINVAL, "gradient families must not be empty");
    char digest[72];
    cg_gradient_manifest_digest(g->expected, g->n_expected, digest);
    if (!g->manifest_sha256 || strcmp(g->manifest_sha256, digest) != 0)
        return cg_err_set(err, CG_EINVAL, "gradient manifest SHA-256 does not match its ordered parameter manifest");
    if (validate_manifest_entries(g, err)) return -1;
    keyed *m = keyed_alloc(g->n_expected), *fc = keyed_alloc(g->n_families);
    for (size_t i = 0; i < g->n_expected; i++) m[i] = (keyed){g->expected[i].family, NULL, i};
    qsort(m, g->n_expected, sizeof *m, keyed_cmp);
    for (size_t i = 0; i < g->n_families; i++) fc[i] = (keyed){g->families[i].family, NULL, i};
    qsort(fc, g->n_families, sizeof *fc, keyed_cmp);
    int rc = validate_families(g, m, err);
    cg_buf b = CG_BUF_INIT;
    /* manifest families in BTreeMap (sorted) order */
    for (size_t i = 0; i < g->n_expected && !rc; i++)
        if ((i == 0 || strcmp(m[i - 1].a, m[i].a)) && count_a(fc, g->n_families, m[i].a) == 0)
            rc = cg_err_set(err, CG_EINVAL, "gradient manifest family %s has no family contract", dbg(&b, m[i].a));
    cg_buf_free(&b);
    cg_free(m);
    cg_free(fc);
    return rc;
}

/* One class list of CaptureContract::validate; classified (sorted) holds the
 * labels of the classes checked before it. */
static int validate_label_class(const char *class, const cg_strlist *l, const keyed *req, size_t nr,
                                const keyed *classified, size_t n_classified, cg_error *err) {
    keyed *k = keyed_alloc(l->n);
    for (size_t i = 0; i < l->n; i++) k[i] = (keyed){l->items[i], NULL, i};
    bool *rep = repeats(k, l->n);
    cg_free(k);
    int rc = 0;
    for (size_t i = 0; i < l->n && !rc; i++) {
        const char *s = l->items[i];
        if (cg_str_blank(s)) rc = cg_err_set(err, CG_EINVAL, "%s semantic labels must not be empty", class);
        else if (rep[i])
            rc = cg_err_set(err, CG_EINVAL, "%s semantic label `%s` is declared more than once", class, s);
        else if (!count_a(req, nr, s))
            rc = cg_err_set(err, CG_EINVAL, "%s semantic label `%s` is not a required application label", class, s);
        else if (count_a(classified, n_classified, s))
            rc = cg_err_set(err, CG_EINVAL, "semantic label `%s` is classified as both GPU-expected and CPU-only", s);
    }
    cg_free(rep);
    return rc;
}

static int validate_partition(const cg_capture_contract *c, const keyed *req, size_t nr, cg_error *err) {
    const cg_strlist *gpu = &c->gpu_expected_semantic_labels, *cpu = &c->cpu_only_semantic_labels;
    if (gpu->n == 0 && cpu->n == 0) return 0; /* legacy: every required label is GPU-expected */
    keyed *g = keyed_alloc(gpu->n);
    for (size_t i = 0; i < gpu->n; i++) g[i] = (keyed){gpu->items[i], NULL, i};
    qsort(g, gpu->n, sizeof *g, keyed_cmp);
    int rc = validate_label_class("GPU-expected", gpu, req, nr, NULL, 0, err);
    if (!rc) rc = validate_label_class("CPU-only", cpu, req, nr, g, gpu->n, err);
    /* every label of both classes is required and unique here: equal sets iff every required one is classified */
    for (size_t i = 0; i < nr && !rc; i++)
        if (!count_a(g, gpu->n, req[i].a)) {
            bool in_cpu = false;
            for (size_t j = 0; j < cpu->n && !in_cpu; j++) in_cpu = !strcmp(cpu->items[j], req[i].a);
            if (!in_cpu)
                rc = cg_err_set(err, CG_EINVAL,
                                "GPU-expected and CPU-only semantic labels must partition all required application "
                                "labels");
        }
    cg_free(g);
    return rc;
}

/* CaptureContract::validate: required labels, the semantic partition, then the gradient contract. */
int cg_capture_contract_validate(const cg_capture_contract *c, cg_error *err) {
    const cg_strlist *req = &c->required_semantic_labels;
    keyed *k = keyed_alloc(req->n);
    for (size_t i = 0; i < req->n; i++) k[i] = (keyed){req->items[i], NULL, i};
    bool *rep = repeats(k, req->n); /* k stays sorted for the lookups below */
    int rc = 0;
    for (size_t i = 0; i < req->n && !rc; i++) {
        if (cg_str_blank(req->items[i])) rc = cg_err_set(err, CG_EINVAL, "required semantic labels must not be empty");
        else if (rep[i])
            rc = cg_err_set(err, CG_EINVAL, "required semantic label `%s` is declared more than once", req->items[i]);
    }
    cg_free(rep);
    if (!rc) rc = validate_partition(c, k, req->n, err);
    cg_free(k);
    if (rc) return rc;
    if (c->gradients == CG_COV_COMPLETE && !c->gradient_contract)
        return cg_err_set(err, CG_EINVAL, "complete gradient coverage requires an exact gradient contract");
    if (c->gradient_contract && c->gradients != CG_COV_COMPLETE)
        return cg_err_set(err, CG_EINVAL, "an exact gradient contract requires complete declared gradient coverage");
    return c->gradient_contract ? cg_gradient_contract_validate(c->gradient_contract, err) : 0;
}

