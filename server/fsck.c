/* fsck.c — `candle-graph-server fsck`: re-hashes every blob the index references
 * (and every stored manifest against its bundle id), lists missing and damaged
 * blobs and orphans (stored blobs no bundle references). Prints a JSON report;
 * exit 0 when nothing is missing or damaged (orphans are collectable, not damage),
 * 1 otherwise. Read-only. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "base/alloc.h"
#include "srv.h"
#include "srv_store.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool hex2(const char *s) {
    return strlen(s) == 2 && isxdigit((unsigned char)s[0]) && isxdigit((unsigned char)s[1]);
}

typedef struct blob_walk {
    cg_walk_fn visit;
    void *ctx;
} blob_walk;

static cg_walk_action blob_level(void *ctx, const cg_walk_entry *e) {
    const blob_walk *w = ctx;
    if (e->depth == 0) return S_ISDIR(e->st.st_mode) && hex2(e->name) ? CG_WALK_NEXT : CG_WALK_SKIP;
    return w->visit(w->ctx, e);
}

int srv_blob_tree_walk(const srv_blobstore *b, cg_walk_fn visit, void *ctx, cg_error *err) {
    char root[PATH_MAX + 16];
    if (snprintf(root, sizeof root, "%s/sha256", b->root) >= (int)sizeof root)
        return cg_err_set(err, CG_ELIMIT, "blob store path too long");
    blob_walk w = {visit, ctx};
    return cg_walk(root, (cg_walk_limits){.max_depth = 1}, blob_level, &w, err);
}

typedef struct orphan_list {
    char **known;
    size_t n_known;
    cg_arena *a;
    char **found;
    size_t n, cap;
} orphan_list;

static cg_walk_action note_orphan(void *ctx, const cg_walk_entry *e) {
    orphan_list *o = ctx;
    const char *key = e->name;
    if (bsearch(&key, o->known, o->n_known, sizeof *o->known, cmp_str)) return CG_WALK_SKIP;
    char **grown = cg_try_grow(o->found, &o->cap, o->n + 1, sizeof *o->found);
    if (!grown) return CG_WALK_STOP;
    o->found = grown;
    o->found[o->n++] = cg_arena_strdup(o->a, e->name);
    return CG_WALK_SKIP;
}

/* Stored blobs no bundle references, sorted so that the report is deterministic. */
static void list_fs_orphans(srv_blobstore *b, char **known, size_t n, cg_arena *a, cg_jv *out) {
    orphan_list o = {.known = known, .n_known = n, .a = a};
    cg_error err = {0};
    srv_blob_tree_walk(b, note_orphan, &o, &err); /* an unreadable store lists what it could */
    if (o.found) qsort(o.found, o.n, sizeof *o.found, cmp_str);
    for (size_t i = 0; i < o.n; i++) cg_jv_arr_push(a, out, cg_jv_str(a, o.found[i]));
    cg_free(o.found);
}

