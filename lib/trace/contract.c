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
#include "trace/trace.h"

/* ---- whitespace (Rust's char::is_whitespace = Unicode White_Space) ---- */

static bool is_unicode_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Decodes one UTF-8 sequence at s; returns its length (≥1). Invalid bytes
 * decode as a non-space code point of length 1, so they count as content. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp) {
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0) {
        *cp = 0xFFFD;
        return 1;
    }
    uint32_t v = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

bool cg_str_blank(const char *s) {
    if (!s) return true;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t cp;
        size_t n = utf8_next(p, &cp);
        if (!is_unicode_space(cp)) return false;
        p += n;
    }
    return true;
}

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

/* Sorts keys and returns the index (in the original order) of the earliest
 * second occurrence of any key, or SIZE_MAX when all keys are unique. */
static size_t first_duplicate(keyed *k, size_t n) {
    if (n < 2) return SIZE_MAX;
    qsort(k, n, sizeof *k, keyed_cmp);
    size_t best = SIZE_MAX;
    for (size_t i = 1; i < n; i++)
        if (keyed_same(&k[i - 1], &k[i]) && k[i].idx < best) best = k[i].idx;
    return best;
}

static keyed *keyed_alloc(size_t n) {
    keyed *k = calloc(n ? n : 1, sizeof *k);
    if (!k) abort();
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

int cg_gradient_contract_validate(const cg_gradient_contract *g, cg_error *err) {
    if (g->n_expected == 0) return cg_err_set(err, CG_EINVAL, "gradient manifest must not be empty");
    if (g->n_families == 0)
        return cg_err_set(err, CG_EINVAL, "gradient contract must declare at least one family contract");
    char digest[72];
    cg_gradient_manifest_digest(g->expected, g->n_expected, digest);
    if (!g->manifest_sha256 || strcmp(g->manifest_sha256, digest) != 0)
        return cg_err_set(err, CG_EINVAL, "gradient manifest digest %s does not match the recomputed digest %s",
                          g->manifest_sha256 ? g->manifest_sha256 : "(absent)", digest);
    for (size_t i = 0; i < g->n_expected; i++) {
        const cg_expected_gradient *e = &g->expected[i];
        if (cg_str_blank(e->root))
            return cg_err_set(err, CG_EINVAL, "gradient manifest entry %zu has an empty root", i);
        if (cg_str_blank(e->key))
            return cg_err_set(err, CG_EINVAL, "gradient manifest entry %zu has an empty key", i);
        if (cg_str_blank(e->family))
            return cg_err_set(err, CG_EINVAL, "gradient manifest entry %zu has an empty family", i);
    }
    int rc = 0;
    keyed *k = keyed_alloc(g->n_expected);
    for (size_t i = 0; i < g->n_expected; i++) k[i] = (keyed){g->expected[i].root, g->expected[i].key, i};
    size_t dup = first_duplicate(k, g->n_expected);
    free(k);
    if (dup != SIZE_MAX)
        return cg_err_set(err, CG_EINVAL, "gradient manifest declares root %s key %s more than once",
                          g->expected[dup].root, g->expected[dup].key);

    for (size_t i = 0; i < g->n_families; i++)
        if (cg_str_blank(g->families[i].family))
            return cg_err_set(err, CG_EINVAL, "gradient family contract %zu has an empty family name", i);
    keyed *f = keyed_alloc(g->n_families);
    for (size_t i = 0; i < g->n_families; i++) f[i] = (keyed){g->families[i].family, NULL, i};
    dup = first_duplicate(f, g->n_families);
    free(f);
    if (dup != SIZE_MAX)
        return cg_err_set(err, CG_EINVAL, "gradient family %s has more than one family contract",
                          g->families[dup].family);

    /* member counts per family: manifest families sorted by name */
    keyed *m = keyed_alloc(g->n_expected);
    for (size_t i = 0; i < g->n_expected; i++) m[i] = (keyed){g->expected[i].family, NULL, i};
    qsort(m, g->n_expected, sizeof *m, keyed_cmp);
    keyed *fc = keyed_alloc(g->n_families);
    for (size_t i = 0; i < g->n_families; i++) fc[i] = (keyed){g->families[i].family, NULL, i};
    qsort(fc, g->n_families, sizeof *fc, keyed_cmp);

    for (size_t i = 0; i < g->n_families && rc == 0; i++)
        if (count_a(m, g->n_expected, g->families[i].family) == 0)
            rc = cg_err_set(err, CG_EINVAL, "gradient family %s has no manifest members", g->families[i].family);
    for (size_t i = 0; i < g->n_expected && rc == 0; i++)
        if (count_a(fc, g->n_families, g->expected[i].family) == 0)
            rc = cg_err_set(err, CG_EINVAL, "gradient manifest family %s has no family contract",
                            g->expected[i].family);
    for (size_t i = 0; i < g->n_families && rc == 0; i++) {
        const cg_family_contract *c = &g->families[i];
        uint64_t members = count_a(m, g->n_expected, c->family);
        if (c->expectation == CG_FAM_INACTIVE) {
            if (c->min_present != 0)
                rc = cg_err_set(err, CG_EINVAL, "inactive gradient family %s must have min_present 0, not %llu",
                                c->family, (unsigned long long)c->min_present);
        } else if (c->min_present < 1 || c->min_present > members) {
            rc = cg_err_set(err, CG_EINVAL,
                            "%s gradient family %s needs min_present between 1 and its %llu members, not %llu",
                            cg_family_expectation_name(c->expectation), c->family, (unsigned long long)members,
                            (unsigned long long)c->min_present);
        }
    }
    free(m);
    free(fc);
    return rc;
}

/* ---- capture contract ---- */

static int validate_partition(const cg_capture_contract *c, cg_error *err) {
    const cg_strlist *req = &c->required_semantic_labels;
    const cg_strlist *gpu = &c->gpu_expected_semantic_labels;
    const cg_strlist *cpu = &c->cpu_only_semantic_labels;
    if (gpu->n == 0 && cpu->n == 0) return 0; /* legacy: every required label is GPU-expected */
    size_t ng = gpu->n, nc = cpu->n, nr = req->n;
    keyed *g = keyed_alloc(ng), *p = keyed_alloc(nc), *r = keyed_alloc(nr);
    for (size_t i = 0; i < ng; i++) g[i] = (keyed){gpu->items[i], NULL, i};
    for (size_t i = 0; i < nc; i++) p[i] = (keyed){cpu->items[i], NULL, i};
    for (size_t i = 0; i < nr; i++) r[i] = (keyed){req->items[i], NULL, i};
    int rc = 0;
    size_t dup = first_duplicate(g, ng);
    if (dup != SIZE_MAX)
        rc = cg_err_set(err, CG_EINVAL, "GPU-expected semantic label %s is declared more than once", gpu->items[dup]);
    if (rc == 0 && (dup = first_duplicate(p, nc)) != SIZE_MAX)
        rc = cg_err_set(err, CG_EINVAL, "CPU-only semantic label %s is declared more than once", cpu->items[dup]);
    qsort(r, nr, sizeof *r, keyed_cmp);
    for (size_t i = 0; i < nr && rc == 0; i++) {
        const char *l = req->items[i];
        size_t in_g = count_a(g, ng, l), in_c = count_a(p, nc, l);
        if (in_g && in_c)
            rc = cg_err_set(err, CG_EINVAL,
                            "required semantic label %s is classified as both GPU-expected and CPU-only", l);
        else if (!in_g && !in_c)
            rc = cg_err_set(err, CG_EINVAL,
                            "required semantic label %s is classified as neither GPU-expected nor CPU-only", l);
    }
    for (size_t i = 0; i < ng && rc == 0; i++)
        if (count_a(r, nr, gpu->items[i]) == 0)
            rc = cg_err_set(err, CG_EINVAL, "GPU-expected semantic label %s is not a required semantic label",
                            gpu->items[i]);
    for (size_t i = 0; i < nc && rc == 0; i++)
        if (count_a(r, nr, cpu->items[i]) == 0)
            rc = cg_err_set(err, CG_EINVAL, "CPU-only semantic label %s is not a required semantic label",
                            cpu->items[i]);
    free(g);
    free(p);
    free(r);
    return rc;
}

int cg_capture_contract_validate(const cg_capture_contract *c, cg_error *err) {
    const cg_strlist *req = &c->required_semantic_labels;
    for (size_t i = 0; i < req->n; i++)
        if (cg_str_blank(req->items[i]))
            return cg_err_set(err, CG_EINVAL, "required semantic labels must not be empty");
    keyed *k = keyed_alloc(req->n);
    for (size_t i = 0; i < req->n; i++) k[i] = (keyed){req->items[i], NULL, i};
    size_t dup = first_duplicate(k, req->n);
    free(k);
    if (dup != SIZE_MAX)
        return cg_err_set(err, CG_EINVAL, "required semantic label %s is declared more than once",
                          req->items[dup]);
    if (c->gradients == CG_COV_COMPLETE && !c->gradient_contract)
        return cg_err_set(err, CG_EINVAL, "complete gradient coverage requires an exact gradient contract");
    if (c->gradient_contract && c->gradients != CG_COV_COMPLETE)
        return cg_err_set(err, CG_EINVAL, "an exact gradient contract requires complete declared gradient coverage");
    if (c->gradient_contract && cg_gradient_contract_validate(c->gradient_contract, err) != 0) return -1;
    return validate_partition(c, err);
}
