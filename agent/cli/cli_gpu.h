/* cli_gpu.h — the crate's GPU views of an evidence/4 packet for the CLI
 * envelopes (summary/5 `gpu`, overview/1 `gpu`, trace-query/5 gpu-* kinds),
 * and the bounded list shape `{total, displayed, truncated, rows}`.
 *
 * A normalized Nsight report is "available" only when its coverage flag is set
 * and no GPU diagnostic names it; otherwise its row population is unknown, not
 * zero: counts are null and a reason says so ("failed" when a diagnostic names
 * the report or the whole GPU evidence failed, else "unavailable").
 *
 * Every function reads the packet JSON (`p`, a materialized evidence/4 object)
 * and builds its result in arena a; key order is left to the caller, which
 * sorts the envelope (cli_jv_sorted) as serde_json's `json!` does. Rows are
 * shared with the packet, not copied. No errors: absent members read as empty. */
#ifndef CG_CLI_GPU_H
#define CG_CLI_GPU_H

#include <stddef.h>

#include "base/arena.h"
#include "base/json.h"

/* {total, displayed, truncated, rows}: the first `limit` items of arr (NULL = []). */
cg_jv *cli_bounded(cg_arena *a, cg_jv *arr, size_t limit);

/* summary/5 and overview/1 `gpu`: status, reason, provenance_binding,
 * correlation, coverage, normalized_rows, attributed_phases, diagnostic_count. */
cg_jv *cli_gpu_summary(cg_arena *a, cg_jv *p);

/* trace-query/5 results of the gpu-status, gpu-correlation, gpu-phases,
 * gpu-kernels and gpu-attribution-gaps kinds. */
cg_jv *cli_query_gpu_status(cg_arena *a, cg_jv *p);
cg_jv *cli_query_gpu_correlation(cg_arena *a, cg_jv *p);
cg_jv *cli_query_gpu_phases(cg_arena *a, cg_jv *p);
cg_jv *cli_query_gpu_kernels(cg_arena *a, cg_jv *p);
cg_jv *cli_query_gpu_attribution_gaps(cg_arena *a, cg_jv *p);

#endif
