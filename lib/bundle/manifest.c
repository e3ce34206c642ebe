/* manifest.c — bundle/1 manifest parse/serialize (§1.2), both driven by the
 * one table of the manifest (manifest_wire.c). */
#include "bundle/manifest.h"
#include "bundle/manifest_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_manifest(cg_arena *a, const char *text, size_t len, cg_bundle_manifest *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    cg_jv *root = cg_json_parse(a, text, len, &lim, err);
    if (!root) return -1;
    return cg_bw_decode(&cg_bw_bundle_manifest, a, root, text, len, out, err);
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
    cg_json_write(out, cg_bw_encode(&a, &cg_bw_bundle_manifest, m), true);
    cg_buf_putc(out, '\n');
    cg_arena_free(&a);
}
