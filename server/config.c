/* config.c — server configuration: defaults for every limit and the shared flags. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"
#include "base/alloc.h"

void srv_config_defaults(srv_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->data_dir, sizeof c->data_dir, "./var");
    snprintf(c->listen_host, sizeof c->listen_host, "127.0.0.1");
    c->listen_port = 8080;
    c->blob_kind = SRV_BLOB_FS;
    c->require_signature = true;
    snprintf(c->pg_user, sizeof c->pg_user, "postgres");
    c->max_body_bytes = 256ull << 20;
    c->max_decoded_bytes = 8ull << 30; /* a 5M-record bundle decodes to about 4 GB (docs/deployment.md) */
    c->max_files = 100000;
    c->max_json_body = 1u << 20;
    c->min_free_bytes = 0;
    c->resident_budget = 320ull << 20; /* ingest peak ≤ 512 MiB (docs/deployment.md) */
    c->spill_min_bytes = 1ull << 20;
    c->conn_limit = 128;
    c->per_ip_limit = 64;
    c->idle_timeout_s = 30;
    c->request_timeout_s = 600;
    c->pool_size = 8;
    c->pool_wait_ms = 5000;
    c->max_uploads = 4;
    c->upload_wait_ms = 30000;
    c->janitor_interval_s = 300;
    c->janitor_grace_s = 3600;
    c->shutdown_grace_s = 60;
    c->statement_timeout_ms = 30000;
    c->header_timeout_s = 20;
    c->body_timeout_s = 20;
    c->min_body_rate = 1024;
    c->max_query_params = 256;
    c->max_uri_bytes = 8192;
    c->max_decode_ratio = 200;
}

void srv_config_free(srv_config *c) {
    cg_free(c->database_url);
    c->database_url = NULL;
}

static int take(int argc, char **argv, int *i, const char *flag, const char **val) {
    size_t n = strlen(flag);
    if (strcmp(argv[*i], flag) == 0) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "candle-graph-server: %s needs a value\n", flag);
            return -1;
        }
        *val = argv[++*i];
        return 1;
    }
    if (strncmp(argv[*i], flag, n) == 0 && argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return 1;
    }
    return 0;
}

static int parse_u64(const char *flag, const char *s, uint64_t max, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > max) {
        fprintf(stderr, "candle-graph-server: invalid value for %s: %s\n", flag, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_listen(srv_config *c, const char *s) {
    const char *colon = strrchr(s, ':');
    uint64_t port;
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof c->listen_host ||
        parse_u64("--listen", colon + 1, 65535, &port) < 0) {
        fprintf(stderr, "candle-graph-server: --listen needs HOST:PORT, got %s\n", s);
        return -1;
    }
    memcpy(c->listen_host, s, (size_t)(colon - s));
    c->listen_host[colon - s] = 0;
    c->listen_port = (unsigned)port;
    return 0;
}

/* Numeric flags: name → field (unsigned or uint64_t). */
struct numflag { const char *flag; size_t off; bool wide; uint64_t max; };
#define NF32(f, field, max) {f, offsetof(srv_config, field), false, max}
#define NF64(f, field) {f, offsetof(srv_config, field), true, UINT64_MAX}
static const struct numflag numflags[] = {
    NF64("--max-body-bytes", max_body_bytes),
    NF64("--max-decoded-bytes", max_decoded_bytes),
    NF64("--max-files", max_files),
    NF64("--min-free-bytes", min_free_bytes),
    NF64("--resident-budget-bytes", resident_budget),
    NF64("--spill-min-bytes", spill_min_bytes),
    NF32("--max-connections", conn_limit, 100000),
    NF32("--per-ip-connections", per_ip_limit, 100000),
    NF32("--idle-timeout", idle_timeout_s, 86400),
    NF32("--request-timeout", request_timeout_s, 86400),
    NF32("--pool-size", pool_size, 1000),
    NF32("--max-uploads", max_uploads, 10000),
    NF32("--upload-wait-ms", upload_wait_ms, 3600000),
    NF32("--janitor-interval", janitor_interval_s, 86400),
    NF32("--janitor-grace", janitor_grace_s, 86400 * 365),
    NF32("--shutdown-grace", shutdown_grace_s, 86400),
    NF32("--header-timeout", header_timeout_s, 86400),
    NF32("--body-timeout", body_timeout_s, 86400),
    NF32("--min-body-rate", min_body_rate, 1u << 30),
    NF32("--max-query-params", max_query_params, 1000),
    NF32("--max-uri-bytes", max_uri_bytes, 65536),
    NF32("--max-decompression-ratio", max_decode_ratio, 1000000),
};

int srv_config_flag(srv_config *c, int argc, char **argv, int *i) {
    const char *v = NULL;
    int r;
    if ((r = take(argc, argv, i, "--data-dir", &v)) != 0) {
        if (r < 0) return -1;
        if (strlen(v) == 0 || strlen(v) >= sizeof c->data_dir - 64) {
            fprintf(stderr, "candle-graph-server: invalid --data-dir\n");
            return -1;
        }
        snprintf(c->data_dir, sizeof c->data_dir, "%s", v);
        return 1;
    }
    if ((r = take(argc, argv, i, "--listen", &v)) != 0)
        return r < 0 ? -1 : parse_listen(c, v) < 0 ? -1 : 1;
    if ((r = take(argc, argv, i, "--database-url", &v)) != 0) {
        if (r < 0) return -1;
        cg_free(c->database_url);
        c->database_url = strdup(v);
        return 1;
    }
    if ((r = take(argc, argv, i, "--blob-store", &v)) != 0) {
        if (r < 0) return -1;
        if (strcmp(v, "fs") == 0) c->blob_kind = SRV_BLOB_FS;
        else if (strcmp(v, "pg") == 0) c->blob_kind = SRV_BLOB_PG;
        else {
            fprintf(stderr, "candle-graph-server: --blob-store must be fs or pg\n");
            return -1;
        }
        return 1;
    }
    if ((r = take(argc, argv, i, "--require-signature", &v)) != 0) {
        if (r < 0) return -1;
        if (strcmp(v, "yes") == 0) c->require_signature = true;
        else if (strcmp(v, "no") == 0) c->require_signature = false;
        else {
            fprintf(stderr, "candle-graph-server: --require-signature must be yes or no\n");
            return -1;
        }
        return 1;
    }
    if ((r = take(argc, argv, i, "--pg-user", &v)) != 0) {
        if (r < 0) return -1;
        snprintf(c->pg_user, sizeof c->pg_user, "%s", v);
        return 1;
    }
    if ((r = take(argc, argv, i, "--pg-bindir", &v)) != 0) {
        if (r < 0) return -1;
        snprintf(c->pg_bindir, sizeof c->pg_bindir, "%s", v);
        return 1;
    }
    if (strcmp(argv[*i], "--public-read") == 0) {
        c->public_read = true;
        return 1;
    }
    for (size_t k = 0; k < sizeof numflags / sizeof numflags[0]; k++) {
        if ((r = take(argc, argv, i, numflags[k].flag, &v)) != 0) {
            uint64_t x;
            if (r < 0 || parse_u64(numflags[k].flag, v, numflags[k].max, &x) < 0) return -1;
            if (numflags[k].wide) memcpy((char *)c + numflags[k].off, &x, sizeof x);
            else {
                unsigned u = (unsigned)x;
                memcpy((char *)c + numflags[k].off, &u, sizeof u);
            }
            return 1;
        }
    }
    return 0;
}
