/* store_ingest.c — the SQL of POST /bundles (srv_store.h): the signer key,
 * the campaign capture check, rejected-attempt rows, and the one transaction
 * that publishes a bundle (advisory lock on its id, identical / run-ID
 * conflict checks, pg blobs, the index rows index.c prepared, the comparison
 * facts, the history revision, the campaign attachment). Everything the
 * transaction inserts was computed before it began. */
#include <inttypes.h>
#include <string.h>

#include "srv_history.h"
#include "srv_index.h"
#include "srv_store.h"

static const char SQL_BEGIN[] = "BEGIN";
static const char SQL_COMMIT[] = "COMMIT";
static const char SQL_ROLLBACK[] = "ROLLBACK";
static const char SQL_TX_TIMEOUT[] = "SELECT set_config('statement_timeout', $1, true)"; /* this transaction only */

static const char SQL_SIGNER_KEY[] = "SELECT public_key, revoked_at IS NOT NULL FROM signer_keys WHERE key_id = $1";

static const char SQL_ATTEMPT_FAILED[] =
    "INSERT INTO upload_attempts (campaign_id, planned_name, state, run_id, code, message, host, device) "
    "VALUES ($1, $2, 'verification_failed', $3, $4, $5, $6, $7)";

static const char SQL_ATTEMPT_PUBLISHED[] =
    "INSERT INTO upload_attempts (campaign_id, planned_name, state, bundle_id, run_id, host, device) "
    "VALUES ($1, $2, 'published', $3, $4, $5, $6)";

static const char SQL_LOCK_BUNDLE[] = "SELECT pg_advisory_xact_lock($1::bigint)";

static const char SQL_BUNDLE_EXISTS[] = "SELECT 1 FROM bundles WHERE id = $1";

static const char SQL_RUN_ID_HOLDER[] = "SELECT id FROM bundles WHERE run_id = $1";

static const char SQL_ATTACH[] =
    "UPDATE bundles SET campaign_id = $2, planned_name = $3 WHERE id = $1 AND campaign_id IS NULL";

static const char SQL_BUNDLE_INSERT[] =
    "INSERT INTO bundles (id, run_id, manifest, file_count, total_bytes, uploader_token_id, signature, "
    "signer_key_id, semantic_status, evidence_schema, trace_schema, correlation_id, entrypoint, phase, "
    "captured_at, capture_step, warmup_steps, device, measured_region_device_synchronized, timing_mode, "
    "candle_version, provenance, measurement_scope, capture_contract, identity, implementation_id, workload_id, "
    "model_id, config_id, data_id, seed_policy, physical_batch, accumulation_steps, \"precision\", device_state, "
    "pair_id, structurally_valid, capture_complete, outcome, health, measured_ns, measured_span_count, host, "
    "campaign_id, planned_name) VALUES ($1, $2, $3, $4::int, $5::bigint, $6, $7::json, $8, $9, $10, $11, $12, "
    "$13, $14, $15, $16::numeric, $17::numeric, $18, $19::boolean, $20, $21, $22::json, $23, $24::json, "
    "$25::text::json, $25::text::jsonb->>'implementation_id', $25::text::jsonb->>'workload_id', "
    "$25::text::jsonb->>'model_id', $25::text::jsonb->>'config_id', $25::text::jsonb->>'data_id', "
    "$25::text::jsonb->>'seed_policy', ($25::text::jsonb->>'physical_batch')::numeric, "
    "($25::text::jsonb->>'accumulation_steps')::numeric, $25::text::jsonb->>'precision', "
    "$25::text::jsonb->>'device_state', $25::text::jsonb->>'pair_id', $26::boolean, $27::boolean, "
    "$28, $29::json, $30::numeric, $31::int, $32, $33, $34)";

static const char SQL_FILES_INSERT[] =
    "INSERT INTO bundle_files (bundle_id, path, sha256, bytes) SELECT $1, r.p, r.s, r.b::bigint "
    "FROM json_to_recordset($2::json) AS r(p text, s text, b text)";

static const char SQL_TAGS_INSERT[] =
    "INSERT INTO bundle_tags (bundle_id, key, value) SELECT $1, r.k, r.v "
    "FROM json_to_recordset($2::json) AS r(k text, v text) ON CONFLICT DO NOTHING";

