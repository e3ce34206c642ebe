/* cli_input.h — classifying an INPUT path for the commands that read a capture
 * (protocol-trace-evidence.md §13, protocol-bundles-comparison.md §7).
 *
 *   - a `*.jsonl` file                      -> raw trace (that file)
 *   - a directory holding trace.jsonl       -> raw trace (DIR/trace.jsonl)
 *   - a directory holding bundle.json, or a
 *     trace.jsonl beside a bundle.json      -> verified bundle (the directory)
 *   - a raw directory (or a raw file's parent) holding evidence.json or
 *     nsight/ but no bundle.json            -> refused: "… refusing to discard
 *                                              unverified GPU evidence and
 *                                              rebuild as trace-only"
 * The rules match cli_load_evidence (cli_evidence.c), which verifies and loads
 * bundles. cli_resolve_input only classifies: it reads no trace and verifies no
 * bundle. The struct owns no heap memory; paths longer than the buffers are
 * refused. */
#ifndef CG_CLI_INPUT_H
#define CG_CLI_INPUT_H

#include <stdbool.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"

typedef struct cli_input {
    bool is_bundle;
    char requested_path[4096]; /* as given on the command line */
    char trace_path[4200];     /* the trace.jsonl to read */
    char bundle_root[4096];    /* when is_bundle, else "" */
} cli_input;

/* Returns 0 and fills out, or -1 with the reason in err (missing path, a
 * directory without trace.jsonl, the evidence.json / nsight/ refusal). */
int cli_resolve_input(const char *path, cli_input *out, cg_error *err);

/* The `input` envelope of a raw trace: {kind: "raw_trace", requested_path,
 * trace_path, evidence_source: "trace_reconstruction", gpu_identity_bound: false}.
 * Bundles get theirs from cli_load_evidence (it carries the verification). */
cg_jv *cli_raw_input_json(cg_arena *a, const cli_input *in);

#endif
