/* manifest_wire.c — the bundle envelopes' tables and the decoder/encoder
 * they drive (manifest_wire.h). */
#include "bundle/manifest_wire.h"

#include <stdarg.h>
#include <string.h>

#include "bundle/manifest.h"
#include "bundle/publication.h"
#include "bundle/verify.h"
#include "trace/trace.h"

/* ---------------------------------------------------------------- tables */

#define F(nm, ty, st, mem) {nm, ty, offsetof(st, mem), 0, NULL}
#define FLEN(nm, st, mem, len) {nm, CG_BW_STR, offsetof(st, mem), 1 + offsetof(st, len), NULL}
#define FSUB(nm, ty, st, mem, sub) {nm, ty, offsetof(st, mem), 0, sub}

/* artifact.rs BundleFile / BundleManifest */
static const cg_bw_field bundle_file_fields[] = {
    FLEN("path", cg_bundle_file, path, path_len),
    F("bytes", CG_BW_U64, cg_bundle_file, bytes),
    F("sha256", CG_BW_STR, cg_bundle_file, sha256),
};
const cg_bw_record cg_bw_bundle_file = CG_BW_RECORD("struct BundleFile", cg_bundle_file, bundle_file_fields);

static const cg_bw_field bundle_manifest_fields[] = {
    F("schema", CG_BW_STR, cg_bundle_manifest, schema),
    FLEN("run_id", cg_bundle_manifest, run_id, run_id_len),
    {"files", CG_BW_SEQ, offsetof(cg_bundle_manifest, files), offsetof(cg_bundle_manifest, n_files), &cg_bw_bundle_file},
};
const cg_bw_record cg_bw_bundle_manifest =
    CG_BW_RECORD("struct BundleManifest", cg_bundle_manifest, bundle_manifest_fields);

/* artifact.rs BundleVerificationReceipt */
static const cg_bw_field bundle_receipt_fields[] = {
    FSUB("schema", CG_BW_CONST, cg_bundle_receipt, run_id, CG_BUNDLE_VERIFICATION_SCHEMA),
    FSUB("bundle_schema", CG_BW_CONST, cg_bundle_receipt, run_id, CG_BUNDLE_SCHEMA),
    F("run_id", CG_BW_CHARS, cg_bundle_receipt, run_id),
    FSUB("manifest_path", CG_BW_CONST, cg_bundle_receipt, run_id, CG_BUNDLE_MANIFEST_NAME),
    F("manifest_sha256", CG_BW_CHARS, cg_bundle_receipt, manifest_sha256),
    F("files_verified", CG_BW_U64, cg_bundle_receipt, files_verified),
    F("bytes_verified", CG_BW_U64, cg_bundle_receipt, bytes_verified),
};
const cg_bw_record cg_bw_bundle_receipt =
    CG_BW_RECORD("struct BundleVerificationReceipt", cg_bundle_receipt, bundle_receipt_fields);

/* publication.rs PublicationReceipt (run_id is the verification's) */
static const char *const publication_status_names[] = {
    [CG_PUBLICATION_PUBLISHED] = "published", [CG_PUBLICATION_ALREADY_PUBLISHED] = "already_published"};
static const cg_bw_field publication_receipt_fields[] = {
    FSUB("schema", CG_BW_CONST, cg_publication_receipt, status, CG_PUBLICATION_SCHEMA),
    FSUB("status", CG_BW_ENUM, cg_publication_receipt, status, publication_status_names),
    F("bundle_path", CG_BW_CHARS, cg_publication_receipt, bundle_path),
    F("run_id", CG_BW_CHARS, cg_publication_receipt, verification.run_id),
    FSUB("verification", CG_BW_STRUCT, cg_publication_receipt, verification, &cg_bw_bundle_receipt),
};
const cg_bw_record cg_bw_publication_receipt =
    CG_BW_RECORD("struct PublicationReceipt", cg_publication_receipt, publication_receipt_fields);

/* ---------------------------------------------------------------- decoding */

#define BW_DEPTH 8

/* Where a value sits: the steps from the root, for serde_json's position. */
typedef struct bw_at {
    const char *text;
    size_t len, n;
    cg_json_step steps[BW_DEPTH];
} bw_at;

