/* routes_compare.c — GET/POST /compare (comparison/6 from the stored cohort
 * rows of verified bundles, byte-identical to `candle-graph compare` on the
 * same bundles), GET /compare/spans (span-diff/1 from the stored per-path
 * totals) and the cohort resolution they share with GET /series: id lists
 * (unique ≥ 12-hex prefixes) or selectors `campaign:<id>` (its published
 * captures) / `implementation:<id>`, with the GET /bundles list filters applied
 * to selector cohorts. No trace is read on any of these paths. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"

#include "base/alloc.h"
#include "comparison/compare.h"
#include "srv_compare.h"
#include "srv_store.h"

#define MAX_COHORT 1000

int srv_campaign_published_ids(srv_req *r, const char *cid, const char ***ids, size_t *n,
                               enum MHD_Result *res); /* routes_campaigns.c */

/* ------------------------------------------------------------ cohorts */

static bool is_hex_prefix(const char *s) {
    size_t n = strlen(s);
    if (n < 12 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

/* A selector cohort: the selector's condition on arg + list filters. */
static int select_ids(srv_req *r, const char *name, srv_selector sel, const char *arg, srv_cohort *out,
                      enum MHD_Result *res) {
    srv_where w;
    srv_where_init(&w, arg);
    if (!srv_bundle_filters_add(r, &w, res)) {
        srv_where_free(&w);
        return 0;
    }
    cg_error err = {0};
    char sqlstate[6] = "";
    const char *bad;
    PGresult *x = srv_store_cohort_ids(r->s->pool, sel, &w, MAX_COHORT + 1, &bad, sqlstate, &err);
    srv_where_free(&w);
    if (!x) {
        cg_jv *d = bad ? cg_jv_obj(&r->arena) : NULL;
        if (d) cg_jv_obj_put(&r->arena, d, "parameter", cg_jv_str(&r->arena, bad));
        *res = bad ? srv_fail(r, CG_R_INVALID_PARAMETER, d, "invalid value for parameter %s", bad)
               : !strncmp(sqlstate, "22", 2)
                   ? srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "invalid query parameter value")
                   : srv_fail_unavailable(r, &err);
        return 0;
    }
    int rows = PQntuples(x);
    if (rows > MAX_COHORT) {
        PQclear(x);
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "cohort %s selects more than %d bundles", name, MAX_COHORT);
        return 0;
    }
    out->n = (size_t)rows;
    out->ids = cg_arena_zalloc(&r->arena, ((size_t)rows + 1) * sizeof *out->ids);
    for (int i = 0; i < rows; i++) out->ids[i] = cg_arena_strdup(&r->arena, PQgetvalue(x, i, 0));
    out->given = out->ids;
    PQclear(x);
    return 1;
}

/* Explicit tokens → full ids in one query (0 rows: unknown, 2: ambiguous). */
static int resolve_tokens(srv_req *r, const char *name, const char **tok, size_t n, srv_cohort *out,
                          enum MHD_Result *res) {
    for (size_t i = 0; i < n; i++)
        if (!is_hex_prefix(tok[i])) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL,
                            "cohort %s: %s is not a bundle id (12 to 64 lowercase hex characters) or a selector", name,
                            tok[i]);
            return 0;
        }
    const char *p[1] = {srv_id_array(&r->arena, tok, n)};
    cg_error err = {0};
    PGresult *x = srv_store_resolve_prefixes(r->s->pool, p[0], &err);
    if (!x) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    out->n = n;
    out->given = tok;
    out->ids = cg_arena_zalloc(&r->arena, (n + 1) * sizeof *out->ids);
    int rows = PQntuples(x);
    for (int i = 0; i < rows; i++) {
        size_t k = strtoull(PQgetvalue(x, i, 0), NULL, 10) - 1;
        if (k >= n) continue;
        if (PQgetisnull(x, i, 1)) {
            PQclear(x);
            *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "no bundle with id %s", tok[k]);
            return 0;
        }
        if (out->ids[k]) {
            PQclear(x);
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "bundle id prefix %s is ambiguous", tok[k]);
            return 0;
        }
        out->ids[k] = cg_arena_strdup(&r->arena, PQgetvalue(x, i, 1));
    }
    PQclear(x);
    for (size_t k = 0; k < n; k++)
        if (!out->ids[k]) {
            *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "no bundle with id %s", tok[k]);
            return 0;
        }
    return 1;
}

