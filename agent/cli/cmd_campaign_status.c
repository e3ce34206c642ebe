/* candle-graph campaign-status — reconcile a campaign plan with its bundles
 * (campaign-status/1, spec §4.2, §4.4). */
#include <string.h>

#include "campaign/campaign.h"
#include "cli_evidence.h"
#include "cli_util.h"

const char cg_cmd_campaign_status_help[] =
    "usage: candle-graph campaign-status --manifest FILE [-o FILE]\n"
    "Report the state of every planned capture of a campaign (candle-graph/campaign-status/1).\n"
    "  --manifest F     campaign/1 manifest; bundle paths resolve against its directory\n"
    "  -o, --output F   write to F instead of stdout (never inside a planned bundle)\n";

int cg_cmd_campaign_status(int argc, char **argv) {
    const char *manifest = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--manifest", NULL, &manifest))) {
            if (r < 0) return 2;
            continue;
        }
        if ((r = cli_take_value(argc, argv, &i, "--output", "-o", &out))) {
            if (r < 0) return 2;
            continue;
        }
        return cli_usage_unexpected("campaign-status", argv[i]);
    }
    if (!manifest) return cli_usage_missing("campaign-status", "--manifest <FILE>");
    cg_arena a;
    cg_arena_init(&a, 1 << 16);
    cg_error err;
    cg_err_clear(&err);
    cg_campaign_manifest m;
    int rc = 0;
    cg_jv *v = cg_campaign_status(&a, manifest, NULL, &m, &err);
    if (!v) rc = cli_fail(&err);
    for (size_t i = 0; rc == 0 && i < m.n_planned; i++)
        if (cli_check_output_outside(out, cg_campaign_resolve_bundle(&a, manifest, m.planned[i].bundle), &err) != 0)
            rc = cli_fail(&err);
    if (rc == 0) rc = cli_write_json(out, v);
    cg_arena_free(&a);
    return rc;
}
