/* artifacts.h — the derived files of a bundle, built from a trace file and an
 * optional Nsight directory: evidence.json (evidence/4, pretty JSON + "\n"),
 * report.md and viewer.html. Used by bundle publication and by semantic
 * verification (which rebuilds evidence and compares JSON values).
 *
 * Ownership: the caller owns the cg_buf outputs (cg_buf_free). Errors: trace
 * parse errors and evidence construction errors (e.g. "duplicate graph node ID")
 * are returned with their messages; nothing is written anywhere. */
#ifndef CG_RENDER_ARTIFACTS_H
#define CG_RENDER_ARTIFACTS_H

#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"

/* Builds the evidence packet JSON value (evidence/4) into arena a. */
cg_jv *cg_evidence_build_json(cg_arena *a, const char *trace_path, const char *nsight_dir, cg_error *err);

/* Builds all three derived files. Any output pointer may be NULL to skip it. */
int cg_render_bundle_artifacts(const char *trace_path, const char *nsight_dir, cg_buf *evidence_json,
                               cg_buf *report_md, cg_buf *viewer_html, cg_error *err);

#endif