int srv_cohort_resolve(srv_req *r, const char *name, const char *text, const cg_jv *json, srv_cohort *out,
                       enum MHD_Result *res) {
    cg_arena *a = &r->arena;
    memset(out, 0, sizeof *out);
    const char *selector = NULL;
    const char **tok = NULL;
    size_t n = 0;
    if (json) {
        if (json->type == CG_JSTR) {
            selector = cg_jv_as_str(json);
        } else if (json->type == CG_JARR) {
            n = cg_jv_len(json);
            tok = cg_arena_zalloc(a, (n + 1) * sizeof *tok);
            for (size_t i = 0; i < n; i++)
                if (!(tok[i] = cg_jv_as_str(cg_jv_at(json, i)))) {
                    *res = srv_fail(r, CG_R_BAD_REQUEST, NULL, "%s must be an array of bundle ids or a selector string",
                                    name);
                    return 0;
                }
        } else {
            *res = srv_fail(r, CG_R_BAD_REQUEST, NULL, "%s must be an array of bundle ids or a selector string", name);
            return 0;
        }
    } else if (!text || !*text) {
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "cohort %s is required (ids or a selector)", name);
        return 0;
    } else if (strchr(text, ':')) {
        selector = text;
    } else {
        for (const char *p = text; p; p = strchr(p, ',')) {
            n++;
            p++;
        }
        tok = cg_arena_zalloc(a, (n + 1) * sizeof *tok);
        const char *p = text;
        for (size_t i = 0; i < n; i++) {
            const char *e = strchr(p, ',');
            if (!e) e = p + strlen(p);
            tok[i] = cg_arena_strndup(a, p, (size_t)(e - p));
            p = *e ? e + 1 : e;
        }
    }
    int ok;
    if (selector) {
        if (!strncmp(selector, "implementation:", 15) && selector[15]) {
            ok = select_ids(r, name, SRV_SEL_IMPLEMENTATION, selector + 15, out, res);
        } else if (!strncmp(selector, "campaign:", 9) && selector[9]) {
            const char **ids;
            size_t m;
            if (!srv_campaign_published_ids(r, selector + 9, &ids, &m, res)) return 0;
            ok = select_ids(r, name, SRV_SEL_ID_ARRAY, srv_id_array(a, ids, m), out, res);
        } else if (!strncmp(selector, "commit:", 7) && selector[7]) { /* issue 15 */
            ok = select_ids(r, name, SRV_SEL_COMMIT, selector + 7, out, res);
        } else if (!strncmp(selector, "branch:", 7) && selector[7]) { /* its newest commit's cohort */
            ok = select_ids(r, name, SRV_SEL_BRANCH, selector + 7, out, res);
        } else {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL,
                            "unknown cohort selector %s (use campaign:<id>, implementation:<id>, commit:<sha> or "
                            "branch:<name>)",
                            selector);
            return 0;
        }
    } else {
        if (n == 0 || n > MAX_COHORT) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "cohort %s needs 1 to %d bundle ids", name, MAX_COHORT);
            return 0;
        }
        ok = resolve_tokens(r, name, tok, n, out, res);
    }
    if (ok && out->n == 0) {
        *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "cohort %s selects no bundle", name);
        return 0;
    }
    return ok;
}