int srv_cmd_fsck(int argc, char **argv) {
    srv_config cfg;
    srv_config_defaults(&cfg);
    for (int i = 1; i < argc; i++) {
        int r = srv_config_flag(&cfg, argc, argv, &i);
        if (r <= 0) {
            if (r == 0) fprintf(stderr, "candle-graph-server fsck: unknown flag %s\n", argv[i]);
            srv_config_free(&cfg);
            return 2;
        }
    }
    if (sodium_init() < 0) return 1;
    cg_error err = {0};
    srv_pgembed pg;
    char conninfo[1024];
    srv_blobstore bs;
    if (srv_blob_init(&bs, cfg.blob_kind, cfg.data_dir, &err) < 0) {
        fprintf(stderr, "candle-graph-server fsck: %s\n", err.msg);
        srv_config_free(&cfg);
        return 1;
    }
    PGconn *c = srv_offline_open(&cfg, &pg, conninfo, sizeof conninfo, &err);
    if (!c) {
        fprintf(stderr, "candle-graph-server fsck: %s\n", err.msg);
        srv_config_free(&cfg);
        return 1;
    }
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *missing = cg_jv_arr(&a), *damaged = cg_jv_arr(&a), *orphans = cg_jv_arr(&a), *bad_manifest = cg_jv_arr(&a);
    int rc = 1;
    uint64_t nblobs = 0, nbundles = 0;
    PGresult *r = srv_store_blob_refs(c, &err);
    if (!r) goto out;
    char **known = malloc(((size_t)PQntuples(r) + 1) * sizeof *known);
    if (!known) goto out;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *hex = PQgetvalue(r, i, 0);
        uint64_t want = strtoull(PQgetvalue(r, i, 1), NULL, 10);
        known[i] = cg_arena_strdup(&a, hex);
        nblobs++;
        uint64_t total = 0;
        bool miss = false;
        cg_error e2 = {0};
        char got[65];
        const char *form = "plain";
        /* any at-rest form: decompressed and hashed (blobfmt.c) */
        if (srv_blob_hash(&bs, c, hex, got, &total, &form, &miss, &e2) < 0) {
            cg_jv_arr_push(&a, missing, cg_jv_str(&a, hex));
            continue;
        }
        if (strcmp(got, hex) != 0 || total != want || strcmp(PQgetvalue(r, i, 1), PQgetvalue(r, i, 2)) != 0) {
            cg_jv *o = cg_jv_obj(&a);
            cg_jv_obj_put(&a, o, "sha256", cg_jv_str(&a, hex));
            cg_jv_obj_put(&a, o, "expected_bytes", cg_jv_u64(&a, want));
            cg_jv_obj_put(&a, o, "observed_bytes", cg_jv_u64(&a, total));
            cg_jv_obj_put(&a, o, "observed_sha256", cg_jv_str(&a, got));
            cg_jv_obj_put(&a, o, "stored_form", cg_jv_str(&a, form));
            cg_jv_arr_push(&a, damaged, o);
        }
    }
    size_t nknown = (size_t)PQntuples(r);
    PQclear(r);
    qsort(known, nknown, sizeof *known, cmp_str);
    if (bs.kind == SRV_BLOB_FS) {
        list_fs_orphans(&bs, known, nknown, &a, orphans);
    } else {
        PGresult *o = srv_store_pg_blob_orphans(c, &err);
        if (!o) {
            cg_free(known);
            goto out;
        }
        for (int i = 0; i < PQntuples(o); i++) cg_jv_arr_push(&a, orphans, cg_jv_str(&a, PQgetvalue(o, i, 0)));
        PQclear(o);
    }
    cg_free(known);
    PGresult *m = srv_store_manifests(c, &err);
    if (!m) goto out;
    for (int i = 0; i < PQntuples(m); i++) {
        char hex[65];
        cg_sha256_hex(PQgetvalue(m, i, 1), (size_t)PQgetlength(m, i, 1), hex);
        nbundles++;
        if (strncmp(hex, PQgetvalue(m, i, 0), 64) != 0)
            cg_jv_arr_push(&a, bad_manifest, cg_jv_strn(&a, PQgetvalue(m, i, 0), (size_t)PQgetlength(m, i, 0)));
    }
    PQclear(m);
    bool clean = cg_jv_len(missing) == 0 && cg_jv_len(damaged) == 0 && cg_jv_len(bad_manifest) == 0;
    cg_jv *rep = cg_jv_obj(&a);
    cg_jv_obj_put(&a, rep, "schema", cg_jv_str(&a, "candle-graph-server/fsck/1"));
    cg_jv_obj_put(&a, rep, "clean", cg_jv_bool(&a, clean));
    cg_jv_obj_put(&a, rep, "bundles_checked", cg_jv_u64(&a, nbundles));
    cg_jv_obj_put(&a, rep, "blobs_checked", cg_jv_u64(&a, nblobs));
    cg_jv_obj_put(&a, rep, "missing", missing);
    cg_jv_obj_put(&a, rep, "damaged", damaged);
    cg_jv_obj_put(&a, rep, "manifest_mismatch", bad_manifest);
    cg_jv_obj_put(&a, rep, "orphans", orphans);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, rep, true);
    cg_buf_putc(&b, '\n');
    fwrite(b.data, 1, b.len, stdout);
    cg_buf_free(&b);
    rc = clean ? 0 : 1;
out:
    if (err.msg[0] && rc != 0 && nblobs == 0) fprintf(stderr, "candle-graph-server fsck: %s\n", err.msg);
    cg_arena_free(&a);
    srv_offline_close(c, &pg);
    srv_config_free(&cfg);
    return rc;
}
