/* cli_spool.h — the capture spool shared by `candle-graph capture --spool`
 * (producer) and `candle-graph daemon` (consumer).
 *
 * Layout of a spool directory:
 *   .incoming/<entry>/   being written (never read by the daemon)
 *   ready/<entry>/       finalized: bundle/ (the published bundle directory) and,
 *                        when signed, bundle.sig.json beside it
 *   sent/<entry>/        uploaded; receipt.json = the server's ingest/1 answer
 *   rejected/<entry>/    refused by the server; rejection.json = {status, body}
 * An entry moves between these folders only by rename(2) followed by fsync of
 * both parent folders, so its state survives a crash or restart: an entry is
 * in exactly one folder. Entry names are "<unix_ns 20 digits>-<pid>-<bundle
 * name>", so name order is enqueue order.
 *
 * Ownership: returned strings/arrays are malloc'd, freed by the caller
 * (cli_spool_names_free for lists). Errors: -1 with err (CG_EIO, CG_EINVAL). */
#ifndef CG_CLI_SPOOL_H
#define CG_CLI_SPOOL_H

#include <stddef.h>

#include "base/error.h"

/* Creates the spool folders when missing and removes .incoming leftovers of
 * dead writers (entries whose writer pid no longer exists). */
int cli_spool_init(const char *spool, cg_error *err);

/* Copies bundle_dir (regular files and folders only) and sidecar (may be NULL)
 * into a new ready/ entry. *entry_out (may be NULL) receives the ready path. */
int cli_spool_enqueue(const char *spool, const char *bundle_dir, const char *sidecar,
                      char **entry_out, cg_error *err);

/* Entry names in `state` ("ready", "sent", "rejected"), sorted. */
int cli_spool_list(const char *spool, const char *state, char ***names, size_t *n, cg_error *err);
void cli_spool_names_free(char **names, size_t n);

/* Writes `note_name` (data, len) into ready/<entry>/ and moves the entry to
 * `state` ("sent" or "rejected"). */
int cli_spool_move(const char *spool, const char *entry, const char *state, const char *note_name,
                   const void *data, size_t len, cg_error *err);

#endif
