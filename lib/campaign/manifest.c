/* manifest.c — campaign/1 parsing, validation and bundle path resolution. */
#include "campaign/campaign.h"

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "bundle/verify.h"

static int field_str(cg_arena *a, const cg_jv *o, const char *key, const char **out, cg_error *err) {
    const char *s = cg_jv_as_str(cg_jv_get(o, key));
    if (!s) return cg_err_set(err, CG_EPARSE, "campaign manifest field %s must be a string", key);
    *out = cg_arena_strdup(a, s);
    return 0;
}

/* JSON + field types (serde's part); the schema string goes to *schema. */
static int parse_shape(cg_arena *a, const char *text, size_t len, cg_campaign_manifest *out, const char **schema_out,
                       cg_error *err) {
    memset(out, 0, sizeof *out);
    cg_jv *v = cg_json_parse(a, text, len, NULL, err);
    if (!v) return -1;
    if (v->type != CG_JOBJ) return cg_err_set(err, CG_EPARSE, "campaign manifest must be a JSON object");
    const char *schema = NULL;
    if (field_str(a, v, "schema", &schema, err) || field_str(a, v, "campaign_id", &out->campaign_id, err) ||
        field_str(a, v, "entrypoint", &out->entrypoint, err))
        return -1;
    const cg_jv *planned = cg_jv_get(v, "planned");
    if (!planned || planned->type != CG_JARR)
        return cg_err_set(err, CG_EPARSE, "campaign manifest field planned must be an array");
    out->n_planned = cg_jv_len(planned);
    out->planned = cg_arena_zalloc(a, (out->n_planned ? out->n_planned : 1) * sizeof *out->planned);
    for (size_t i = 0; i < out->n_planned; i++) {
        const cg_jv *p = cg_jv_at(planned, i);
        if (p->type != CG_JOBJ ||
            !cg_jv_as_u64(cg_jv_get(p, "capture_step"), &out->planned[i].capture_step) ||
            !cg_jv_as_str(cg_jv_get(p, "bundle")))
            return cg_err_set(err, CG_EPARSE,
                              "campaign manifest planned capture %zu needs capture_step (u64) and bundle (string)",
                              i + 1);
        out->planned[i].bundle = cg_arena_strdup(a, cg_jv_as_str(cg_jv_get(p, "bundle")));
    }
    *schema_out = schema;
    return 0;
}

static int check_schema_and_validate(const cg_campaign_manifest *out, const char *schema, cg_error *err) {
    if (strcmp(schema, CG_CAMPAIGN_SCHEMA) != 0)
        return cg_err_set(err, CG_EINVAL, "unsupported campaign schema %s; expected %s", CG_QUOTE(schema),
                          CG_QUOTE(CG_CAMPAIGN_SCHEMA));
    return cg_campaign_manifest_validate(out, err);
}

int cg_campaign_manifest_parse(cg_arena *a, const char *text, size_t len, cg_campaign_manifest *out,
                               cg_error *err) {
    const char *schema = NULL;
    if (parse_shape(a, text, len, out, &schema, err) == 0 && check_schema_and_validate(out, schema, err) == 0) return 0;
    return cg_err_reason(err, err && err->code == CG_ENOMEM ? CG_R_NONE : CG_R_BAD_REQUEST);
}

/* Indices sorted by (capture_step, index) or (bundle, index): the entries after
 * the first of each run of equal keys are the ones that repeat an earlier one. */
typedef struct plan_ref {
    const cg_planned_capture *p;
    size_t i;
} plan_ref;

