/* routes_timeline.c — GET /bundles/{id}/timeline?clock=&start_ns=&end_ns=&px=
 *
 * Level-of-detail view of a bundle's trace for the web app's Timeline tab.
 * Tracks: host spans (one lane per nesting depth) and host ops on the host
 * clock; device intervals with one lane per (device, clock_id). Host and
 * device clocks are separate domains and are never aligned: a request names
 * one clock ("host", the default, or a device clock_id) and [start_ns, end_ns)
 * is on that clock; only that clock's tracks are answered. Within a track the
 * intervals overlapping the window are merged, in start order, whenever the
 * next one starts within one pixel ((end-start)/px ns) of the current box's
 * end, so a track carries at most about px+1 boxes whatever the trace size.
 *
 * Answer (candle-graph/timeline/1):
 *   {schema, id, clock, start_ns, end_ns, px,
 *    clocks: [{clock, kind: "host"|"device", devices: [..], min_ns, max_ns, records}],
 *    tracks: [{id, kind: "span"|"op"|"device", label, device|null, depth|null,
 *              records, window_records, boxes: [[start_ns, end_ns, count, name|null]…]}]}
 * A box of count 1 carries the span/op name; a merged box carries null.
 * start_ns/end_ns default to the clock's extent; px defaults to 1000 (1…10000).
 *
 * The index of a bundle (sorted intervals and a running maximum of their ends
 * per track, names copied once) is built from trace.jsonl on first use and
 * kept in an LRU cache of CACHE_SLOTS bundles (bundles are immutable, so
 * entries never go stale); a request costs O(log n + k) per track for k
 * intervals in the window (O(boxes of a coarse level) for a window holding the
 * whole track at coarse pixel sizes), and never re-reads the trace. Uploads queue their
 * bundle for a background build (srv_timeline_warm), and a request for an
 * index being built waits for that build rather than starting another. A built
 * index is also written to <data_dir>/timeline/<id>.idx and read back after a
 * restart instead of parsing the trace again. Errors: 400
 * invalid_parameter, 404 not_found, 422 trace_invalid (trace cannot be read),
 * 503 unavailable. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fs.h"
#include "srv_store.h"
#include "srv_timeline.h"
#include "srv_web.h"
#include "trace/trace.h"

#define PX_DEFAULT 1000
#define PX_MAX 10000

static size_t first_overlap(const srv_tl_track *t, uint64_t qs) {
    size_t lo = 0, hi = t->n; /* first i with maxend[i] >= qs */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->maxend[mid] >= qs) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* One box [start, end, records, name or null] of a track's answer. */
static void push_box(cg_arena *a, cg_jv *boxes, uint64_t bs, uint64_t be, uint64_t bn, const char *bname) {
    cg_jv *bx = cg_jv_arr(a);
    cg_jv_arr_push(a, bx, cg_jv_u64(a, bs));
    cg_jv_arr_push(a, bx, cg_jv_u64(a, be));
    cg_jv_arr_push(a, bx, cg_jv_u64(a, bn));
    cg_jv_arr_push(a, bx, bname ? cg_jv_str_nocopy(a, bname) : cg_jv_null(a));
    cg_jv_arr_push(a, boxes, bx);
}

static cg_jv *track_json(cg_arena *a, const srv_tl_track *t, uint64_t qs, uint64_t qe, unsigned px) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, t->id));
    cg_jv_obj_put(a, o, "kind", cg_jv_str(a, t->kind));
    cg_jv_obj_put(a, o, "label", cg_jv_str(a, t->label));
    cg_jv_obj_put(a, o, "device", t->device ? cg_jv_str(a, t->device) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "depth", t->depth >= 0 ? cg_jv_u64(a, (uint64_t)t->depth) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "records", cg_jv_u64(a, t->n));
    cg_jv *boxes = cg_jv_arr(a);
    uint64_t w = (qe - qs) / px;
    if (w == 0) w = 1;
    uint64_t in_window = 0, bs = 0, be = 0, bn = 0;
    const char *bname = NULL;
    /* a window holding the whole track at coarse_gap per pixel or coarser reads the coarse level */
    bool coarse = t->nc && qs <= t->start[0] && qe > t->maxend[t->n - 1] && w >= t->coarse_gap;
    const uint64_t *S = coarse ? t->cs : t->start, *E = coarse ? t->ce : t->end;
    const char *const *NM = coarse ? t->cname : t->name;
    size_t n = coarse ? t->nc : t->n;
    for (size_t i = coarse ? 0 : first_overlap(t, qs); i < n && S[i] < qe; i++) {
        uint64_t s = S[i], e = E[i], c = coarse ? t->cn[i] : 1;
        if (e < qs || (e == qs && s < qs)) continue;
        in_window += c;
        if (bn && s <= cg_sat_add_u64(be, w)) {
            if (e > be) be = e;
            if (bname != NM[i]) bname = NULL;
            bn += c;
            continue;
        }
        if (bn) push_box(a, boxes, bs, be, bn, bname);
        bs = s;
        be = e;
        bn = c;
        bname = NM[i];
    }
    if (bn) push_box(a, boxes, bs, be, bn, bname);
    cg_jv_obj_put(a, o, "window_records", cg_jv_u64(a, in_window));
    cg_jv_obj_put(a, o, "boxes", boxes);
    return o;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ') return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !end || *end) return false;
    *out = (uint64_t)v;
    return true;
}

