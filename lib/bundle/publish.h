/* publish.h — atomic bundle publication (protocol-bundles-comparison.md §1.4).
 *
 * cg_publish_bundle writes bundle/1 into a hidden staging directory beside the
 * destination (".{name}.tmp-{pid}-{unix_nanos}"): trace.jsonl (byte copy),
 * nsight/<name> (byte copies of the regular files of nsight_dir, sorted by
 * name; links, directories and special files refused), evidence.json /
 * report.md / viewer.html built from the STAGED copies, then bundle.json
 * (files sorted by path, pretty JSON + "\n") last. Every file is fsynced; the
 * staging directory is verified (cg_bundle_verify), fsynced (with nsight/),
 * renamed onto the destination without replacing anything, and the parent
 * directory is fsynced. The destination therefore appears only complete.
 * Any failure after the staging directory exists removes it.
 *
 * Stale staging directories of the same destination left by a process that
 * no longer exists (same host; pid probed with kill(pid, 0) == ESRCH) are
 * removed before a new one is created, so a crash never leaves a second
 * complete bundle.json lying around after a retry.
 *
 * Ownership: manifest_out (may be NULL) receives the exact bundle.json bytes
 * (caller frees with cg_buf_free). Errors: -1 with err; CG_EEXIST when the
 * destination exists ("bundle destination already exists: …"). */
#ifndef CG_BUNDLE_PUBLISH_H
#define CG_BUNDLE_PUBLISH_H

#include "base/buf.h"
#include "base/error.h"
#include "bundle/verify.h"

/* Numbered steps (spec §1.4) after which the test hook runs. */
typedef enum cg_publish_step {
    CG_PUBLISH_STEP_STAGING_CREATED = 4,  /* staging directory exists (empty) */
    CG_PUBLISH_STEP_TRACE_COPIED = 5,     /* 5.1 trace.jsonl written + fsynced */
    CG_PUBLISH_STEP_NSIGHT_COPIED = 6,    /* 5.2 nsight/ copied (also when no Nsight dir) */
    CG_PUBLISH_STEP_EVIDENCE_WRITTEN = 7, /* 5.3 evidence.json written, report/viewer not yet */
    CG_PUBLISH_STEP_ARTIFACTS_WRITTEN = 8,/* 5.3 report.md + viewer.html written */
    CG_PUBLISH_STEP_MANIFEST_WRITTEN = 9, /* 5.4 bundle.json written + fsynced */
    CG_PUBLISH_STEP_VERIFIED = 10,        /* 6 staging directory verified */
    CG_PUBLISH_STEP_STAGING_SYNCED = 11,  /* 7 staging directory fsynced */
    CG_PUBLISH_STEP_RENAMED = 12,         /* 8 renamed onto the destination */
    CG_PUBLISH_STEP_PARENT_SYNCED = 13,   /* 9 parent directory fsynced */
} cg_publish_step;

/* Test hook: called after each step with the step and the staging dir path.
 * Process-global, not thread-safe; NULL disables. For crash tests only. */
typedef void (*cg_publish_hook_fn)(cg_publish_step step, const char *staging_dir, void *ctx);
void cg_publish_set_hook(cg_publish_hook_fn fn, void *ctx);

int cg_publish_bundle(const char *destination, const char *trace_path, const char *nsight_dir, cg_buf *manifest_out,
                      cg_error *err);
/* The same, and *verified (may be NULL) gets the receipt of step 6's deep
 * verification of the staging directory — the directory that the rename then
 * made the destination, so it is the receipt a verification of the published
 * bundle gives (its fields name no path) without reading every byte again. */
int cg_publish_bundle_verified(const char *destination, const char *trace_path, const char *nsight_dir,
                               cg_buf *manifest_out, cg_bundle_receipt *verified, cg_error *err);

#endif