int srv_facts_load(srv_req *r, const char *column, const char *const *ids, size_t n, const char **texts,
                   enum MHD_Result *res) {
    const char *p[1] = {srv_id_array(&r->arena, ids, n)};
    bool series = strcmp(column, "series_point") == 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        cg_error err = {0};
        PGresult *x = srv_store_facts_column(r->s->pool, p[0], series, &err);
        if (!x) {
            *res = srv_fail_unavailable(r, &err);
            return 0;
        }
        bool missing = false;
        for (int i = 0; i < PQntuples(x) && (size_t)i < n; i++) {
            if (PQgetisnull(x, i, 1)) {
                missing = true;
                if (attempt == 0 && srv_facts_backfill(r->s, ids[i], &err) < 0) {
                    PQclear(x);
                    *res = srv_fail_unavailable(r, &err);
                    return 0;
                }
                continue;
            }
            texts[i] = cg_arena_strndup(&r->arena, PQgetvalue(x, i, 1), (size_t)PQgetlength(x, i, 1));
        }
        PQclear(x);
        if (!missing) return 1;
    }
    cg_error err = {0};
    cg_err_set(&err, CG_EIO, "comparison facts still missing after backfill");
    *res = srv_fail_unavailable(r, &err);
    return 0;
}

/* ------------------------------------------------------------ /compare */

/* The stored cohort-row texts of a cohort. */
static const char **load_row_texts(srv_req *r, const srv_cohort *co, enum MHD_Result *res) {
    const char **texts = cg_arena_zalloc(&r->arena, (co->n + 1) * sizeof *texts);
    return srv_facts_load(r, "cohort_row", co->ids, co->n, texts, res) ? texts : NULL;
}

/* Parses them (no connection held). */
static int parse_rows(srv_req *r, const srv_cohort *co, const char **texts, cg_cohort_row **rows, enum MHD_Result *res) {
    *rows = cg_arena_zalloc(&r->arena, (co->n + 1) * sizeof **rows);
    for (size_t i = 0; i < co->n; i++) {
        cg_error err = {0};
        if (cg_cohort_row_parse(&r->arena, texts[i], strlen(texts[i]), &(*rows)[i], &err) < 0) {
            srv_log("error", "stored cohort row unreadable", "id", co->ids[i], "error", err.msg, NULL);
            *res = srv_fail(r, CG_R_INTERNAL, NULL, "stored comparison facts of %s are unreadable", co->ids[i]);
            return 0;
        }
    }
    return 1;
}

static enum MHD_Result compare(srv_req *r, const char *atext, const char *btext, const cg_jv *ajson, const cg_jv *bjson) {
    cg_arena *a = &r->arena;
    const char *re = srv_query(r, "require_eligible");
    bool require = re && (!strcmp(re, "1") || !strcmp(re, "true"));
    if (re && !require && strcmp(re, "0") && strcmp(re, "false"))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "require_eligible must be 0 or 1");
    cg_error err = {0};
    enum MHD_Result res;
    srv_cohort ca, cb;
    cg_cohort_row *ra, *rb;
    if (!srv_cohort_resolve(r, "a", atext, ajson, &ca, &res) || !srv_cohort_resolve(r, "b", btext, bjson, &cb, &res))
        return res;
    char key[65];
    srv_compare_cache_key(&ca, &cb, key);
    size_t len = 0;
    bool ineligible = false;
    char *hit = srv_compare_cache_get(key, &len, &ineligible);
    cg_jv *out = NULL;
    if (hit) {
        if (!(require && ineligible)) {
            const char *hdrs[] = {"Cache-Control", "no-store", NULL};
            res = srv_reply_bytes(r, 200, "application/json; charset=utf-8", hit, len, hdrs);
            cg_free(hit);
            return res;
        }
        cg_json_limits lim;
        cg_json_limits_default(&lim);
        out = cg_json_parse(a, hit, len, &lim, &err);
        cg_free(hit);
        if (!out) return srv_fail(r, CG_R_INTERNAL, NULL, "cached comparison unreadable");
    } else {
        const char **ta = load_row_texts(r, &ca, &res), **tb = ta ? load_row_texts(r, &cb, &res) : NULL;
        if (!tb || !parse_rows(r, &ca, ta, &ra, &res) || !parse_rows(r, &cb, tb, &rb, &res)) return res;
        out = cg_compare_rows(a, ra, ca.n, rb, cb.n, CG_CMP_VERIFIED_BUNDLES);
        ineligible = cg_comparison_is_ineligible(out);
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, out, true);
        cg_buf_putc(&b, '\n');
        srv_compare_cache_put(key, b.data, b.len, ineligible);
        if (!(require && ineligible)) {
            const char *hdrs[] = {"Cache-Control", "no-store", NULL};
            res = srv_reply_bytes(r, 200, "application/json; charset=utf-8", b.data, b.len, hdrs);
            cg_buf_free(&b);
            return res;
        }
        cg_buf_free(&b);
    }
    cg_buf m = CG_BUF_INIT;
    cg_comparison_ineligible_message(out, &m);
    res = srv_fail(r, CG_R_INELIGIBLE, out, "%s", m.data ? m.data : "comparison ineligible");
    cg_buf_free(&m);
    return res;
}

