/* admin_cli.c — offline `candle-graph-server admin …` and `migrate`: talk to the
 * database directly (the embedded cluster is started briefly when it is not
 * running), so they work whether or not the server runs. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "srv_store.h"

PGconn *srv_offline_open(srv_config *cfg, srv_pgembed *pg, char *conninfo, size_t cisz, cg_error *err) {
    memset(pg, 0, sizeof *pg);
    if (cfg->database_url) {
        snprintf(conninfo, cisz, "%s", cfg->database_url);
    } else if (srv_pgembed_start(pg, cfg, conninfo, cisz, err) < 0) {
        return NULL;
    }
    PGconn *c = srv_db_connect(conninfo, 600000, err);
    if (c && srv_migrate(c, false, err) < 0) {
        PQfinish(c);
        c = NULL;
    }
    if (!c) srv_pgembed_stop(pg);
    return c;
}

void srv_offline_close(PGconn *c, srv_pgembed *pg) {
    PQfinish(c);
    srv_pgembed_stop(pg);
}

static int print_json(const cg_jv *v) {
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, v, true);
    cg_buf_putc(&b, '\n');
    fwrite(b.data, 1, b.len, stdout);
    cg_buf_free(&b);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int fail(const char *msg) {
    fprintf(stderr, "candle-graph-server admin: %s\n", msg);
    return 1;
}

/* Splits argv into config flags (consumed) and positional/other args. */
static int parse(srv_config *cfg, int argc, char **argv, const char **pos, int *npos, const char **name,
                 const char **scopes, const char **pubkey) {
    *npos = 0;
    for (int i = 1; i < argc; i++) {
        int r = srv_config_flag(cfg, argc, argv, &i);
        if (r < 0) return -1;
        if (r > 0) continue;
        const char **slot = !strcmp(argv[i], "--name") ? name : !strcmp(argv[i], "--scopes") ? scopes
                           : !strcmp(argv[i], "--public-key") ? pubkey : NULL;
        if (slot) {
            if (i + 1 >= argc) {
                fprintf(stderr, "candle-graph-server admin: %s needs a value\n", argv[i]);
                return -1;
            }
            *slot = argv[++i];
            continue;
        }
        if (argv[i][0] == '-' || *npos >= 8) {
            fprintf(stderr, "candle-graph-server admin: unknown argument %s\n", argv[i]);
            return -1;
        }
        pos[(*npos)++] = argv[i];
    }
    return 0;
}

static int list(PGconn *c, bool keys_list, const char *const *keys, int nkeys) {
    cg_error err = {0};
    PGresult *r = keys_list ? srv_store_keys_list(SRV_DB_CONN(c), &err) : srv_store_tokens_list(SRV_DB_CONN(c), &err);
    if (!r) return fail(err.msg);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *items = cg_jv_arr(&a);
    for (int i = 0; i < PQntuples(r); i++) {
        cg_jv *o = cg_jv_obj(&a);
        for (int k = 0; k < nkeys; k++) {
            cg_jv *v;
            if (PQgetisnull(r, i, k)) v = cg_jv_null(&a);
            else if (!strcmp(keys[k], "scopes")) {
                bool bad;
                v = srv_scopes_json(&a, srv_scopes_parse_csv(PQgetvalue(r, i, k), &bad));
            } else v = cg_jv_str(&a, PQgetvalue(r, i, k));
            cg_jv_obj_put(&a, o, keys[k], v);
        }
        cg_jv_arr_push(&a, items, o);
    }
    PQclear(r);
    cg_jv *out = cg_jv_obj(&a);
    cg_jv_obj_put(&a, out, "items", items);
    int rc = print_json(out);
    cg_arena_free(&a);
    return rc;
}

static int revoke_row(PGconn *c, const char *id, const char *idkey) {
    cg_error err = {0};
    int n = srv_store_revoke(SRV_DB_CONN(c), strcmp(idkey, "key_id") == 0, id, &err);
    if (n < 0) return fail(err.msg);
    if (n == 0) {
        fprintf(stderr, "candle-graph-server admin: no such %s: %s\n", idkey, id);
        return 1;
    }
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, idkey, cg_jv_str(&a, id));
    cg_jv_obj_put(&a, o, "revoked", cg_jv_bool(&a, true));
    int rc = print_json(o);
    cg_arena_free(&a);
    return rc;
}

static int create_token(PGconn *c, const char *name, unsigned scopes) {
    cg_error err = {0};
    cg_arena a;
    cg_arena_init(&a, 0);
    const char *id, *token;
    int rc = 1;
    if (srv_token_create(SRV_DB_CONN(c), name, scopes, &a, &id, &token, &err) == 0) {
        cg_jv *o = cg_jv_obj(&a);
        cg_jv_obj_put(&a, o, "id", cg_jv_str(&a, id));
        cg_jv_obj_put(&a, o, "token", cg_jv_str(&a, token));
        cg_jv_obj_put(&a, o, "scopes", srv_scopes_json(&a, scopes));
        rc = print_json(o);
    } else {
        fail(err.msg);
    }
    cg_arena_free(&a);
    return rc;
}