enum MHD_Result srv_h_bundle_timeline(srv_req *r) {
    cg_arena *a = &r->arena;
    uint64_t qs = 0, qe = 0, pxv = PX_DEFAULT;
    const char *s_start = srv_query(r, "start_ns"), *s_end = srv_query(r, "end_ns"), *s_px = srv_query(r, "px");
    const char *clock = srv_query(r, "clock");
    if (!clock || !*clock) clock = "host";
    if (s_start && *s_start && !parse_u64(s_start, &qs))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "start_ns must be a non-negative integer");
    if (s_end && *s_end && !parse_u64(s_end, &qe))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "end_ns must be a non-negative integer");
    if (s_px && *s_px && (!parse_u64(s_px, &pxv) || pxv < 1 || pxv > PX_MAX))
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "px must be an integer from 1 to %d", PX_MAX);

    cg_error err = {0};
    char id[65] = "";
    enum MHD_Result res;
    if (!srv_bundle_id_param(r, id, &res)) return res;

    srv_tl_index *ix = srv_timeline_acquire(r->s, id, &err);
    if (!ix && err.reason == CG_R_INTERNAL)
        return srv_fail(r, CG_R_INTERNAL, NULL, "cannot read trace.jsonl of bundle %s: %s", id, err.msg);
    if (!ix) return srv_fail_error(r, &err, NULL);

    const srv_tl_clock *ck = NULL;
    for (size_t i = 0; i < ix->n_clocks && !ck; i++)
        if (!strcmp(ix->clocks[i].clock, clock)) ck = &ix->clocks[i];
    if (!ck) {
        srv_timeline_release(r->s, ix);
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "this trace has no clock %s", clock);
    }
    if (!s_start || !*s_start) qs = ck->min_ns;
    if (!s_end || !*s_end) qe = ck->max_ns > ck->min_ns ? ck->max_ns + 1 : ck->min_ns + 1;
    if (qe <= qs) {
        srv_timeline_release(r->s, ix);
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "end_ns must be greater than start_ns");
    }

    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str(a, "candle-graph/timeline/1"));
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, id));
    cg_jv_obj_put(a, o, "clock", cg_jv_str(a, ck->clock));
    cg_jv_obj_put(a, o, "start_ns", cg_jv_u64(a, qs));
    cg_jv_obj_put(a, o, "end_ns", cg_jv_u64(a, qe));
    cg_jv_obj_put(a, o, "px", cg_jv_u64(a, pxv));
    cg_jv *clocks = cg_jv_arr(a);
    for (size_t i = 0; i < ix->n_clocks; i++) {
        const srv_tl_clock *k = &ix->clocks[i];
        cg_jv *co = cg_jv_obj(a);
        cg_jv_obj_put(a, co, "clock", cg_jv_str(a, k->clock));
        cg_jv_obj_put(a, co, "kind", cg_jv_str(a, k->host ? "host" : "device"));
        cg_jv *devs = cg_jv_arr(a);
        for (size_t t = k->first_track; !k->host && t < k->first_track + k->n_tracks; t++)
            cg_jv_arr_push(a, devs, cg_jv_str(a, ix->tracks[t].device));
        cg_jv_obj_put(a, co, "devices", devs);
        cg_jv_obj_put(a, co, "min_ns", cg_jv_u64(a, k->min_ns));
        cg_jv_obj_put(a, co, "max_ns", cg_jv_u64(a, k->max_ns));
        cg_jv_obj_put(a, co, "records", cg_jv_u64(a, k->records));
        cg_jv_arr_push(a, clocks, co);
    }
    cg_jv_obj_put(a, o, "clocks", clocks);
    cg_jv *tracks = cg_jv_arr(a);
    for (size_t t = ck->first_track; t < ck->first_track + ck->n_tracks; t++)
        cg_jv_arr_push(a, tracks, track_json(a, &ix->tracks[t], qs, qe, (unsigned)pxv));
    cg_jv_obj_put(a, o, "tracks", tracks);
    /* the names in o point into the index: write the answer before releasing it */
    res = srv_reply_json(r, 200, o);
    srv_timeline_release(r->s, ix);
    return res;
}