enum MHD_Result srv_h_compare_get(srv_req *r) { return compare(r, srv_query(r, "a"), srv_query(r, "b"), NULL, NULL); }

enum MHD_Result srv_h_compare_post(srv_req *r) {
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_depth = 8;
    cg_error err = {0};
    cg_jv *v = r->body.len ? cg_json_parse(&r->arena, r->body.data, r->body.len, &lim, &err) : NULL;
    if (!v)
        return srv_fail(r, CG_R_MALFORMED_JSON, NULL, "the body is not a JSON document%s%s", err.msg[0] ? ": " : "",
                        err.msg);
    if (v->type != CG_JOBJ || !cg_jv_get(v, "a") || !cg_jv_get(v, "b"))
        return srv_fail(r, CG_R_BAD_REQUEST, NULL, "the body must be {\"a\": [...], \"b\": [...]}");
    return compare(r, NULL, NULL, cg_jv_get(v, "a"), cg_jv_get(v, "b"));
}

/* ------------------------------------------------------------ /compare/spans */

typedef struct group {
    const char *kind, *hash; /* hash: lowercase hex of the path text's SHA-256 */
    const char *path;        /* text, filled from the path tree */
    uint64_t median;
    uint64_t runs;
} group;

/* Groups of one cohort, sorted by (kind, hash), aggregated in the database:
 * runs containing the path and the two middle per-run totals (equal for an odd
 * count); the median is their mean, rounded down. */
static int load_groups(srv_req *r, const srv_cohort *co, group **out, size_t *n, enum MHD_Result *res) {
    const char *p[1] = {srv_id_array(&r->arena, co->ids, co->n)};
    cg_error err = {0};
    PGresult *x = srv_store_span_groups(r->s->pool, p[0], &err);
    if (!x) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    int rows = PQntuples(x);
    group *g = cg_arena_zalloc(&r->arena, ((size_t)rows + 1) * sizeof *g);
    for (int i = 0; i < rows; i++) {
        uint64_t lo = strtoull(PQgetvalue(x, i, 3), NULL, 10), hi = strtoull(PQgetvalue(x, i, 4), NULL, 10);
        g[i].kind = cg_arena_strdup(&r->arena, PQgetvalue(x, i, 0));
        g[i].hash = cg_arena_strdup(&r->arena, PQgetvalue(x, i, 1));
        g[i].runs = strtoull(PQgetvalue(x, i, 2), NULL, 10);
        g[i].median = lo + (hi - lo) / 2;
    }
    PQclear(x);
    *out = g;
    *n = (size_t)rows;
    return 1;
}

/* The path tree of the cohorts' bundles: hash → (parent, name), text lengths
 * memoized so the size of an answer is known before any text is built. */
typedef struct ptree {
    cg_hstr by_hash;  /* hex hash → node */
    const char **name;
    size_t *parent;     /* SIZE_MAX at a root (or an unknown parent) */
    uint64_t *len;      /* text length; 0 = not computed yet */
    size_t n;
} ptree;

