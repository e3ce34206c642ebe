/* fsck.c — `candle-graph-server fsck`: re-hashes every blob the index references
 * (and every stored manifest against its bundle id), lists missing and damaged
 * blobs and orphans (stored blobs no bundle references). Prints a JSON report;
 * exit 0 when nothing is missing or damaged (orphans are collectable, not damage),
 * 1 otherwise. Read-only. */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "srv.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void list_fs_orphans(srv_blobstore *b, char **known, size_t n, cg_arena *a, cg_jv *out) {
    char root[PATH_MAX + 16];
    snprintf(root, sizeof root, "%s/sha256", b->root);
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    /* collect then sort so the report is deterministic */
    char **found = NULL;
    size_t nf = 0, cap = 0;
    while ((e = readdir(d))) {
        if (strlen(e->d_name) != 2 || !isxdigit((unsigned char)e->d_name[0]) || !isxdigit((unsigned char)e->d_name[1])) continue;
        char sub[PATH_MAX + 32];
        if (snprintf(sub, sizeof sub, "%s/%s", root, e->d_name) >= (int)sizeof sub) continue;
        DIR *d2 = opendir(sub);
        if (!d2) continue;
        struct dirent *f;
        while ((f = readdir(d2))) {
            if (!strcmp(f->d_name, ".") || !strcmp(f->d_name, "..")) continue;
            const char *key = f->d_name;
            if (bsearch(&key, known, n, sizeof *known, cmp_str)) continue;
            if (nf == cap) {
                cap = cap ? cap * 2 : 64;
                char **nfound = realloc(found, cap * sizeof *found);
                if (!nfound) break;
                found = nfound;
            }
            found[nf++] = cg_arena_strdup(a, f->d_name);
        }
        closedir(d2);
    }
    closedir(d);
    if (found) qsort(found, nf, sizeof *found, cmp_str);
    for (size_t i = 0; i < nf; i++) cg_jv_arr_push(a, out, cg_jv_str(a, found[i]));
    free(found);
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
    PGresult *r = srv_q(c, "SELECT sha256, min(bytes), max(bytes) FROM bundle_files GROUP BY sha256 ORDER BY sha256", 0,
                        NULL, NULL, NULL, &err);
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
        PGresult *o = srv_q(c,
                            "SELECT sha256 FROM pg_blobs p WHERE NOT EXISTS (SELECT 1 FROM bundle_files f WHERE "
                            "f.sha256 = p.sha256) ORDER BY sha256",
                            0, NULL, NULL, NULL, &err);
        if (!o) {
            free(known);
            goto out;
        }
        for (int i = 0; i < PQntuples(o); i++) cg_jv_arr_push(&a, orphans, cg_jv_str(&a, PQgetvalue(o, i, 0)));
        PQclear(o);
    }
    free(known);
    PGresult *m = PQexecParams(c, "SELECT id, manifest FROM bundles ORDER BY seq", 0, NULL, NULL, NULL, NULL, 1);
    if (PQresultStatus(m) != PGRES_TUPLES_OK) {
        cg_err_set(&err, CG_EIO, "database: %s", PQresultErrorMessage(m));
        PQclear(m);
        goto out;
    }
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
