/* query_params.c — the parsing of query parameters shared by the routes: decimal
 * integers, and the bundle-list filters of GET /bundles that every cohort selector
 * applies too (API.md "Bundles", "Comparison"). One table, one parser. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

bool srv_parse_u64(const char *s, uint64_t max, uint64_t *out) {
    if (!s || !*s) return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return false;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE || v > max) return false;
    if (out) *out = v;
    return true;
}

/* Each filter is a fixed SQL fragment "<lhs> $n<cast>"; values are bound parameters. */
struct filter {
    const char *param, *lhs, *cast;
};
static const struct filter filters[] = {
    {"entrypoint", "b.entrypoint =", ""},
    {"phase", "b.phase =", ""},
    {"device", "b.device =", ""},
    {"implementation_id", "b.implementation_id =", ""},
    {"workload_id", "b.workload_id =", ""},
    {"campaign", "b.campaign_id =", ""},
    {"capture_step", "b.capture_step =", "::numeric"},
    {"outcome", "b.outcome =", ""},
    {"signer", "b.signer_key_id =", ""},
    {"since", "b.uploaded_at >=", "::timestamptz"},
    {"until", "b.uploaded_at <", "::timestamptz"},
    /* issue 15: revision filters (a commit hash or prefix, a branch) */
    {"commit", "EXISTS (SELECT 1 FROM bundle_revisions v WHERE v.bundle_id = b.id AND starts_with(v.commit_sha,", "))"},
    {"branch", "EXISTS (SELECT 1 FROM bundle_revisions v WHERE v.bundle_id = b.id AND v.branch =", ")"},
};

int srv_bundle_filters_add(srv_req *r, cg_buf *where, const char **params, const char **pnames, const char **pcasts,
                           int *np, enum MHD_Result *res) {
    for (size_t k = 0; k < sizeof filters / sizeof filters[0]; k++) {
        const char *v = srv_query(r, filters[k].param);
        if (!v) continue;
        if (!strcmp(filters[k].param, "capture_step") && !srv_parse_u64(v, UINT64_MAX, NULL)) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, "capture_step"),
                            "capture_step must be an integer from 0 to 2^64-1");
            return 0;
        }
        pnames[*np] = filters[k].param;
        pcasts[*np] = filters[k].cast;
        params[(*np)++] = v;
        cg_buf_printf(where, " AND %s $%d%s", filters[k].lhs, *np, filters[k].cast);
    }
    const char *tag = srv_query(r, "tag");
    if (tag) {
        const char *colon = strchr(tag, ':');
        if (!colon || colon == tag) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "tag must be key:value");
            return 0;
        }
        params[(*np)++] = cg_arena_strndup(&r->arena, tag, (size_t)(colon - tag));
        params[(*np)++] = colon + 1;
        cg_buf_printf(where,
                      " AND EXISTS (SELECT 1 FROM bundle_tags t WHERE t.bundle_id = b.id AND t.key = $%d AND t.value = $%d)",
                      *np - 1, *np);
    }
    return 1;
}