static void ptree_free(ptree *t) {
    cg_hstr_free(&t->by_hash);
    cg_free(t->name);
    cg_free(t->parent);
    cg_free(t->len);
}

static int load_tree(srv_req *r, const srv_cohort *ca, const srv_cohort *cb, ptree *t, enum MHD_Result *res) {
    const char **ids = cg_arena_zalloc(&r->arena, (ca->n + cb->n + 1) * sizeof *ids);
    memcpy(ids, ca->ids, ca->n * sizeof *ids);
    memcpy(ids + ca->n, cb->ids, cb->n * sizeof *ids);
    const char *p[1] = {srv_id_array(&r->arena, ids, ca->n + cb->n)};
    cg_error err = {0};
    PGresult *x = srv_store_span_nodes(r->s->pool, p[0], &err);
    if (!x) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    size_t n = (size_t)PQntuples(x);
    cg_hstr_init(&t->by_hash, 0);
    t->n = n;
    t->name = cg_xalloc(n + 1, sizeof *t->name);
    t->parent = cg_xalloc(n + 1, sizeof *t->parent);
    t->len = cg_xzalloc(n + 1, sizeof *t->len);
    const char **phex = cg_xalloc(n + 1, sizeof *phex);
    for (size_t i = 0; i < n; i++) {
        cg_hstr_put(&t->by_hash, cg_arena_strdup(&r->arena, PQgetvalue(x, (int)i, 0)), i, NULL);
        phex[i] = PQgetisnull(x, (int)i, 1) ? NULL : cg_arena_strdup(&r->arena, PQgetvalue(x, (int)i, 1));
        t->name[i] = cg_arena_strndup(&r->arena, PQgetvalue(x, (int)i, 2), (size_t)PQgetlength(x, (int)i, 2));
    }
    PQclear(x);
    for (size_t i = 0; i < n; i++) {
        size_t *k = phex[i] ? cg_hstr_get(&t->by_hash, phex[i]) : NULL;
        t->parent[i] = k && *k != i ? *k : SIZE_MAX;
    }
    cg_free(phex);
    return 1;
}

/* Text length of node k, memoized along its chain of unknown ancestors (an
 * explicit stack, no recursion). A chain longer than the tree, impossible
 * without a hash collision, is cut there. len[] holds length + 1 (0 = unknown). */
static uint64_t ptree_len(ptree *t, size_t k, size_t *stack) {
    size_t depth = 0, x = k;
    while (x != SIZE_MAX && !t->len[x] && depth < t->n) {
        stack[depth++] = x;
        x = t->parent[x];
    }
    uint64_t above = x != SIZE_MAX && t->len[x] ? t->len[x] : 0; /* parent's length + 1, or 0 */
    for (size_t q = depth; q-- > 0;) {
        size_t y = stack[q];
        t->len[y] = above + strlen(t->name[y]) + 1;
        above = t->len[y];
    }
    return t->len[k] - 1;
}

static const char *ptree_text(cg_arena *a, ptree *t, size_t k, size_t *stack) {
    uint64_t len = ptree_len(t, k, stack);
    char *out = cg_arena_alloc(a, len + 1), *end = out + len;
    *end = 0;
    for (size_t x = k; x != SIZE_MAX && end > out; x = t->parent[x]) {
        size_t nl = strlen(t->name[x]);
        if (nl > (size_t)(end - out)) break;
        end -= nl;
        memcpy(end, t->name[x], nl);
        if (end > out) *--end = '/';
    }
    return out;
}

/* Backfills the facts of cohort members that have none. 1, or 0 after answering. */
static int facts_ensure(srv_req *r, const srv_cohort *co, enum MHD_Result *res) {
    const char *p[1] = {srv_id_array(&r->arena, co->ids, co->n)};
    cg_error err = {0};
    PGresult *x = srv_store_facts_missing(r->s->pool, p[0], &err);
    if (!x) {
        *res = srv_fail_unavailable(r, &err);
        return 0;
    }
    for (int i = 0; i < PQntuples(x); i++)
        if (srv_facts_backfill(r->s, PQgetvalue(x, i, 0), &err) < 0) {
            PQclear(x);
            *res = srv_fail_unavailable(r, &err);
            return 0;
        }
    PQclear(x);
    return 1;
}

