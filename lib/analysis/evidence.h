/* evidence.h — the candle-graph/evidence/4 packet (spec §9): provenance, health,
 * capabilities, findings, facts, gaps, graph (complete valid captures only),
 * tensor_stats, timing, memory and gpu, built from one trace document and an
 * optional Nsight directory.
 *
 * Ownership: everything hangs off the arena passed in, except `health`, which
 * owns its own arena: call cg_evidence_free (it frees health only; the trace is
 * the caller's and must outlive the evidence). */
#ifndef CG_ANALYSIS_EVIDENCE_H
#define CG_ANALYSIS_EVIDENCE_H

#include "analysis/capability.h"
#include "analysis/memory.h"
#include "analysis/timing.h"
#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "nsight/nsight.h"
#include "trace/health.h"
#include "trace/trace.h"

#define CG_EVIDENCE_SCHEMA "candle-graph/evidence/4"

typedef struct cg_evidence {
    const cg_trace *trace;
    cg_health *health;
    cg_timing_profile *timing;
    cg_memory_profile *memory;
    cg_nsight_evidence *gpu;
    cg_capabilities caps;
    cg_jv *graph;    /* graph/5 JSON, NULL for failed or invalid captures */
    const struct cg_graph *graph_model; /* the graph behind `graph` (in the arena), NULL when none */
    cg_jv *findings; /* array */
    cg_jv *facts;    /* array */
    cg_jv *gaps;     /* array of strings, sorted, deduplicated */
} cg_evidence;

/* EvidencePacket::from_document after loading Nsight (NULL dir = not requested)
 * and binding its provenance to the trace's run and correlation ids. Fails only
 * when graph construction fails for a complete, valid capture (e.g. "duplicate
 * graph node ID"). */
cg_evidence *cg_evidence_build(cg_arena *a, const cg_trace *t, const char *nsight_dir, cg_error *err);
/* Same, naming the Nsight directory `nsight_display` in messages that quote a
 * path (see cg_nsight_load_as; NULL = nsight_dir). */
cg_evidence *cg_evidence_build_as(cg_arena *a, const cg_trace *t, const char *nsight_dir, const char *nsight_display,
                                  cg_error *err);
/* Same, with a summary-only graph (cg_graph_build_summary): the packet's graph
 * is {schema, summary} and graph_model has no edges. Same refusals, findings,
 * facts and every other member; for readers of the summary (summary, overview). */
cg_evidence *cg_evidence_build_summary(cg_arena *a, const cg_trace *t, const char *nsight_dir, cg_error *err);
void cg_evidence_free(cg_evidence *e);

/* The packet JSON with the spec's field order. */
cg_jv *cg_evidence_to_json(cg_arena *a, const cg_evidence *e);
/* The same packet with its large arrays (graph spans/edges/tensors/gradients,
 * tensor_stats, timing and memory arrays) as lazy arrays (base/json.h), for
 * streaming with cg_json_write_sink / cg_json_write_fd in bounded memory. The
 * trace and e must outlive every use of the value; call cg_jv_materialize (or
 * cg_jv_clone) before walking it as a DOM. */
cg_jv *cg_evidence_to_json_lazy(cg_arena *a, const cg_evidence *e);

/* build_evidence(trace_path, nsight_dir) → packet JSON (parses the trace). */
cg_jv *cg_evidence_build_file(cg_arena *a, const char *trace_path, const char *nsight_dir, cg_error *err);
cg_jv *cg_evidence_build_file_as(cg_arena *a, const char *trace_path, const char *nsight_dir,
                                 const char *nsight_display, cg_error *err);

/* Reading a packet: schema must be exactly evidence/4; an embedded graph must be
 * graph/5; provenance, health, capabilities, findings, facts, gaps, timing,
 * memory and gpu must be present with the right JSON types. */
int cg_evidence_validate_schema(const cg_jv *packet, cg_error *err);

#endif
