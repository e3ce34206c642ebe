/* srv_store.h — the store layer (issue 13 design item, first part): the SQL of
 * the comparison facts and of the span diff, as static const statements in
 * store_facts.c. Callers hold a pooled connection only around these calls and
 * do their CPU work after returning it.
 *
 * Ownership: a returned PGresult is the caller's (PQclear). Errors: NULL / -1
 * with err ("database: …") and, where given, sqlstate (srv_q). */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include "srv.h"

/* One bundle's facts as text: cohort row, series point, terminal reason (may be
 * NULL), path tree nodes and totals (row-set JSON of srv_path_totals_json). */
typedef struct srv_facts_text {
    const char *id, *cohort_row, *series_point, *terminal_reason, *nodes, *totals;
} srv_facts_text;

/* Inserts them in the caller's transaction; a bundle that already has facts is
 * left alone (*inserted = false). */
int srv_store_facts_put(PGconn *c, const srv_facts_text *f, bool *inserted, char sqlstate[6], cg_error *err);
/* run_id, trace.jsonl sha256 and bytes of bundle id (0 or 1 row). */
PGresult *srv_store_trace_of(PGconn *c, const char *id, cg_error *err);
/* The ids of a text[] literal without facts (DISTINCT). */
PGresult *srv_store_facts_missing(PGconn *c, const char *id_array, cg_error *err);
/* For each entry of a text[] literal of ≥ 12-hex prefixes, in order: its
 * 1-based ordinal and up to two ids starting with it (NULL id: none). */
PGresult *srv_store_resolve_prefixes(PGconn *c, const char *prefix_array, cg_error *err);
/* ordinal and the series_point (series) or cohort_row fact of each id of a
 * text[] literal, in order (NULL: no facts yet). */
PGresult *srv_store_facts_column(PGconn *c, const char *id_array, bool series, cg_error *err);
/* Per (kind, path hash) over the cohort's bundles: kind, hex hash, runs, the two
 * middle per-run totals; ordered by kind (byte order), hash. */
PGresult *srv_store_span_groups(PGconn *c, const char *id_array, cg_error *err);
/* The path nodes of the bundles (one row per hash): hex hash, hex parent|NULL, name. */
PGresult *srv_store_span_nodes(PGconn *c, const char *id_array, cg_error *err);

#endif