typedef struct diffrow {
    const group *a, *b;
    int64_t delta;
} diffrow;

static int cmp_diff(const void *x, const void *y) {
    const diffrow *p = x, *q = y;
    uint64_t dp = p->delta < 0 ? (uint64_t)0 - (uint64_t)p->delta : (uint64_t)p->delta;
    uint64_t dq = q->delta < 0 ? (uint64_t)0 - (uint64_t)q->delta : (uint64_t)q->delta;
    if (dp != dq) return dp > dq ? -1 : 1;
    int k = strcmp(p->a->kind, q->a->kind);
    return k ? k : strcmp(p->a->path, q->a->path);
}

static int cmp_group_key(const group *a, const group *b) {
    int k = strcmp(a->kind, b->kind);
    return k ? k : strcmp(a->hash, b->hash);
}

static int cmp_group_text(const void *x, const void *y) {
    const group *a = *(const group *const *)x, *b = *(const group *const *)y;
    int k = strcmp(a->kind, b->kind);
    return k ? k : strcmp(a->path, b->path);
}

/* Fills the path text of every group in g[0..n) (tree node by hash). */
static void fill_texts(cg_arena *a, ptree *t, group **g, size_t n, size_t *stack) {
    for (size_t i = 0; i < n; i++) {
        size_t *k = cg_hstr_get(&t->by_hash, g[i]->hash);
        g[i]->path = k ? ptree_text(a, t, *k, stack) : g[i]->hash;
    }
}

static uint64_t text_bytes(ptree *t, group **g, size_t n, size_t *stack) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        size_t *k = cg_hstr_get(&t->by_hash, g[i]->hash);
        sum += k ? ptree_len(t, *k, stack) : 64;
    }
    return sum;
}

static cg_jv *paths_json(cg_arena *a, group **g, size_t n) {
    qsort(g, n, sizeof *g, cmp_group_text);
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, arr, cg_jv_str(a, g[i]->path));
    return arr;
}

static cg_jv *diff_json(cg_arena *a, const srv_cohort *ca, const srv_cohort *cb, diffrow *rows, size_t nr,
                        group **oa, size_t noa, group **ob, size_t nob) {
    qsort(rows, nr, sizeof *rows, cmp_diff);
    cg_jv *out = cg_jv_obj(a), *arr = cg_jv_arr(a);
    cg_jv_obj_put(a, out, "schema", cg_jv_str(a, "candle-graph/span-diff/1"));
    cg_jv *ja = cg_jv_obj(a), *jb = cg_jv_obj(a);
    cg_jv_obj_put(a, ja, "runs", cg_jv_u64(a, ca->n));
    cg_jv_obj_put(a, jb, "runs", cg_jv_u64(a, cb->n));
    cg_jv_obj_put(a, out, "a", ja);
    cg_jv_obj_put(a, out, "b", jb);
    for (size_t k = 0; k < nr; k++) {
        cg_jv *o = cg_jv_obj(a);
        cg_jv_obj_put(a, o, "path", cg_jv_str(a, rows[k].a->path));
        cg_jv_obj_put(a, o, "kind", cg_jv_str(a, rows[k].a->kind));
        cg_jv_obj_put(a, o, "a_median_ns", cg_jv_u64(a, rows[k].a->median));
        cg_jv_obj_put(a, o, "b_median_ns", cg_jv_u64(a, rows[k].b->median));
        cg_jv_obj_put(a, o, "delta_ns", cg_jv_i64(a, rows[k].delta));
        cg_jv_obj_put(a, o, "delta_percent",
                      rows[k].a->median ? cg_jv_f64(a, (double)rows[k].delta * 100.0 / (double)rows[k].a->median)
                                        : cg_jv_null(a));
        cg_jv_obj_put(a, o, "a_count", cg_jv_u64(a, rows[k].a->runs));
        cg_jv_obj_put(a, o, "b_count", cg_jv_u64(a, rows[k].b->runs));
        cg_jv_arr_push(a, arr, o);
    }
    cg_jv_obj_put(a, out, "rows", arr);
    cg_jv_obj_put(a, out, "only_a", paths_json(a, oa, noa));
    cg_jv_obj_put(a, out, "only_b", paths_json(a, ob, nob));
    return out;
}