static int by_step(const void *x, const void *y) {
    const plan_ref *a = x, *b = y;
    if (a->p->capture_step != b->p->capture_step) return a->p->capture_step < b->p->capture_step ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static int by_bundle(const void *x, const void *y) {
    const plan_ref *a = x, *b = y;
    int c = strcmp(a->p->bundle, b->p->bundle);
    return c ? c : (a->i < b->i ? -1 : a->i > b->i);
}

int cg_campaign_manifest_validate(const cg_campaign_manifest *m, cg_error *err) {
    if (cg_str_blank(m->campaign_id))
        return cg_err_set(err, CG_EINVAL, "campaign manifest requires a non-empty campaign_id");
    if (cg_str_blank(m->entrypoint))
        return cg_err_set(err, CG_EINVAL, "campaign manifest requires a non-empty entrypoint");
    if (m->n_planned == 0)
        return cg_err_set(err, CG_EINVAL, "campaign manifest requires at least one planned capture");
    /* repeats found by sorting (O(n log n); a pairwise scan let a large plan burn CPU for minutes) */
    size_t n = m->n_planned;
    plan_ref *r = cg_xalloc(n, sizeof *r);
    unsigned char *rep = cg_xzalloc(n, 1); /* bit 0: repeats a step, bit 1: repeats a bundle */
    for (size_t i = 0; i < n; i++) r[i] = (plan_ref){&m->planned[i], i};
    qsort(r, n, sizeof *r, by_step);
    for (size_t j = 1; j < n; j++)
        if (r[j].p->capture_step == r[j - 1].p->capture_step) rep[r[j].i] |= 1;
    qsort(r, n, sizeof *r, by_bundle);
    for (size_t j = 1; j < n; j++)
        if (!strcmp(r[j].p->bundle, r[j - 1].p->bundle)) rep[r[j].i] |= 2;
    free(r);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const cg_planned_capture *p = &m->planned[i];
        if (rep[i] & 1)
            rc = cg_err_set(err, CG_EINVAL, "campaign manifest plans duplicate capture_step %llu",
                            (unsigned long long)p->capture_step);
        else if (!cg_campaign_bundle_path_is_safe(p->bundle))
            rc = cg_err_set(err, CG_EINVAL,
                            "campaign manifest has an unsafe bundle path %s; bundle paths must be non-empty "
                            "relative paths without `..` or backslashes",
                            CG_QUOTE(p->bundle));
        else if (rep[i] & 2)
            rc = cg_err_set(err, CG_EINVAL, "campaign manifest plans duplicate bundle path %s", CG_QUOTE(p->bundle));
    }
    free(rep);
    return rc;
}

int cg_campaign_manifest_load(cg_arena *a, const char *path, cg_campaign_manifest *out, cg_error *err) {
    size_t len;
    char *text = cg_read_file(path, 64u << 20, &len, err);
    if (!text) return cg_err_context(err, "read campaign manifest %s", path);
    const char *schema = NULL;
    int rc = parse_shape(a, text, len, out, &schema, err);
    free(text);
    /* JSON/shape errors get the parse context, validation errors the validate context (the crate's) */
    if (rc != 0) return cg_err_context(err, "parse campaign manifest %s", path);
    if (check_schema_and_validate(out, schema, err) != 0) return cg_err_context(err, "validate campaign manifest %s", path);
    return 0;
}

cg_jv *cg_campaign_manifest_to_json(cg_arena *a, const cg_campaign_manifest *m) {
    cg_jv *o = cg_jv_obj(a), *arr = cg_jv_arr(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_CAMPAIGN_SCHEMA));
    cg_jv_obj_put(a, o, "campaign_id", cg_jv_str(a, m->campaign_id));
    cg_jv_obj_put(a, o, "entrypoint", cg_jv_str(a, m->entrypoint));
    for (size_t i = 0; i < m->n_planned; i++) {
        cg_jv *p = cg_jv_obj(a);
        cg_jv_obj_put(a, p, "capture_step", cg_jv_u64(a, m->planned[i].capture_step));
        cg_jv_obj_put(a, p, "bundle", cg_jv_str(a, m->planned[i].bundle));
        cg_jv_arr_push(a, arr, p);
    }
    cg_jv_obj_put(a, o, "planned", arr);
    return o;
}

char *cg_campaign_resolve_bundle(cg_arena *a, const char *manifest_path, const char *bundle) {
    char parent[4096];
    cg_path_parent(manifest_path, parent, sizeof parent);
    if (!parent[0]) return cg_arena_printf(a, "./%s", bundle);
    return cg_path_join_arena(a, parent, bundle);
}

bool cg_campaign_bundle_path_is_safe(const char *path) {
    if (!path[0] || strchr(path, '\\') || path[0] == '/') return false;
    bool first = true;
    for (const char *s = path; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') return false;
        if (n == 1 && s[0] == '.' && first) return false; /* a leading "." is Component::CurDir */
        if (n) first = false;
        s += n;
        while (*s == '/') s++;
    }
    return true;
}