static int add_key(PGconn *c, const char *name, const char *pub) {
    cg_error err = {0};
    char *text = NULL;
    if (cg_path_exists(pub)) {
        size_t len;
        text = cg_read_file(pub, 64 * 1024, &len, &err);
        if (!text) return fail(err.msg);
    }
    unsigned char pk[32];
    char kid[33];
    int prc = srv_pubkey_parse(text ? text : pub, pk, &err);
    cg_free(text);
    if (prc < 0) return fail(err.msg);
    srv_key_id(pk, kid);
    bool fresh;
    if (srv_store_key_insert(SRV_DB_CONN(c), kid, name, pk, &fresh, &err) < 0) return fail(err.msg);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *o = cg_jv_obj(&a);
    cg_jv_obj_put(&a, o, "key_id", cg_jv_str(&a, kid));
    int rc = print_json(o);
    cg_arena_free(&a);
    return rc;
}

int srv_cmd_admin(int argc, char **argv) {
    srv_config cfg;
    srv_config_defaults(&cfg);
    const char *pos[8], *name = NULL, *scopes = NULL, *pubkey = NULL;
    int npos = 0;
    if (sodium_init() < 0 || parse(&cfg, argc, argv, pos, &npos, &name, &scopes, &pubkey) < 0) return 2;
    enum { BOOT, TCREATE, TLIST, TREVOKE, KADD, KLIST, KREVOKE } op;
    if (npos == 1 && !strcmp(pos[0], "bootstrap")) op = BOOT;
    else if (npos == 2 && !strcmp(pos[0], "token") && !strcmp(pos[1], "create")) op = TCREATE;
    else if (npos == 2 && !strcmp(pos[0], "token") && !strcmp(pos[1], "list")) op = TLIST;
    else if (npos == 3 && !strcmp(pos[0], "token") && !strcmp(pos[1], "revoke")) op = TREVOKE;
    else if (npos == 2 && !strcmp(pos[0], "key") && !strcmp(pos[1], "add")) op = KADD;
    else if (npos == 2 && !strcmp(pos[0], "key") && !strcmp(pos[1], "list")) op = KLIST;
    else if (npos == 3 && !strcmp(pos[0], "key") && !strcmp(pos[1], "revoke")) op = KREVOKE;
    else {
        fprintf(stderr, "usage: candle-graph-server admin bootstrap | token create --name N --scopes a,b | token list"
                        " | token revoke ID | key add --name N --public-key FILE|BASE64 | key list | key revoke KEY_ID\n");
        srv_config_free(&cfg);
        return 2;
    }
    unsigned sc = 0;
    if (op == TCREATE) {
        bool bad;
        sc = srv_scopes_parse_csv(scopes, &bad);
        if (!name || bad) {
            srv_config_free(&cfg);
            return fail("token create needs --name and --scopes (comma-separated upload,read,admin)");
        }
    }
    if (op == KADD && (!name || !pubkey)) {
        srv_config_free(&cfg);
        return fail("key add needs --name and --public-key");
    }
    cg_error err = {0};
    srv_pgembed pg;
    char conninfo[1024];
    PGconn *c = srv_offline_open(&cfg, &pg, conninfo, sizeof conninfo, &err);
    if (!c) {
        srv_config_free(&cfg);
        return fail(err.msg);
    }
    int rc;
    static const char *const tkeys[] = {"id", "name", "scopes", "created_at", "revoked_at"};
    static const char *const kkeys[] = {"key_id", "name", "public_key", "created_at", "revoked_at"};
    switch (op) {
    case BOOT: rc = create_token(c, "bootstrap-admin", SRV_SCOPE_ADMIN | SRV_SCOPE_UPLOAD | SRV_SCOPE_READ); break;
    case TCREATE: rc = create_token(c, name, sc); break;
    case TLIST: rc = list(c, false, tkeys, 5); break;
    case TREVOKE: rc = revoke_row(c, pos[2], "id"); break;
    case KADD: rc = add_key(c, name, pubkey); break;
    case KLIST: rc = list(c, true, kkeys, 5); break;
    case KREVOKE:
    default: rc = revoke_row(c, pos[2], "key_id"); break;
    }
    srv_offline_close(c, &pg);
    srv_config_free(&cfg);
    return rc;
}

int srv_cmd_migrate(int argc, char **argv) {
    srv_config cfg;
    srv_config_defaults(&cfg);
    for (int i = 1; i < argc; i++) {
        int r = srv_config_flag(&cfg, argc, argv, &i);
        if (r <= 0) {
            if (r == 0) fprintf(stderr, "candle-graph-server migrate: unknown flag %s\n", argv[i]);
            srv_config_free(&cfg);
            return 2;
        }
    }
    cg_error err = {0};
    srv_pgembed pg;
    char conninfo[1024];
    PGconn *c = srv_offline_open(&cfg, &pg, conninfo, sizeof conninfo, &err);
    srv_config_free(&cfg);
    if (!c) {
        fprintf(stderr, "candle-graph-server migrate: %s\n", err.msg);
        return 1;
    }
    printf("{\"schema_version\": %d}\n", srv_schema_version_known());
    srv_offline_close(c, &pg);
    return 0;
}
