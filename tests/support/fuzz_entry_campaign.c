/* fuzz_entry_campaign.c — the campaign/1 manifest parser and the status built
 * on it (see fuzz_entry.h).
 *
 * Invariants: a refusal is CG_EPARSE (JSON / shape) or CG_EINVAL (validation
 * rule) with a message, and loading the same bytes from a file refuses too;
 * an accepted manifest writes to JSON that parses back to the same plan; the
 * step order is a permutation sorted by capture_step; campaign-status over
 * all-missing states serializes and lists every capture; the series gate
 * refuses (nothing is published); the filesystem status of the manifest file
 * (no bundles under the scratch directory: every capture missing or failing
 * verification) succeeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/fs.h"
#include "base/json.h"
#include "bundle/verify.h"
#include "campaign/campaign.h"
#include "fuzz_entry.h"

static const cg_errcode campaign_codes[] = {CG_EPARSE, CG_EINVAL, CG_ELIMIT, CG_OK};

/* The pairwise definition of the plan rules (reference for the sorted check in
 * cg_campaign_manifest_validate): the first capture, in manifest order, that
 * repeats a step, has an unsafe path, or repeats a bundle. */
static int validate_reference(const cg_campaign_manifest *m, cg_error *err) {
    if (cg_str_blank(m->campaign_id))
        return cg_err_set(err, CG_EINVAL, "campaign manifest requires a non-empty campaign_id");
    if (cg_str_blank(m->entrypoint))
        return cg_err_set(err, CG_EINVAL, "campaign manifest requires a non-empty entrypoint");
    if (m->n_planned == 0) return cg_err_set(err, CG_EINVAL, "campaign manifest requires at least one planned capture");
    for (size_t i = 0; i < m->n_planned; i++) {
        const cg_planned_capture *p = &m->planned[i];
        for (size_t k = 0; k < i; k++)
            if (m->planned[k].capture_step == p->capture_step)
                return cg_err_set(err, CG_EINVAL, "campaign manifest plans duplicate capture_step %llu",
                                  (unsigned long long)p->capture_step);
        if (!cg_campaign_bundle_path_is_safe(p->bundle))
            return cg_err_set(err, CG_EINVAL,
                              "campaign manifest has an unsafe bundle path %s; bundle paths must be non-empty "
                              "relative paths without `..` or backslashes",
                              CG_QUOTE(p->bundle));
        for (size_t k = 0; k < i; k++)
            if (!strcmp(m->planned[k].bundle, p->bundle))
                return cg_err_set(err, CG_EINVAL, "campaign manifest plans duplicate bundle path %s",
                                  CG_QUOTE(p->bundle));
    }
    return 0;
}

static void check_rules(const cg_campaign_manifest *m) {
    if (m->n_planned > 2048) return;
    cg_error e1, e2;
    cg_err_clear(&e1);
    cg_err_clear(&e2);
    int r1 = cg_campaign_manifest_validate(m, &e1), r2 = validate_reference(m, &e2);
    CG_FUZZ_REQUIRE(r1 == r2 && !strcmp(e1.msg, e2.msg), "plan validation disagrees with the pairwise rules:\n  %s\n  %s",
                    e1.msg, e2.msg);
}

static void check_accepted(cg_arena *a, const cg_campaign_manifest *m) {
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, cg_campaign_manifest_to_json(a, m), true);
    cg_campaign_manifest back;
    cg_error err;
    cg_err_clear(&err);
    CG_FUZZ_REQUIRE(cg_campaign_manifest_parse(a, b.data, b.len, &back, &err) == 0,
                    "a written campaign manifest does not parse back: %s", err.msg);
    CG_FUZZ_REQUIRE(back.n_planned == m->n_planned && !strcmp(back.campaign_id, m->campaign_id) &&
                        !strcmp(back.entrypoint, m->entrypoint),
                    "campaign manifest round trip changed it");
    for (size_t i = 0; i < m->n_planned; i++)
        CG_FUZZ_REQUIRE(back.planned[i].capture_step == m->planned[i].capture_step &&
                            !strcmp(back.planned[i].bundle, m->planned[i].bundle),
                        "planned capture %zu changed in the round trip", i);
    cg_buf_free(&b);

    size_t *order = cg_campaign_step_order(m);
    CG_FUZZ_REQUIRE(order != NULL, "cg_campaign_step_order returned NULL");
    char *seen = calloc(m->n_planned, 1);
    CG_FUZZ_REQUIRE(seen != NULL, "out of memory");
    for (size_t i = 0; i < m->n_planned; i++) {
        CG_FUZZ_REQUIRE(order[i] < m->n_planned && !seen[order[i]], "step order is not a permutation");
        seen[order[i]] = 1;
        if (i) CG_FUZZ_REQUIRE(m->planned[order[i - 1]].capture_step < m->planned[order[i]].capture_step,
                               "step order is not sorted by capture_step");
    }
    free(seen);
    free(order);

    cg_capture_state *states = cg_arena_zalloc(a, m->n_planned * sizeof *states);
    for (size_t i = 0; i < m->n_planned; i++) states[i].kind = CG_CAPTURE_MISSING;
    cg_jv *status = cg_campaign_status_from_states(a, m, states);
    CG_FUZZ_REQUIRE(status != NULL, "campaign status from states is NULL");
    cg_buf sb = CG_BUF_INIT;
    cg_json_write(&sb, status, true);
    cg_buf_free(&sb);
    cg_err_clear(&err);
    CG_FUZZ_REQUIRE(cg_campaign_require_published(m, states, &err) != 0 && err.msg[0],
                    "series gate accepted a campaign with nothing published");
}

int cg_fuzz_campaign(const uint8_t *data, size_t size) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    cg_campaign_manifest m;
    int rc = cg_campaign_manifest_parse(&a, (const char *)data, size, &m, &err);
    if (rc != 0) cg_fuzz_check_error(&err, "cg_campaign_manifest_parse", campaign_codes);
    if (rc == 0 || err.code == CG_EINVAL) check_rules(&m); /* the shape parsed: m is complete */
    if (rc == 0) check_accepted(&a, &m);

    static char path[256];
    if (!path[0]) {
        char dir[200];
        snprintf(dir, sizeof dir, "%s/campaign", cg_fuzz_scratch_dir());
        CG_FUZZ_REQUIRE(cg_mkdir_p(dir, &err) == 0, "mkdir %s: %s", dir, err.msg);
        snprintf(path, sizeof path, "%s/campaign.json", dir);
    }
    CG_FUZZ_REQUIRE(cg_write_file(path, data, size, false, &err) == 0, "write %s: %s", path, err.msg);
    cg_capture_state *states = NULL;
    cg_campaign_manifest lm;
    cg_err_clear(&err);
    cg_jv *status = cg_campaign_status(&a, path, &states, &lm, &err);
    if (rc != 0) {
        CG_FUZZ_REQUIRE(status == NULL, "campaign status accepted a manifest the parser refuses");
        cg_fuzz_check_error(&err, "cg_campaign_status", campaign_codes);
    } else {
        CG_FUZZ_REQUIRE(status != NULL, "campaign status refused a manifest the parser accepts: %s", err.msg);
        for (size_t i = 0; i < lm.n_planned; i++)
            CG_FUZZ_REQUIRE(states[i].kind == CG_CAPTURE_MISSING || states[i].kind == CG_CAPTURE_VERIFICATION_FAILED,
                            "planned bundle %s reconciled to %s in a directory without bundles", lm.planned[i].bundle,
                            cg_capture_state_name(states[i].kind));
    }
    cg_arena_free(&a);
    return 0;
}