/* Loads everything /compare/spans needs (a pooled connection per statement). */
static int spans_load(srv_req *r, srv_cohort *ca, srv_cohort *cb, group **ga, size_t *na, group **gb, size_t *nb,
                      ptree *t, enum MHD_Result *res) {
    /* bundles from before migration 0003 get their facts first */
    int ok = srv_cohort_resolve(r, "a", srv_query(r, "a"), NULL, ca, res) &&
             srv_cohort_resolve(r, "b", srv_query(r, "b"), NULL, cb, res) && facts_ensure(r, ca, res) &&
             facts_ensure(r, cb, res) && load_groups(r, ca, ga, na, res) && load_groups(r, cb, gb, nb, res) &&
             load_tree(r, ca, cb, t, res);
    return ok;
}

enum MHD_Result srv_h_compare_spans(srv_req *r) {
    cg_arena *a = &r->arena;
    enum MHD_Result res;
    srv_cohort ca, cb;
    group *ga, *gb;
    size_t na, nb;
    ptree t;
    memset(&t, 0, sizeof t);
    if (!spans_load(r, &ca, &cb, &ga, &na, &gb, &nb, &t, &res)) {
        ptree_free(&t);
        return res;
    }
    diffrow *rows = cg_xalloc(na + nb + 1, sizeof *rows);
    group **oa = cg_xalloc(na + 1, sizeof *oa), **ob = cg_xalloc(nb + 1, sizeof *ob);
    group **named = cg_xalloc(na + nb + 1, sizeof *named);
    size_t *stack = cg_xalloc(t.n + 1, sizeof *stack);
    size_t nr = 0, noa = 0, nob = 0, nn = 0, i = 0, j = 0;
    while (i < na || j < nb) {
        int k = i >= na ? 1 : j >= nb ? -1 : cmp_group_key(&ga[i], &gb[j]);
        if (k < 0) {
            oa[noa++] = named[nn++] = &ga[i++];
        } else if (k > 0) {
            ob[nob++] = named[nn++] = &gb[j++];
        } else {
            rows[nr].a = named[nn++] = &ga[i];
            rows[nr].b = &gb[j];
            rows[nr].delta = (int64_t)gb[j].median - (int64_t)ga[i].median; /* totals are ≤ 2^63-1 */
            nr++;
            i++;
            j++;
        }
    }
    /* the answer's path texts are the only part that grows with depth: bounded before they exist */
    uint64_t bytes = text_bytes(&t, named, nn, stack);
    if (bytes > SRV_SPAN_DIFF_MAX_PATH_BYTES) {
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "limit", cg_jv_str(a, "span_diff_path_bytes"));
        cg_jv_obj_put(a, d, "max", cg_jv_u64(a, SRV_SPAN_DIFF_MAX_PATH_BYTES));
        res = srv_fail(r, CG_R_PAYLOAD_TOO_LARGE, d,
                       "the span diff would carry %" PRIu64 " bytes of path text (limit %llu); compare "
                       "bundles with fewer or shallower spans",
                       bytes, (unsigned long long)SRV_SPAN_DIFF_MAX_PATH_BYTES);
    } else {
        fill_texts(a, &t, named, nn, stack);
        res = srv_reply_json(r, 200, diff_json(a, &ca, &cb, rows, nr, oa, noa, ob, nob));
    }
    cg_free(rows);
    cg_free(oa);
    cg_free(ob);
    cg_free(named);
    cg_free(stack);
    ptree_free(&t);
    return res;
}
