/* srv_index.h — derived index rows of a bundle (index.c computes them,
 * store_ingest.c inserts them). The row borrows every pointer; nothing is
 * freed by index.c. */
#ifndef SRV_INDEX_H
#define SRV_INDEX_H

#include "srv.h"
#include "trace/health.h"
#include "trace/trace.h"

typedef struct srv_file_row {
    const char *path;
    char sha256[65]; /* lowercase */
    uint64_t bytes;
} srv_file_row;

typedef struct srv_index_row {
    const char *id, *run_id;
    const char *manifest;
    size_t manifest_len;
    srv_file_row *files; /* includes bundle.json */
    size_t n_files;
    uint64_t total_bytes;
    const char *uploader;
    const char *signature_json, *signer_key_id; /* NULL when unsigned */
    const char *semantic_status, *evidence_schema;
    const cg_trace *trace;
    bool structurally_valid, capture_complete; /* the trace's health verdicts */
    const char *health_json;                   /* its health as JSON text (srv_index_health_json) */
    const char *campaign_id, *planned_name; /* NULL when not attached */
} srv_index_row;

/* Longest text the index keeps in a btree key (PostgreSQL refuses index rows
 * over ~2.7 kB with an error that used to surface as 503). */
#define SRV_INDEX_MAX_KEY_BYTES 1024

/* Checked before anything is stored: the name of the first indexed text of
 * the bundle (run_id, entrypoint, implementation_id, workload_id, a tag key or
 * value, a tensor-stats label, a file path) longer than SRV_INDEX_MAX_KEY_BYTES,
 * or NULL when every one fits. Span and op names are not keys (paths are
 * keyed by hash). */
const char *srv_index_oversized(const cg_trace *t, const char *run_id, const srv_file_row *files, size_t n_files);

/* The trace's tensor statistics grouped by label, labels in byte order: group
 * k is rows[starts[k] .. starts[k + 1]). rows and starts are malloc'd; they
 * point into the trace, which must outlive them. store_ingest.c streams one
 * bundle_tensor_stats row per group. */
typedef struct srv_tensor_groups {
    const cg_tensor_stats **rows;
    size_t *starts;
    size_t n_groups;
} srv_tensor_groups;
/* The sums of group k (label, samples, rms, abs_max, mean, elements, non_finite). */
typedef struct srv_tensor_sums {
    const char *label;
    uint64_t samples, elements, non_finite;
    double rms, abs_max, mean;
} srv_tensor_sums;
void srv_tensor_group_sums(const srv_tensor_groups *g, size_t k, srv_tensor_sums *out);

/* The bound parameters of the bundle row, the row sets (JSON arrays expanded
 * by json_to_recordset; NULL = no rows) of its files and tags, in arena a, and
 * its tensor statistics grouped by label (malloc'd: srv_index_params_free);
 * store_ingest.c inserts them. CPU only, before the transaction. */
#define SRV_INDEX_BUNDLE_PARAMS 34
typedef struct srv_index_params {
    const char *id;
    const char *bundle[SRV_INDEX_BUNDLE_PARAMS];
    int bundle_lens[SRV_INDEX_BUNDLE_PARAMS]; /* > 0: binary parameter of that length */
    const char *files, *tags;
    srv_tensor_groups tensor_stats;
} srv_index_params;
void srv_index_prepare(const srv_index_row *row, cg_arena *a, srv_index_params *out);
void srv_index_params_free(srv_index_params *p);

/* The health's JSON text as the index stores it (arena a). */
const char *srv_index_health_json(cg_arena *a, const cg_health *h);
/* Duration of the single closed measured span (has=false otherwise) and the count. */
void srv_measured_sample(const cg_trace *t, bool *has, uint64_t *ns, uint64_t *count);
const char *srv_trace_host(const cg_trace *t); /* tags.host / tags.hostname or NULL */

#endif
