/* candle-graph compare — fail-closed replicated comparison (comparison/6, spec §3.9). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/fs.h"
#include "cli_evidence.h"
#include "cli_util.h"
#include "comparison/compare.h"

const char cg_cmd_compare_help[] =
    "usage: candle-graph compare --baseline BUNDLE... --candidate BUNDLE... [--unverified-traces] "
    "[--require-eligible] [-o FILE]\n"
    "Compare the outer wall time of replicated baseline and candidate runs (candle-graph/comparison/6).\n"
    "  --baseline <BUNDLE>...   finalized evidence bundle directories, unless --unverified-traces is set\n"
    "                           (repeatable; at least one)\n"
    "  --candidate <BUNDLE>...  finalized evidence bundle directories, unless --unverified-traces is set\n"
    "  --unverified-traces      treat baseline and candidate paths as raw traces; output is always\n"
    "                           diagnostic/ineligible\n"
    "  --require-eligible       exit nonzero (after writing output) when the comparison verdict is ineligible\n"
    "  -o, --output F           write to F instead of stdout (never inside an input bundle)\n";

/* The bundle an input lives in: the directory itself, or a trace file's parent
 * directory when that holds bundle.json. */
static int check_output(const char *out, const char *input, cg_error *err) {
    if (cg_is_dir(input)) return cli_check_output_outside(out, input, err);
    char parent[4096];
    cg_path_parent(input, parent, sizeof parent);
    char *manifest = cg_path_join(parent, "bundle.json");
    bool bundle = manifest && cg_path_exists(manifest);
    cg_free(manifest);
    return bundle ? cli_check_output_outside(out, parent, err) : 0;
}

int cg_cmd_compare(int argc, char **argv) {
    const char **base = NULL, **cand = NULL;
    int nb = 0, nc = 0, rc = 2;
    const char *out = NULL;
    bool unverified = false, require = false;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_multi(argc, argv, &i, "--baseline", &base, &nb))) {
            if (r < 0) goto done;
            continue;
        }
        if ((r = cli_take_multi(argc, argv, &i, "--candidate", &cand, &nc))) {
            if (r < 0) goto done;
            continue;
        }
        if ((r = cli_take_value(argc, argv, &i, "--output", "-o", &out))) {
            if (r < 0) goto done;
            continue;
        }
        if (!strcmp(argv[i], "--unverified-traces")) unverified = true;
        else if (!strcmp(argv[i], "--require-eligible")) require = true;
        else {
            rc = cli_usage_unexpected("compare", argv[i]);
            goto done;
        }
    }
    if (nb == 0 || nc == 0) {
        rc = cli_usage_missing("compare", nb == 0 && nc == 0 ? "--baseline <BUNDLE>...\n  --candidate <BUNDLE>..."
                                          : nb == 0        ? "--baseline <BUNDLE>..."
                                                           : "--candidate <BUNDLE>...");
        goto done;
    }
    cg_error err;
    cg_err_clear(&err);
    for (int i = 0; i < nb + nc; i++)
        if (check_output(out, i < nb ? base[i] : cand[i - nb], &err) != 0) {
            rc = cli_fail(&err);
            goto done;
        }
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    cg_jv *v = unverified
                   ? cg_compare_unverified_trace_files(&a, base, (size_t)nb, cand, (size_t)nc, &err)
                   : cg_compare_verified_bundles(&a, base, (size_t)nb, cand, (size_t)nc, &err);
    if (!v) {
        rc = cli_fail(&err);
    } else {
        rc = cli_write_json(out, v);
        if (rc == 0 && require && cg_comparison_is_ineligible(v)) {
            cg_buf msg = CG_BUF_INIT;
            cg_comparison_ineligible_message(v, &msg);
            rc = cli_failf("%s", msg.data);
            cg_buf_free(&msg);
        }
    }
    cg_arena_free(&a);
done:
    cg_free((void *)base);
    cg_free((void *)cand);
    return rc;
}
