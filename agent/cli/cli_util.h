/* cli_util.h — shared helpers for candle-graph subcommands: flag parsing,
 * output writing (stdout or -o FILE, pretty JSON + newline), error printing.
 * Commands return 0 on success, 1 on failure (message already printed), 2 on usage error. */
#ifndef CG_CLI_UTIL_H
#define CG_CLI_UTIL_H

#include <stdbool.h>

#include "base/error.h"
#include "base/json.h"
#include "cmd_decls.h" /* generated: int cg_cmd_<name>(int, char **) and its help text */

/* Flag parsing over argv[1..argc-1] (argv[0] is the command name).
 * cli_take_value: if argv[*i] is `flag` (or `alt`, may be NULL) or `flag=VALUE`,
 * stores the value, advances *i and returns 1; returns -1 (after printing) when
 * the value is missing; 0 when argv[*i] is not this flag. */
int cli_take_value(int argc, char **argv, int *i, const char *flag, const char *alt, const char **value);
bool cli_is_flag(const char *arg, const char *flag, const char *alt);
/* Collects values for a repeatable multi-value flag: `--x A B C` and `--x A --x B`.
 * Consumes following arguments until the next one that looks like a flag
 * ('-' followed by anything; a lone "-" is a value). */
int cli_take_multi(int argc, char **argv, int *i, const char *flag, const char ***vals, int *n);

/* Usage errors as clap words them: "error: MSG", a blank line and "For more
 * information try '--help'" on stderr (clap's Usage line is left out); return 2.
 * cli_usage_unexpected: an argument clap does not expect (a flag gets clap's
 * "-- X" hint); cli_usage_missing: "The following required arguments were not
 * provided:" and `what` ("<INPUT>", "--kind <KIND>"). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_usage_unexpected(const char *cmd, const char *arg);
int cli_usage_missing(const char *cmd, const char *what);
/* Failures as the crate's main prints its anyhow error: "Error: " and the
 * context chain (cg_err_write_chain), then "\n"; return 1. */
int cli_fail(const cg_error *err);
int cli_failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes pretty JSON + "\n" to stdout (out_path NULL or "-") or to out_path. */
int cli_write_json(const char *out_path, const cg_jv *v);
/* Streams output to stdout (out_path NULL or "-") or out_path: `produce` writes
 * through the sink it is given; returns 0, or 1 after printing the error (a
 * failed write names the file and errno; otherwise produce's err). */
typedef int (*cli_producer)(cg_json_sink sink, void *sink_ctx, void *arg, cg_error *err);
int cli_write_stream(const char *out_path, cli_producer produce, void *arg);
/* Writes raw bytes to stdout or out_path. */
int cli_write_bytes(const char *out_path, const void *data, size_t len);

/* The value serde_json::to_value would make of v (what the crate's `json!`
 * envelopes hold): v with every object's keys sorted by byte order,
 * recursively, copied into arena a where anything changes. Scalars, strings and
 * any array or object already in that order are shared with v (so the result
 * is for writing, not for editing); a lazy array stays lazy (its items are
 * sorted as they are produced), so v's lazy sources must outlive the result. */
cg_jv *cli_jv_sorted(cg_arena *a, cg_jv *v);

/* {"package": "candle-graph", "version": CG_VERSION} */
cg_jv *cli_tool_json(cg_arena *a);

#endif
