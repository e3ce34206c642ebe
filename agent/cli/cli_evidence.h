/* cli_evidence.h — loading an INPUT for the evidence commands (spec §7, §13):
 *   - a raw `*.jsonl` trace (evidence rebuilt; GPU unavailable unless --nsight-dir),
 *   - a directory holding only trace.jsonl (raw),
 *   - a finalized bundle directory or its trace.jsonl (deeply verified; the bound
 *     evidence.json is read, never rebuilt).
 * A raw directory (or a raw trace's parent) holding evidence.json or nsight/ but
 * no bundle.json is refused rather than silently rebuilt as trace-only.
 *
 * Ownership: every JSON value lives in the arena; `trace` is owned by the
 * loaded struct (cli_loaded_free frees it, the evidence and a bundle's
 * evidence file). A bundle's packet is read by analysis/evidence_read.h: its
 * large arrays are lazy, as in a rebuilt lazy packet, whatever `lazy` says.
 *
 * The commands built on it (import, overview, query, summary, view) share the
 * INPUT / -o FILE / --nsight-dir flags (cli_evidence_arg, cli_evidence_parse)
 * and the load → refuse-output-inside-the-bundle → free sequence
 * (cli_evidence_open / cli_evidence_close). */
#ifndef CG_CLI_EVIDENCE_H
#define CG_CLI_EVIDENCE_H

#include <stdbool.h>

#include "analysis/evidence.h"
#include "analysis/evidence_read.h"
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
    cg_evidence_file *evfile; /* a bundle's evidence.json (owned): the packet's lazy arrays read it */
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

/* The INPUT and flags every evidence command takes; the strings point into argv. */
typedef struct cli_evidence_args {
    const char *input;      /* the one INPUT */
    const char *out;        /* -o/--output FILE; NULL = stdout */
    const char *nsight_dir; /* --nsight-dir DIR (only when allowed) */
    bool summary_only;      /* set by the command: a raw trace's graph is summary-only
                               (cg_evidence_build_summary), for readers of graph.summary */
} cli_evidence_args;

/* Takes argv[*i] when it is -o/--output FILE, --nsight-dir DIR (allow_nsight)
 * or the INPUT, advancing *i past a flag's value. Returns 0 when taken, else
 * the exit status 2 after a usage error for `candle-graph cmd` on stderr
 * ("unknown flag X", "takes one INPUT", a flag without its value). Commands
 * test their own flags before calling it. */
int cli_evidence_arg(const char *cmd, int argc, char **argv, int *i, bool allow_nsight, cli_evidence_args *ea);
/* 0 when ea->input is set, else 2 after "INPUT is required". */
int cli_evidence_require_input(const char *cmd, const cli_evidence_args *ea);
/* The whole argv of a command with no flags of its own (--nsight-dir allowed);
 * memsets ea; 0, or the exit status 2 after a usage error. */
int cli_evidence_parse(const char *cmd, int argc, char **argv, cli_evidence_args *ea);

/* A loaded INPUT with the arena its JSON lives in (do not copy the struct). */
typedef struct cli_evidence {
    cg_arena arena;
    cli_loaded l;
} cli_evidence;

/* Initialises ev->arena, loads ea->input (lazy as in cli_load_evidence_ex)
 * and refuses ea->out inside a loaded bundle. Returns 0, or 1 after printing
 * the error (cli_fail). Call cli_evidence_close(ev) in both cases. */
int cli_evidence_open(const cli_evidence_args *ea, bool lazy, cli_evidence *ev);
void cli_evidence_close(cli_evidence *ev);

#endif
