/* store_copy.c — COPY … FROM STDIN in its text format for the store's bulk
 * inserts (srv_store.h): rows written into a buffer and sent a chunk at a
 * time, so neither this process nor libpq's output buffer ever holds a whole
 * table's rows as text. */
#include <stdio.h>
#include <string.h>

#include "base/sha256.h"
#include "fault.h"
#include "srv_store.h"

void srv_copy_text_n(cg_buf *b, const char *s, size_t n) {
    const char *run = s, *end = s + n;
    for (; s < end; s++) {
        char c = *s;
        if (c != '\\' && c != '\t' && c != '\n' && c != '\r') continue;
        cg_buf_append(b, run, (size_t)(s - run));
        cg_buf_putc(b, '\\');
        cg_buf_putc(b, c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : '\\');
        run = s + 1;
    }
    cg_buf_append(b, run, (size_t)(end - run));
}

void srv_copy_text(cg_buf *b, const char *s) { srv_copy_text_n(b, s, strlen(s)); }

void srv_copy_hash(cg_buf *b, const unsigned char h[32]) {
    char hex[65];
    cg_hex(h, 32, hex);
    cg_buf_append(b, "\\\\x", 3);
    cg_buf_append(b, hex, 64);
}

void srv_copy_flush(srv_copy_out *o, bool all) {
    if (!o->sent || !o->b.len || (!all && o->b.len < SRV_COPY_CHUNK)) return;
    o->sent = PQputCopyData(o->c, o->b.data, (int)o->b.len) == 1;
    cg_buf_reset(&o->b);
}

void srv_copy_text_out(srv_copy_out *o, const char *s) {
    size_t n = strlen(s);
    for (size_t at = 0; at < n && o->sent; at += SRV_COPY_CHUNK / 2) {
        size_t k = n - at < SRV_COPY_CHUNK / 2 ? n - at : SRV_COPY_CHUNK / 2;
        srv_copy_text_n(&o->b, s + at, k);
        srv_copy_flush(o, false);
    }
}

static const char SQL_BUNDLE_SEQ[] = "SELECT seq FROM bundles WHERE id = $1";

int srv_copy_bundle_seq(PGconn *c, const char *id, char seq[24], char sqlstate[6], cg_error *err) {
    const char *q[1] = {id};
    PGresult *x = srv_q(c, SQL_BUNDLE_SEQ, 1, q, NULL, sqlstate, err);
    if (!x) return -1;
    int rc = PQntuples(x) == 1 && PQgetlength(x, 0, 0) < 24 ? 0 : -1;
    if (rc == 0) snprintf(seq, 24, "%s", PQgetvalue(x, 0, 0));
    else cg_err_set(err, CG_ESTATE, "bundle %s has no bundles row", id); /* its writer's transaction holds it */
    PQclear(x);
    return rc;
}

int srv_copy_rows(PGconn *c, const char *sql, const void *src, size_t n, srv_copy_row_fn row, char sqlstate[6],
                  cg_error *err) {
    if (sqlstate) sqlstate[0] = 0;
    PGresult *r = srv_fault_exec(c, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN) return srv_pg_fail(c, r, sqlstate, err);
    PQclear(r);
    srv_copy_out o = {c, CG_BUF_INIT, true};
    for (size_t k = 0; o.sent && k < n; k++) {
        row(src, k, &o);
        srv_copy_flush(&o, k + 1 == n);
    }
    cg_buf_free(&o.b);
    bool sent = o.sent;
    if (PQputCopyEnd(c, sent ? NULL : "client failed to send the rows") != 1) sent = false;
    PGresult *res = NULL;
    while ((r = PQgetResult(c))) { /* the COPY's own result, then NULL */
        if (!res && PQresultStatus(r) != PGRES_COMMAND_OK) res = r;
        else PQclear(r);
    }
    if (res) return srv_pg_fail(c, res, sqlstate, err);
    if (!sent || PQstatus(c) != CONNECTION_OK) return srv_pg_fail(c, NULL, sqlstate, err);
    return 0;
}
