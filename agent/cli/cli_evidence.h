/* cli_evidence.h — loading an INPUT for the evidence commands (spec §7, §13):
 *   - a raw `*.jsonl` trace (evidence rebuilt; GPU unavailable unless --nsight-dir),
 *   - a directory holding only trace.jsonl (raw),
 *   - a finalized bundle directory or its trace.jsonl (deeply verified; the bound
 *     evidence.json is read, never rebuilt).
 * A raw directory (or a raw trace's parent) holding evidence.json or nsight/ but
 * no bundle.json is refused rather than silently rebuilt as trace-only.
 *
 * Ownership: every JSON value lives in the arena; `trace` is owned by the
 * loaded struct (cli_loaded_free frees it and the evidence). */
#ifndef CG_CLI_EVIDENCE_H
#define CG_CLI_EVIDENCE_H

#include <stdbool.h>

#include "analysis/evidence.h"
#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "bundle/verify.h"
#include "trace/trace.h"

typedef struct cli_loaded {
    bool is_bundle;
    char bundle_root[4096];   /* when is_bundle */
    char trace_path[4200];
    cg_trace *trace;          /* parsed trace (owned) */
    cg_evidence *evidence;    /* rebuilt evidence for raw inputs (owned), NULL for bundles */
    cg_jv *packet;            /* evidence/4 packet JSON (rebuilt or verified evidence.json) */
    cg_jv *input;             /* the `input` envelope */
    cg_bundle_receipt receipt;
} cli_loaded;

/* nsight_dir is only allowed for raw inputs ("--nsight-dir is rejected for bundles"). */
int cli_load_evidence(cg_arena *a, const char *path, const char *nsight_dir, cli_loaded *out, cg_error *err);
/* lazy: a rebuilt packet keeps its large arrays lazy (analysis/evidence.h) —
 * for commands that only write the packet (cli_write_json streams it); the
 * trace and evidence stay alive until cli_loaded_free. */
int cli_load_evidence_ex(cg_arena *a, const char *path, const char *nsight_dir, bool lazy, cli_loaded *out,
                         cg_error *err);
void cli_loaded_free(cli_loaded *l);

/* Refuses output paths that resolve inside (or onto) the bundle root:
 * "refusing to write command output … inside verified bundle …". NULL/"-" = stdout, fine. */
int cli_check_output_outside(const char *out_path, const char *bundle_root, cg_error *err);

#endif
