/* srv_timeline.h — the Timeline index of a bundle (timeline_index.c), read by
 * GET /bundles/{id}/timeline (routes_timeline.c).
 *
 * An index holds, per track (host spans one lane per nesting depth, host ops,
 * one lane per device clock), the intervals sorted by (start, end) with a
 * running maximum of their ends and a coarse merged level; clocks group the
 * tracks. Indexes are shared and reference counted: srv_timeline_acquire takes
 * one reference (building the index from the store when needed; a request for
 * an index being built waits for that build), srv_timeline_release drops it.
 * The cache, the build table and the warm-up worker live in the server
 * (srv_server.timeline), created on first use. */
#ifndef SRV_TIMELINE_H
#define SRV_TIMELINE_H

#include "srv.h"
#include "srv_cache.h"

#include "base/num.h"

typedef struct srv_tl_track {
    char *id, *label, *device; /* device: NULL for host tracks */
    const char *kind;          /* "span" | "op" | "device" (static) */
    int depth;                 /* span lanes; -1 otherwise */
    size_t n, cap;
    uint64_t *start, *end, *maxend; /* maxend[i] = max(end[0..i]) */
    const char **name;              /* interned in the index arena */
    /* coarse level: the intervals merged at gap coarse_gap (extent / COARSE_BOXES),
     * used for windows that cover the whole track at that pixel size or coarser */
    size_t nc;
    uint64_t coarse_gap;
    uint64_t *cs, *ce, *cn;
    const char **cname;
} srv_tl_track;

typedef struct srv_tl_clock {
    char *clock;  /* "host" or a device clock_id */
    bool host;
    size_t first_track, n_tracks; /* tracks are grouped by clock */
    uint64_t min_ns, max_ns;
    size_t records;
} srv_tl_clock;

typedef struct srv_tl_index {
    srv_cache_item item; /* first: id, refs (srv_cache.h) */
    cg_arena arena; /* names and labels */
    srv_tl_track *tracks;
    size_t n_tracks;
    srv_tl_clock *clocks;
    size_t n_clocks;
    double build_ms; /* how long srv_timeline_build took (its log line) */
} srv_tl_index;



/* The index of bundle id (full 64-hex) with a reference taken, built from the
 * store when needed (a pooled connection only for the lookup and the blob,
 * none while parsing or waiting for another build). NULL with err and its
 * reason: not_found (no trace.jsonl), trace_invalid (it does not parse),
 * internal (indexed but unreadable), none (the store is unreachable). */
srv_tl_index *srv_timeline_acquire(srv_server *s, const char *id, cg_error *err);
void srv_timeline_release(srv_server *s, srv_tl_index *x);

/* Nesting depth of every span of t (malloc'd, indexed like t->spans; the caller
 * frees it); a missing parent or a cycle ends the walk. */
struct cg_trace;
int *srv_tl_span_depths(const struct cg_trace *t);
/* The index of bundle id built from its verified trace t (the upload's own
 * parse), neither cached nor saved; srv_timeline_keep saves it as the on-disk
 * copy that the warm-up and later requests load (a failed save is logged:
 * the index is then built from the store on first use) and frees it;
 * srv_timeline_discard only frees it (an upload that was not published). */
srv_tl_index *srv_timeline_build(const char *id, const struct cg_trace *t);
void srv_timeline_keep(srv_server *s, srv_tl_index *x);
void srv_timeline_discard(srv_tl_index *x);

#endif