/* one row per label (200k for a 5M-record trace), streamed a chunk at a time */
static const char SQL_TENSOR_STATS_COPY[] =
    "COPY bundle_tensor_stats (bundle_seq, label, samples, sum_rms, sum_abs_max, sum_mean, sum_elements, "
    "sum_non_finite) FROM STDIN";

/* ------------------------------------------------------------ before the transaction */

int srv_store_signer_key(srv_pool *p, const char *key_id, unsigned char pk[32], bool *pk_ok, bool *revoked,
                         cg_error *err) {
    const char *q[1] = {key_id};
    PGresult *x = srv_store_q_binary(p, SQL_SIGNER_KEY, 1, q, err);
    if (!x) return -1;
    int found = PQntuples(x) > 0;
    if (found) {
        *revoked = PQgetlength(x, 0, 1) == 1 && PQgetvalue(x, 0, 1)[0] == 1;
        *pk_ok = PQgetlength(x, 0, 0) == 32;
        if (*pk_ok) memcpy(pk, PQgetvalue(x, 0, 0), 32);
    }
    PQclear(x);
    return found;
}

void srv_store_attempt_failed(srv_pool *p, const srv_attempt *at, const char *code, const char *message) {
    cg_error err = {0};
    const char *q[7] = {at->campaign, at->planned, at->run_id, code, message, at->host, at->device};
    PQclear(srv_store_q(p, SQL_ATTEMPT_FAILED, 7, q, NULL, &err));
}

/* ------------------------------------------------------------ the transaction */

static int exec_p(PGconn *c, const char *sql, int n, const char *const *q, const int *lens, char ss[6], cg_error *err) {
    PGresult *x = srv_q(c, sql, n, q, lens, ss, err);
    if (!x) return -1;
    PQclear(x);
    return 0;
}

static int rowset(PGconn *c, const char *sql, const char *id, const char *rows, char ss[6], cg_error *err) {
    const char *q[2] = {id, rows};
    return rows ? exec_p(c, sql, 2, q, NULL, ss, err) : 0;
}

typedef struct stats_src {
    const char *seq; /* the bundle's bundles.seq: the rows' key (migration 0014) */
    const srv_tensor_groups *g;
} stats_src;

/* "<id>\t<label>\t<samples>\t<rms>\t<abs_max>\t<mean>\t<elements>\t<non_finite>" of group k */
static void stats_row(const void *from, size_t k, srv_copy_out *o) {
    const stats_src *src = from;
    srv_tensor_sums t;
    srv_tensor_group_sums(src->g, k, &t);
    cg_buf_puts(&o->b, src->seq);
    cg_buf_putc(&o->b, '\t');
    srv_copy_text(&o->b, t.label);
    cg_buf_printf(&o->b, "\t%" PRIu64 "\t%.17g\t%.17g\t%.17g\t%" PRIu64 "\t%" PRIu64 "\n", t.samples, t.rms, t.abs_max,
                  t.mean, t.elements, t.non_finite);
}

/* The bundle's tensor-stat sums, one row per label (the bundles row is this
 * transaction's, so it exists and stays: migration 0013). */
static int insert_tensor_stats(PGconn *c, const srv_index_params *ix, char ss[6], cg_error *err) {
    const srv_tensor_groups *g = &ix->tensor_stats;
    if (!g->n_groups) return 0;
    char seq[24];
    if (srv_copy_bundle_seq(c, ix->id, seq, ss, err) < 0) return -1;
    stats_src src = {seq, g};
    return srv_copy_rows(c, SQL_TENSOR_STATS_COPY, &src, g->n_groups, stats_row, ss, err);
}

static int insert_index(PGconn *c, const srv_index_params *ix, char ss[6], cg_error *err) {
    if (exec_p(c, SQL_BUNDLE_INSERT, SRV_INDEX_BUNDLE_PARAMS, ix->bundle, ix->bundle_lens, ss, err) < 0) return -1;
    if (rowset(c, SQL_FILES_INSERT, ix->id, ix->files, ss, err) < 0) return -1;
    if (rowset(c, SQL_TAGS_INSERT, ix->id, ix->tags, ss, err) < 0) return -1;
    return insert_tensor_stats(c, ix, ss, err);
}

