/* candle-graph series — metric series over bundles ordered by capture_step
 * (series/1, spec §4.3–4.4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "campaign/campaign.h"
#include "campaign/series.h"
#include "cli_evidence.h"
#include "cli_util.h"

const char cg_cmd_series_help[] =
    "usage: candle-graph series (--manifest FILE | --bundle DIR...) [--label-prefix P] [-o FILE]\n"
    "Build capture-step series of outer wall time, tensor statistics and gradients (candle-graph/series/1).\n"
    "  --manifest F       every planned capture of this campaign (all must be published)\n"
    "  --bundle D...      explicit bundle directories (repeatable)\n"
    "  --label-prefix P   keep tensor-stat labels and gradient root/key names starting with P\n"
    "  -o, --output F     write to F instead of stdout (never inside an input bundle)\n";

int cg_cmd_series(int argc, char **argv) {
    const char **bundles = NULL;
    int nb = 0, rc = 2;
    const char *manifest = NULL, *prefix = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_multi(argc, argv, &i, "--bundle", &bundles, &nb))) {
            if (r < 0) goto done;
            continue;
        }
        if ((r = cli_take_value(argc, argv, &i, "--manifest", NULL, &manifest)) ||
            (r = cli_take_value(argc, argv, &i, "--label-prefix", NULL, &prefix)) ||
            (r = cli_take_value(argc, argv, &i, "--output", "-o", &out))) {
            if (r < 0) goto done;
            continue;
        }
        rc = cli_usage_unexpected("series", argv[i]);
        goto done;
    }
    if ((manifest != NULL) == (nb > 0)) {
        rc = manifest ? cli_usage_error("series", "The argument '--manifest <FILE>' cannot be used with '--bundle <DIR>...'")
                      : cli_usage_missing("series", "--manifest <FILE>");
        goto done;
    }
    /* the bundles' trace models are read one after another: each model's
     * arrays stay mmapped, so the peak is that of one model (1M records,
     * 3 bundles: 190 -> 129 MiB) */
    cg_malloc_fixed_mmap_threshold(128 * 1024);
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    cg_error err;
    cg_err_clear(&err);
    const char **roots = NULL;
    size_t n = 0;
    rc = 0;
    if (manifest) {
        cg_campaign_manifest m;
        cg_capture_state *states = NULL;
        if (!cg_campaign_status(&a, manifest, &states, &m, &err) || cg_campaign_require_published(&m, states, &err) != 0) {
            rc = cli_fail(&err);
        } else {
            size_t *order = cg_campaign_step_order(&m);
            roots = cg_arena_alloc(&a, m.n_planned * sizeof *roots);
            for (size_t k = 0; k < m.n_planned; k++)
                roots[k] = cg_campaign_resolve_bundle(&a, manifest, m.planned[order[k]].bundle);
            n = m.n_planned;
            cg_free(order);
        }
    } else {
        roots = bundles;
        n = (size_t)nb;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (cli_check_output_outside(out, roots[i], &err) != 0) rc = cli_fail(&err);
    if (rc == 0) {
        cg_jv *v = cg_build_series(&a, roots, n, prefix, &err);
        rc = v ? cli_write_json(out, v) : cli_fail(&err);
    }
    cg_arena_free(&a);
done:
    cg_free((void *)bundles);
    return rc;
}
