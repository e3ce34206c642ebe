/* index.c — the derived index of one bundle, computed before the ingest
 * transaction (no connection held): the bundle row (trace meta/provenance,
 * identity, capture semantics, health flags, measured sample, placement), its
 * files, tags and per-label tensor-stat sums, as the parameters the store's
 * statements bind (store_ingest.c inserts them). Comparison/campaign/series
 * routes read these rows, never blobs. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "srv_index.h"

static const char *jtext(cg_arena *a, const cg_jv *v) {
    if (!v) return NULL;
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, v, false);
    char *s = cg_arena_strndup(a, b.data, b.len);
    cg_buf_free(&b);
    return s;
}

static const char *u64s(cg_arena *a, uint64_t v) { return cg_arena_printf(a, "%" PRIu64, v); }

/* Several rows in one round trip: a JSON array of objects whose values are
 * strings (or null) is expanded by json_to_recordset(… text …), and each value
 * gets the same cast the text parameter of a one-row INSERT would get. */
typedef struct rowset {
    cg_arena *a;
    cg_jv *rows, *cur;
} rowset;

static void rs_row(rowset *r) {
    r->cur = cg_jv_obj(r->a);
    cg_jv_arr_push(r->a, r->rows, r->cur);
}

static void rs_put(rowset *r, const char *key, const char *val) {
    cg_jv_obj_put(r->a, r->cur, key, val ? cg_jv_str(r->a, val) : cg_jv_null(r->a));
}

const char *srv_index_health_json(cg_arena *a, const cg_health *h) { return jtext(a, cg_health_to_json(a, h)); }

static const char *tag(const cg_run_meta *m, const char *key) {
    for (size_t i = 0; i < m->n_tags; i++)
        if (strcmp(m->tags[i].key, key) == 0) return m->tags[i].value;
    return NULL;
}

void srv_measured_sample(const cg_trace *t, bool *has, uint64_t *ns, uint64_t *count) {
    const cg_span *only = NULL;
    *count = 0;
    for (size_t i = 0; i < t->n_spans; i++)
        if (t->spans[i].measured) {
            (*count)++;
            only = &t->spans[i];
        }
    *has = *count == 1 && only->closed;
    *ns = *has ? only->duration_ns : 0;
}

const char *srv_trace_host(const cg_trace *t) {
    const char *h = tag(&t->run, "host");
    return h ? h : tag(&t->run, "hostname");
}

static int cmp_stats(const void *x, const void *y) {
    const cg_tensor_stats *a = *(const cg_tensor_stats *const *)x, *b = *(const cg_tensor_stats *const *)y;
    return strcmp(a->label, b->label);
}

static void tensor_groups_build(const cg_trace *t, srv_tensor_groups *out) {
    memset(out, 0, sizeof *out);
    if (t->n_tensor_stats == 0) return;
    out->rows = cg_xalloc(t->n_tensor_stats, sizeof *out->rows);
    out->starts = cg_xalloc(t->n_tensor_stats + 1, sizeof *out->starts);
    for (size_t i = 0; i < t->n_tensor_stats; i++) out->rows[i] = &t->tensor_stats[i];
    qsort(out->rows, t->n_tensor_stats, sizeof *out->rows, cmp_stats);
    for (size_t i = 0; i < t->n_tensor_stats; i++)
        if (i == 0 || strcmp(out->rows[i]->label, out->rows[i - 1]->label) != 0) out->starts[out->n_groups++] = i;
    out->starts[out->n_groups] = t->n_tensor_stats;
}

void srv_index_params_free(srv_index_params *p) {
    cg_free(p->tensor_stats.rows);
    cg_free(p->tensor_stats.starts);
    memset(&p->tensor_stats, 0, sizeof p->tensor_stats);
}

void srv_tensor_group_sums(const srv_tensor_groups *g, size_t k, srv_tensor_sums *out) {
    memset(out, 0, sizeof *out);
    out->label = g->rows[g->starts[k]]->label;
    for (size_t j = g->starts[k]; j < g->starts[k + 1]; j++) {
        const cg_tensor_stats *v = g->rows[j];
        out->samples++;
        out->rms += v->rms;
        out->abs_max += v->abs_max;
        out->mean += v->mean;
        out->elements += v->elements;
        out->non_finite += v->non_finite;
    }
}