static int attempt_published(PGconn *c, const srv_ingest_tx *tx, char ss[6], cg_error *err) {
    const srv_attempt *at = &tx->attempt;
    const char *q[6] = {at->campaign, at->planned, tx->id, at->run_id, at->host, at->device};
    return exec_p(c, SQL_ATTEMPT_PUBLISHED, 6, q, NULL, ss, err);
}

/* Existing bundle / run-ID holder under the bundle's advisory lock. */
static int check_existing(PGconn *c, const srv_ingest_tx *tx, srv_ingest_outcome *out, char ss[6], cg_error *err) {
    char lk[32];
    snprintf(lk, sizeof lk, "%" PRId64, tx->lock_key);
    const char *ql[1] = {lk}, *qi[1] = {tx->id}, *qr[1] = {tx->attempt.run_id};
    if (exec_p(c, SQL_LOCK_BUNDLE, 1, ql, NULL, ss, err) < 0) return -1;
    PGresult *x = srv_q(c, SQL_BUNDLE_EXISTS, 1, qi, NULL, ss, err);
    if (!x) return -1;
    out->existed = PQntuples(x) > 0;
    PQclear(x);
    if (out->existed) return 0;
    if (!(x = srv_q(c, SQL_RUN_ID_HOLDER, 1, qr, NULL, ss, err))) return -1;
    if (PQntuples(x) > 0) {
        out->conflict = true;
        snprintf(out->other, sizeof out->other, "%s", PQgetvalue(x, 0, 0));
    }
    PQclear(x);
    return 0;
}

static int publish_new(PGconn *c, const srv_ingest_tx *tx, srv_ingest_outcome *out, char ss[6], cg_error *err) {
    if (tx->put_blobs && tx->put_blobs(tx->blob_ctx, c, err) < 0) return -1;
    if (insert_index(c, tx->index, ss, err) < 0) {
        if (strcmp(ss, "23505") != 0) return -1;
        out->conflict = true; /* run_id raced with another bundle */
        return 0;
    }
    bool inserted;
    if (srv_store_facts_put(c, tx->facts, true, &inserted, ss, err) < 0) return -1;
    if (srv_history_index(c, tx->id, tx->trace, &out->history_series, ss, err) < 0) return -1;
    return tx->attempt.campaign ? attempt_published(c, tx, ss, err) : 0;
}

/* An identical re-upload for a planned capture attaches the stored bundle
 * when it belongs to no campaign yet (a bundle is linked to at most one). */
static int attach_existing(PGconn *c, const srv_ingest_tx *tx, char ss[6], cg_error *err) {
    const char *q[3] = {tx->id, tx->attempt.campaign, tx->attempt.planned};
    PGresult *x = srv_q(c, SQL_ATTACH, 3, q, NULL, ss, err);
    if (!x) return -1;
    bool attached = strcmp(PQcmdTuples(x), "1") == 0;
    PQclear(x);
    return attached ? attempt_published(c, tx, ss, err) : 0;
}

int srv_store_ingest_commit(srv_pool *p, const srv_ingest_tx *tx, srv_ingest_outcome *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    out->history_series = -1;
    char ss[6] = "";
    PGconn *c = srv_pool_get(p, err);
    if (!c) return -1;
    int rc = -1;
    char ms[32];
    snprintf(ms, sizeof ms, "%" PRIu64, tx->statement_timeout_ms);
    const char *qt[1] = {ms};
    if (srv_exec(c, SQL_BEGIN, err) < 0 || (tx->statement_timeout_ms && exec_p(c, SQL_TX_TIMEOUT, 1, qt, NULL, ss, err) < 0) ||
        check_existing(c, tx, out, ss, err) < 0)
        goto out;
    if (!out->existed && !out->conflict && publish_new(c, tx, out, ss, err) < 0) goto out;
    if (out->existed && tx->attempt.campaign && attach_existing(c, tx, ss, err) < 0) goto out;
    rc = out->conflict ? srv_exec(c, SQL_ROLLBACK, err) : srv_exec(c, SQL_COMMIT, err);
out:
    srv_pool_put(p, c); /* rolls back what is still open */
    return rc;
}
