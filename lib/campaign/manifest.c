/* manifest.c — campaign/1 parsing, validation and bundle path resolution. */
#include "campaign/campaign.h"

#include "base/alloc.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "bundle/manifest_wire.h"
#include "bundle/verify.h"

/* campaign.rs PlannedCapture / CampaignManifest: one table each, read and
 * written through manifest_wire's engine (serde's semantics and positions). */
typedef struct manifest_doc {
    const char *schema;
    cg_campaign_manifest m;
} manifest_doc;

static const cg_bw_field planned_fields[] = {
    {"capture_step", CG_BW_U64, offsetof(cg_planned_capture, capture_step), 0, NULL},
    {"bundle", CG_BW_STR, offsetof(cg_planned_capture, bundle), 0, NULL},
};
static const cg_bw_record planned_record = CG_BW_RECORD("struct PlannedCapture", cg_planned_capture, planned_fields);

static const cg_bw_field manifest_fields[] = {
    {"schema", CG_BW_STR, offsetof(manifest_doc, schema), 0, NULL},
    {"campaign_id", CG_BW_STR, offsetof(manifest_doc, m.campaign_id), 0, NULL},
    {"entrypoint", CG_BW_STR, offsetof(manifest_doc, m.entrypoint), 0, NULL},
    {"planned", CG_BW_SEQ, offsetof(manifest_doc, m.planned), offsetof(manifest_doc, m.n_planned), &planned_record},
};
static const cg_bw_record manifest_record = CG_BW_RECORD("struct CampaignManifest", manifest_doc, manifest_fields);

/* A member's string holds a NUL (\u0000) (the shape check made it a string). */
static bool str_has_nul(const cg_jv *obj, const char *key) {
    const cg_jv *s = cg_jv_get(obj, key);
    return s && s->type == CG_JSTR && !cg_jv_as_cstr(s);
}

/* The manifest's strings are C strings from here on: one holding a NUL would
 * be cut there (`"b1\u0000x"` naming bundle b1), so it is refused instead of
 * misread (docs/compatibility.md: the crate keeps the NUL). v decoded already. */
static int refuse_nul(const cg_jv *v, cg_error *err) {
    static const char *const top[] = {"schema", "campaign_id", "entrypoint"};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++)
        if (str_has_nul(v, top[i]))
            return cg_err_set(err, CG_EPARSE, "campaign manifest %s contains NUL (\\u0000), which campaign "
                              "strings must not", top[i]);
    const cg_jv *planned = cg_jv_get(v, "planned");
    for (size_t i = 0; planned && i < cg_jv_len(planned); i++)
        if (str_has_nul(cg_jv_at(planned, i), "bundle"))
            return cg_err_set(err, CG_EPARSE, "campaign manifest planned[%zu].bundle contains NUL (\\u0000), which "
                              "campaign strings must not", i);
    return 0;
}

/* serde_json::from_slice's part: JSON and field types; the schema goes to *schema. */
static int parse_shape(cg_arena *a, const char *text, size_t len, cg_campaign_manifest *out, const char **schema_out,
                       cg_error *err) {
    memset(out, 0, sizeof *out);
    cg_jv *v = cg_json_parse(a, text, len, NULL, err);
    if (!v) return -1;
    manifest_doc doc;
    if (cg_bw_decode(&manifest_record, a, v, text, len, &doc, err) != 0 || refuse_nul(v, err) != 0) return -1;
    *out = doc.m;
    *schema_out = doc.schema;
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
    cg_free(r);
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
    cg_free(rep);
    return rc;
}

int cg_campaign_manifest_load(cg_arena *a, const char *path, cg_campaign_manifest *out, cg_error *err) {
    size_t len;
    char *text = cg_read_file_io(path, 64u << 20, &len, err);
    if (!text) return cg_err_context(err, "read campaign manifest %s", path);
    const char *schema = NULL;
    int rc = parse_shape(a, text, len, out, &schema, err);
    cg_free(text);
    /* JSON/shape errors get the parse context, validation errors the validate context (the crate's) */
    if (rc != 0) return cg_err_context(err, "parse campaign manifest %s", path);
    if (check_schema_and_validate(out, schema, err) != 0) return cg_err_context(err, "validate campaign manifest %s", path);
    return 0;
}

cg_jv *cg_campaign_manifest_to_json(cg_arena *a, const cg_campaign_manifest *m) {
    manifest_doc doc = {CG_CAMPAIGN_SCHEMA, *m};
    return cg_bw_encode(a, &manifest_record, &doc);
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