static bool too_long(const char *s) { return s && strlen(s) > SRV_INDEX_MAX_KEY_BYTES; }

const char *srv_index_oversized(const cg_trace *t, const char *run_id, const srv_file_row *files, size_t n_files) {
    const cg_run_meta *m = &t->run;
    if (too_long(run_id)) return "run_id";
    if (too_long(m->entrypoint)) return "entrypoint";
    if (m->identity && too_long(m->identity->implementation_id)) return "comparison_identity.implementation_id";
    if (m->identity && too_long(m->identity->workload_id)) return "comparison_identity.workload_id";
    for (size_t i = 0; i < m->n_tags; i++)
        if (too_long(m->tags[i].key) || too_long(m->tags[i].value)) return "tags";
    for (size_t i = 0; i < t->n_tensor_stats; i++)
        if (too_long(t->tensor_stats[i].label)) return "tensor_stats.label";
    for (size_t i = 0; i < n_files; i++)
        if (too_long(files[i].path)) return "files.path";
    return NULL;
}

void srv_index_prepare(const srv_index_row *row, cg_arena *a, srv_index_params *out) {
    const cg_trace *t = row->trace;
    const cg_run_meta *m = &t->run;
    bool has_ns;
    uint64_t ns, count;
    srv_measured_sample(t, &has_ns, &ns, &count);
    const char *p[SRV_INDEX_BUNDLE_PARAMS] = {
        row->id,
        row->run_id,
        row->manifest,
        u64s(a, row->n_files),
        u64s(a, row->total_bytes),
        row->uploader,
        row->signature_json,
        row->signer_key_id,
        row->semantic_status,
        row->evidence_schema,
        t->schema,
        m->correlation_id,
        m->entrypoint,
        cg_phase_name(m->phase),
        m->timestamp,
        u64s(a, m->capture_step),
        u64s(a, m->warmup_steps),
        m->device,
        m->measured_region_device_synchronized ? "true" : "false",
        cg_timing_mode_name(m->timing_mode),
        m->candle_version,
        jtext(a, cg_run_meta_to_json(a, m)),
        cg_scope_name(m->contract.measurement_scope),
        jtext(a, cg_capture_contract_to_json(a, &m->contract)),
        m->identity ? jtext(a, cg_comparison_identity_to_json(a, m->identity)) : NULL,
        row->structurally_valid ? "true" : "false",
        row->capture_complete ? "true" : "false",
        cg_outcome_name(t->terminal.outcome),
        row->health_json,
        has_ns ? u64s(a, ns) : NULL,
        u64s(a, count),
        srv_trace_host(t),
        row->campaign_id,
        row->planned_name,
    };
    memset(out, 0, sizeof *out);
    memcpy(out->bundle, p, sizeof p);
    out->bundle_lens[2] = (int)row->manifest_len; /* bundle.json bytes go in binary (bytea) */
    out->id = row->id;
    rowset files = {a, cg_jv_arr(a), NULL};
    for (size_t i = 0; i < row->n_files; i++) {
        rs_row(&files);
        rs_put(&files, "p", row->files[i].path);
        rs_put(&files, "s", row->files[i].sha256);
        rs_put(&files, "b", u64s(a, row->files[i].bytes));
    }
    out->files = row->n_files ? jtext(a, files.rows) : NULL;
    /* rows go in tag order, so of two equal keys the first wins, as before */
    rowset tags = {a, cg_jv_arr(a), NULL};
    for (size_t i = 0; i < m->n_tags; i++) {
        rs_row(&tags);
        rs_put(&tags, "k", m->tags[i].key);
        rs_put(&tags, "v", m->tags[i].value);
    }
    out->tags = m->n_tags ? jtext(a, tags.rows) : NULL;
    tensor_groups_build(t, &out->tensor_stats);
}
