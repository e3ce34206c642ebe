/* router.c — the route table (the single source the OpenAPI check compares
 * against) and path matching with {param} segments. */
#include <string.h>

#include "srv.h"
#include "srv_compare.h"
#include "srv_web.h"
#include "srv_history.h"
#include "srv_views.h"

const srv_route srv_routes[] = {
    {"GET", "/healthz", SRV_SCOPE_NONE, SRV_BODY_NONE, srv_h_healthz},
    {"GET", "/readyz", SRV_SCOPE_NONE, SRV_BODY_NONE, srv_h_readyz},
    {"GET", "/metrics", SRV_SCOPE_NONE, SRV_BODY_NONE, srv_h_metrics},
    {"GET", "/openapi.json", SRV_SCOPE_NONE, SRV_BODY_NONE, srv_h_openapi},
    {"POST", "/bundles", SRV_SCOPE_UPLOAD, SRV_BODY_STREAM, srv_h_bundles_post},
    {"GET", "/bundles", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundles_list},
    {"GET", "/bundles/{id}", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_get},
    {"GET", "/bundles/{id}/manifest", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_manifest},
    {"GET", "/bundles/{id}/files/{path}", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_file},
    {"GET", "/bundles/{id}/archive", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_archive},
    {"GET", "/bundles/{id}/signature", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_signature},
    {"GET", "/bundles/{id}/evidence", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_evidence},
    {"GET", "/bundles/{id}/graph", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_graph},
    {"GET", "/bundles/{id}/viewer", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_viewer},
    {"GET", "/bundles/{id}/timeline", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_timeline},
    {"GET", "/bundles/{id}/export", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_bundle_export},
    /* issue 14: dashboard views from the verified trace and evidence */
    {"GET", "/bundles/{id}/views/spans", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_views_spans},
    {"GET", "/bundles/{id}/views/ops", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_views_ops},
    {"GET", "/bundles/{id}/views/costs", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_views_costs},
    {"GET", "/bundles/{id}/views/memory", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_views_memory},
    {"GET", "/bundles/{id}/views/gpu", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_views_gpu},
    {"GET", "/bundles/{id}/views/evidence", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_views_evidence},
    {"POST", "/tokens", SRV_SCOPE_ADMIN, SRV_BODY_JSON, srv_h_tokens_create},
    {"GET", "/tokens", SRV_SCOPE_ADMIN, SRV_BODY_NONE, srv_h_tokens_list},
    {"DELETE", "/tokens/{id}", SRV_SCOPE_ADMIN, SRV_BODY_NONE, srv_h_tokens_delete},
    {"POST", "/keys", SRV_SCOPE_ADMIN, SRV_BODY_JSON, srv_h_keys_create},
    {"GET", "/keys", SRV_SCOPE_ADMIN, SRV_BODY_NONE, srv_h_keys_list},
    {"DELETE", "/keys/{key_id}", SRV_SCOPE_ADMIN, SRV_BODY_NONE, srv_h_keys_delete},
    {"GET", "/compare", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_compare_get},
    {"POST", "/compare", SRV_SCOPE_READ, SRV_BODY_JSON, srv_h_compare_post},
    {"GET", "/compare/spans", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_compare_spans},
    {"PUT", "/campaigns/{id}", SRV_SCOPE_UPLOAD, SRV_BODY_JSON, srv_h_campaign_put},
    {"GET", "/campaigns", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_campaigns_list},
    {"GET", "/campaigns/{id}", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_campaign_get},
    {"GET", "/campaigns/{id}/status", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_campaign_status},
    {"GET", "/campaigns/{id}/series", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_campaign_series},
    {"GET", "/series", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_series},
    /* issue 15: history, alerts, webhooks */
    {"GET", "/history", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_history},
    {"GET", "/compare/advice", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_compare_advice},
    {"GET", "/alerts", SRV_SCOPE_READ, SRV_BODY_NONE, srv_h_alerts_list},
    {"PATCH", "/alerts/{id}", SRV_SCOPE_UPLOAD, SRV_BODY_JSON, srv_h_alert_patch},
    {"POST", "/webhooks", SRV_SCOPE_ADMIN, SRV_BODY_JSON, srv_h_webhooks_create},
    {"GET", "/webhooks", SRV_SCOPE_ADMIN, SRV_BODY_NONE, srv_h_webhooks_list},
    {"DELETE", "/webhooks/{id}", SRV_SCOPE_ADMIN, SRV_BODY_NONE, srv_h_webhooks_delete},
    {"GET", "/webhooks/{id}/deliveries", SRV_SCOPE_ADMIN, SRV_BODY_NONE, srv_h_webhook_deliveries},
};
const size_t srv_n_routes = sizeof srv_routes / sizeof srv_routes[0];

/* Matches path against pattern; fills params. A trailing "{path}" takes the rest
 * (at least one byte). Empty segments never match a parameter. */
static bool match(cg_arena *a, const char *pat, const char *path, const char **params) {
    int np = 0;
    while (*pat && *path) {
        if (*pat == '{') {
            const char *pe = strchr(pat, '}');
            if (!pe) return false;
            bool rest = strncmp(pat, "{path}", 6) == 0 && pe[1] == 0;
            const char *se = rest ? path + strlen(path) : strchr(path, '/');
            if (!se) se = path + strlen(path);
            if (se == path || np >= SRV_MAX_PARAMS) return false;
            params[np++] = cg_arena_strndup(a, path, (size_t)(se - path));
            pat = pe + 1;
            path = se;
            continue;
        }
        if (*pat != *path) return false;
        pat++;
        path++;
    }
    return *pat == 0 && *path == 0;
}

int srv_route_match(cg_arena *a, const char *method, const char *path, const char **params,
                    char *allow, size_t allowsz) {
    int path_hit = 0;
    allow[0] = 0;
    for (size_t i = 0; i < srv_n_routes; i++) {
        const char *tmp[SRV_MAX_PARAMS] = {0};
        if (!match(a, srv_routes[i].pattern, path, tmp)) continue;
        if (strcmp(srv_routes[i].method, method) == 0) {
            memcpy(params, tmp, sizeof tmp);
            return (int)i;
        }
        size_t n = strlen(allow);
        snprintf(allow + n, allowsz - n, "%s%s", n ? ", " : "", srv_routes[i].method);
        path_hit = 1;
    }
    return path_hit ? -2 : -1;
}

int srv_cmd_routes(int argc, char **argv) {
    (void)argc;
    (void)argv;
    for (size_t i = 0; i < srv_n_routes; i++) printf("%s %s\n", srv_routes[i].method, srv_routes[i].pattern);
    return 0;
}