static int bw_fail(const bw_at *at, cg_json_at where, cg_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bw_fail(const bw_at *at, cg_json_at where, cg_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(err, CG_EPARSE, fmt, ap);
    va_end(ap);
    cg_json_err_at(err, at->text, cg_json_locate(at->text, at->len, at->steps, at->n, where));
    return -1;
}

static int bw_invalid(const bw_at *at, const cg_jv *v, const char *expected, cg_error *err) {
    cg_buf b = CG_BUF_INIT;
    bool negative = v->type == CG_JINT && v->u.i.neg && !strcmp(expected, "u64");
    cg_buf_puts(&b, negative ? "invalid value: " : "invalid type: ");
    cg_serde_unexpected(&b, v);
    cg_buf_printf(&b, ", expected %s", expected);
    /* serde peeks a map or a sequence without reading it */
    bool peeked = v->type == CG_JOBJ || v->type == CG_JARR;
    int rc = bw_fail(at, peeked ? CG_JSON_VALUE_START : CG_JSON_VALUE_END, err, "%s", b.data);
    cg_buf_free(&b);
    return rc;
}

static int bw_struct(const cg_bw_record *rec, cg_arena *a, const cg_jv *obj, bw_at *at, void *out, cg_error *err);

static int bw_field(const cg_bw_field *f, cg_arena *a, const cg_jv *v, bw_at *at, char *base, cg_error *err) {
    switch (f->type) {
    case CG_BW_CONST:
    case CG_BW_STR:
        if (v->type != CG_JSTR) return bw_invalid(at, v, "a string", err);
        *(const char **)(base + f->off) = v->u.str.s;
        if (f->aux) *(size_t *)(base + f->aux - 1) = v->u.str.len;
        return 0;
    case CG_BW_U64:
        if (!cg_jv_as_u64(v, (uint64_t *)(base + f->off))) return bw_invalid(at, v, "u64", err);
        return 0;
    case CG_BW_STRUCT: return bw_struct(f->sub, a, v, at, base + f->off, err);
    case CG_BW_SEQ: {
        const cg_bw_record *sub = f->sub;
        if (v->type != CG_JARR) return bw_invalid(at, v, "a sequence", err);
        size_t n = cg_jv_len(v);
        char *items = n ? cg_arena_zalloc(a, n * sub->size) : NULL;
        if (at->n == BW_DEPTH) return bw_fail(at, CG_JSON_VALUE_END, err, "%s nested too deeply", sub->expecting);
        for (size_t i = 0; i < n; i++) {
            at->steps[at->n++] = (cg_json_step){NULL, i};
            int rc = bw_struct(sub, a, cg_jv_at(v, i), at, items + i * sub->size, err);
            at->n--;
            if (rc) return rc;
        }
        *(void **)(base + f->off) = items;
        *(size_t *)(base + f->aux) = n;
        return 0;
    }
    case CG_BW_CHARS:
    case CG_BW_ENUM:
    case CG_BW_JV: break;
    }
    return bw_fail(at, CG_JSON_VALUE_END, err, "field `%s` cannot be read", f->name);
}

static int bw_struct(const cg_bw_record *rec, cg_arena *a, const cg_jv *obj, bw_at *at, void *out, cg_error *err) {
    if (obj->type != CG_JOBJ) return bw_invalid(at, obj, rec->expecting, err);
    if (at->n == BW_DEPTH) return bw_fail(at, CG_JSON_VALUE_END, err, "%s nested too deeply", rec->expecting);
    bool seen[16] = {false};
    for (size_t m = 0; m < obj->u.obj.n; m++) {
        const cg_jmember *mem = &obj->u.obj.m[m];
        size_t k = 0;
        while (k < rec->n_fields && !(strlen(rec->fields[k].name) == mem->key_len &&
                                      !memcmp(rec->fields[k].name, mem->key, mem->key_len)))
            k++;
        if (k == rec->n_fields || k >= sizeof seen) continue; /* unknown fields are ignored */
        at->steps[at->n++] = (cg_json_step){NULL, m};
        int rc = seen[k] ? bw_fail(at, CG_JSON_KEY_END, err, "duplicate field `%s`", rec->fields[k].name)
                         : bw_field(&rec->fields[k], a, mem->val, at, out, err);
        at->n--;
        if (rc) return rc;
        seen[k] = true;
    }
    for (size_t k = 0; k < rec->n_fields; k++)
        if (!seen[k]) return bw_fail(at, CG_JSON_VALUE_END, err, "missing field `%s`", rec->fields[k].name);
    return 0;
}

int cg_bw_decode(const cg_bw_record *rec, cg_arena *a, const cg_jv *root, const char *text, size_t len,
                 void *out, cg_error *err) {
    memset(out, 0, rec->size);
    bw_at at = {text, len, 0, {{NULL, 0}}};
    return bw_struct(rec, a, root, &at, out, err);
}

/* ---------------------------------------------------------------- encoding */

cg_jv *cg_bw_encode(cg_arena *a, const cg_bw_record *rec, const void *in) {
    const char *base = in;
    cg_jv *o = cg_jv_obj(a);
    for (size_t k = 0; k < rec->n_fields; k++) {
        const cg_bw_field *f = &rec->fields[k];
        const void *p = base + f->off;
        cg_jv *v = NULL;
        switch (f->type) {
        case CG_BW_CONST: v = cg_jv_str_nocopy(a, f->sub); break;
        case CG_BW_STR: {
            const char *s = *(const char *const *)p;
            size_t n = f->aux ? *(const size_t *)(base + f->aux - 1) : 0;
            v = cg_jv_strn(a, s, n ? n : strlen(s));
            break;
        }
        case CG_BW_CHARS: v = cg_jv_str(a, p); break;
        case CG_BW_U64: v = cg_jv_u64(a, *(const uint64_t *)p); break;
        case CG_BW_ENUM: v = cg_jv_str_nocopy(a, ((const char *const *)f->sub)[*(const int *)p]); break;
        case CG_BW_STRUCT: v = cg_bw_encode(a, f->sub, p); break;
        case CG_BW_SEQ: {
            const cg_bw_record *sub = f->sub;
            const char *items = *(const char *const *)p;
            size_t n = *(const size_t *)(base + f->aux);
            v = cg_jv_arr(a);
            for (size_t i = 0; i < n; i++) cg_jv_arr_push(a, v, cg_bw_encode(a, sub, items + i * sub->size));
            break;
        }
        case CG_BW_JV: v = *(cg_jv *const *)p; break;
        }
        cg_jv_obj_put(a, o, f->name, v);
    }
    return o;
}
