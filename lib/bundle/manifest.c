/* manifest.c — bundle/1 manifest parse/serialize (§1.2). */
#include "bundle/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int field_str(const cg_jv *obj, const char *key, const char *where, const char **s, size_t *len,
                     cg_error *err) {
    const cg_jv *v = cg_jv_get(obj, key);
    if (!v) return cg_err_set(err, CG_EPARSE, "missing field `%s`%s", key, where);
    if (v->type != CG_JSTR) return cg_err_set(err, CG_EPARSE, "invalid type for `%s`%s: expected a string", key, where);
    *s = v->u.str.s;
    if (len) *len = v->u.str.len;
    return 0;
}

static int parse_manifest(cg_arena *a, const char *text, size_t len, cg_bundle_manifest *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    cg_jv *root = cg_json_parse(a, text, len, &lim, err);
    if (!root) return -1;
    if (root->type != CG_JOBJ) return cg_err_set(err, CG_EPARSE, "invalid type: expected struct BundleManifest");
    const char *dup = cg_jv_obj_dup_key(root);
    if (dup) return cg_err_set(err, CG_EPARSE, "duplicate field `%s`", dup);
    if (field_str(root, "schema", "", &out->schema, NULL, err) != 0) return -1;
    if (field_str(root, "run_id", "", &out->run_id, &out->run_id_len, err) != 0) return -1;
    const cg_jv *files = cg_jv_get(root, "files");
    if (!files) return cg_err_set(err, CG_EPARSE, "missing field `files`");
    if (files->type != CG_JARR) return cg_err_set(err, CG_EPARSE, "invalid type for `files`: expected a sequence");
    size_t n = cg_jv_len(files);
    out->files = n ? cg_arena_zalloc(a, n * sizeof *out->files) : NULL;
    out->n_files = n;
    for (size_t i = 0; i < n; i++) {
        const cg_jv *f = cg_jv_at(files, i);
        char where[64];
        snprintf(where, sizeof where, " in files[%zu]", i);
        if (f->type != CG_JOBJ)
            return cg_err_set(err, CG_EPARSE, "invalid type for files[%zu]: expected struct BundleFile", i);
        const char *fd = cg_jv_obj_dup_key(f);
        if (fd) return cg_err_set(err, CG_EPARSE, "duplicate field `%s`%s", fd, where);
        cg_bundle_file *bf = &out->files[i];
        if (field_str(f, "path", where, &bf->path, &bf->path_len, err) != 0) return -1;
        const cg_jv *b = cg_jv_get(f, "bytes");
        if (!b) return cg_err_set(err, CG_EPARSE, "missing field `bytes`%s", where);
        if (!cg_jv_as_u64(b, &bf->bytes))
            return cg_err_set(err, CG_EPARSE, "invalid type for `bytes`%s: expected u64", where);
        if (field_str(f, "sha256", where, &bf->sha256, NULL, err) != 0) return -1;
    }
    return 0;
}

int cg_bundle_manifest_parse(cg_arena *a, const char *text, size_t len, cg_bundle_manifest *out, cg_error *err) {
    if (parse_manifest(a, text, len, out, err) == 0) return 0;
    return cg_err_reason(err, err && err->code == CG_ENOMEM ? CG_R_NONE : CG_R_MALFORMED_MANIFEST);
}

static int file_cmp(const void *x, const void *y) {
    const cg_bundle_file *a = x, *b = y;
    size_t n = a->path_len < b->path_len ? a->path_len : b->path_len;
    int c = memcmp(a->path, b->path, n);
    if (c) return c;
    return a->path_len < b->path_len ? -1 : a->path_len > b->path_len;
}

void cg_bundle_manifest_sort(cg_bundle_manifest *m) {
    if (m->n_files > 1) qsort(m->files, m->n_files, sizeof *m->files, file_cmp);
}

void cg_bundle_manifest_write(cg_buf *out, const cg_bundle_manifest *m) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "schema", cg_jv_str_nocopy(&a, m->schema));
    cg_jv_obj_put(&a, o, "run_id", cg_jv_strn(&a, m->run_id, m->run_id_len ? m->run_id_len : strlen(m->run_id)));
    cg_jv *arr = cg_jv_arr(&a);
    for (size_t i = 0; i < m->n_files; i++) {
        const cg_bundle_file *f = &m->files[i];
        cg_jv *fo = cg_jv_obj(&a);
        cg_jv_obj_put(&a, fo, "path", cg_jv_strn(&a, f->path, f->path_len ? f->path_len : strlen(f->path)));
        cg_jv_obj_put(&a, fo, "bytes", cg_jv_u64(&a, f->bytes));
        cg_jv_obj_put(&a, fo, "sha256", cg_jv_str_nocopy(&a, f->sha256));
        cg_jv_arr_push(&a, arr, fo);
    }
    cg_jv_obj_put(&a, o, "files", arr);
    cg_json_write(out, o, true);
    cg_buf_putc(out, '\n');
    cg_arena_free(&a);
}
