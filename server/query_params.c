/* query_params.c — the parsing of query parameters shared by the routes: decimal
 * integers, and the bundle-list filters of GET /bundles that every cohort selector
 * applies too (API.md "Bundles", "Comparison"). One table, one parser. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srv_store.h"

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

/* The filter table and its SQL fragments live in the store (store_bundles.c);
 * here each value is checked and bound. */
int srv_bundle_filters_add(srv_req *r, struct srv_where *w, enum MHD_Result *res) {
    const char *name;
    for (size_t k = 0; (name = srv_bundle_filter_param(k)); k++) {
        const char *v = srv_query(r, name);
        if (!v) continue;
        if (!strcmp(name, "capture_step") && !srv_parse_u64(v, UINT64_MAX, NULL)) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, "capture_step"),
                            "capture_step must be an integer from 0 to 2^64-1");
            return 0;
        }
        if (!srv_where_filter(w, k, v)) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "too many filters");
            return 0;
        }
    }
    const char *tag = srv_query(r, "tag");
    if (tag) {
        const char *colon = strchr(tag, ':');
        if (!colon || colon == tag) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "tag must be key:value");
            return 0;
        }
        if (!srv_where_tag(w, cg_arena_strndup(&r->arena, tag, (size_t)(colon - tag)), colon + 1)) {
            *res = srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "too many filters");
            return 0;
        }
    }
    return 1;
}

int srv_bundle_id_param(srv_req *r, char id[65], enum MHD_Result *res) {
    const char *p = r->params[0];
    size_t n = strlen(p);
    bool hex = n >= 12 && n <= 64;
    for (size_t i = 0; hex && i < n; i++) hex = (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f');
    if (!hex) {
        *res = srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, "id"),
                        "a bundle id is 12 to 64 lowercase hex characters");
        return 0;
    }
    cg_error err = {0};
    int rows = srv_store_bundle_resolve(r->s->pool, p, id, &err);
    if (rows == 1) return 1;
    if (rows < 0) *res = srv_fail_unavailable(r, &err);
    else if (rows == 0) *res = srv_fail(r, CG_R_NOT_FOUND, NULL, "no bundle with id %s", p);
    else *res = srv_fail(r, CG_R_INVALID_PARAMETER, srv_detail_param(r, "id"), "bundle id prefix %s is ambiguous", p);
    return 0;
}
