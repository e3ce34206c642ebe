/* artifacts.h — the derived files of a bundle, built from a trace file and an
 * optional Nsight directory: evidence.json (evidence/4, pretty JSON + "\n"),
 * report.md and viewer.html. Used by bundle publication and by semantic
 * verification (which rebuilds evidence and compares JSON values).
 *
 * Memory: the packet is never held as a DOM; its large lists are produced item
 * by item from the derived structures while written (see evidence.h).
 * Ownership: the caller owns the cg_buf outputs (cg_buf_free). Errors: trace
 * parse errors and evidence construction errors (e.g. "duplicate graph node ID")
 * are returned with their messages; nothing is written anywhere. */
#ifndef CG_RENDER_ARTIFACTS_H
#define CG_RENDER_ARTIFACTS_H

#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "trace/trace.h"

/* Every function here builds a bundle's packet: nsight_dir is the bundle's (or
 * its staging copy's) nsight/ folder, named "nsight" in messages that quote a
 * path, so a packet rebuilt from the published bundle matches the published one.
 *
 * Builds the evidence packet JSON value (evidence/4) into arena a. */
cg_jv *cg_evidence_build_json(cg_arena *a, const char *trace_path, const char *nsight_dir, cg_error *err);

/* Builds all three derived files. Any output pointer may be NULL to skip it. */
int cg_render_bundle_artifacts(const char *trace_path, const char *nsight_dir, cg_buf *evidence_json,
                               cg_buf *report_md, cg_buf *viewer_html, cg_error *err);

/* The same for publication, in memory bounded by the trace model: evidence.json
 * is streamed to evidence_fd (not closed, not synced) and hashed while written
 * (*evidence gets its SHA-256 and size); what is on disk, but the newest 64
 * MiB, leaves the page cache as it goes (CG_WRITEBACK_DROP_BEHIND); *run_id
 * gets a malloc'd copy of the packet's provenance run_id (NULL on failure).
 * report_md and viewer_html may be NULL. Errors as above, and CG_EIO when a write to evidence_fd fails. */
typedef struct cg_artifact_digest {
    char sha256[65]; /* lowercase hex */
    uint64_t bytes;
} cg_artifact_digest;
int cg_render_bundle_artifacts_fd(const char *trace_path, const char *nsight_dir, int evidence_fd,
                                  cg_artifact_digest *evidence, char **run_id, cg_buf *report_md,
                                  cg_buf *viewer_html, cg_error *err);

/* Semantic verification: does the JSON at evidence_json_path equal, as a JSON
 * value (cg_jv_equal), the evidence packet rebuilt from trace_path and
 * nsight_dir (NULL = none)? The rebuilt packet is streamed (lazy arrays, no
 * DOM) and compared byte for byte with the file: equal bytes (pretty JSON +
 * "\n", as published) mean a match without building any DOM, in memory bounded
 * by the trace model plus ~2 MiB. Only when the bytes differ is the file parsed
 * and compared by value (lazy items built one at a time); files larger than
 * CG_EVIDENCE_VALUE_COMPARE_MAX are then refused with CG_ELIMIT.
 * Returns 0 with *match set (a file that is not valid JSON sets false);
 * -1 with err for trace read / evidence construction errors (their messages),
 * an unreadable evidence file (CG_EIO) or the size limit (CG_ELIMIT). */
/* The fast path alone, on a packet the caller built: streams
 * cg_evidence_to_json_lazy(e) (pretty + "\n", as published) into a comparison
 * with the bytes of evidence_json_path, in ~2 MiB beside e. Returns 0 with
 * *match (false: the bytes differ somewhere or the file is longer/shorter);
 * -1 with err (CG_EIO) when the file cannot be opened or read. */
struct cg_evidence;
int cg_evidence_bytes_match(const struct cg_evidence *e, const char *evidence_json_path, bool *match, cg_error *err);
#define CG_EVIDENCE_VALUE_COMPARE_MAX ((uint64_t)256 << 20)
int cg_evidence_semantic_match(const char *trace_path, const char *nsight_dir, const char *evidence_json_path,
                               bool *match, cg_error *err);
/* The same over a trace the caller already read (cg_trace_read_file with
 * default limits, as above); `t` is only read and stays the caller's. */
int cg_evidence_semantic_match_trace(const cg_trace *t, const char *nsight_dir, const char *evidence_json_path,
                                     bool *match, cg_error *err);

#endif
