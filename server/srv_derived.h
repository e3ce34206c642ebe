/* srv_derived.h — derived views of stored bundles (/graph, rebuilt /evidence,
 * /viewer, /export, /archive) built from the blob store, never from a copy of
 * the bundle (issue 13, finding 6).
 *
 * derived.c: srv_derived_serve answers a request with view `view` of bundle
 * `id` (full 64-hex id): from <data_dir>/derived/<id>.<view> when it was built
 * before, else by calling fn to build it. Concurrent requests for one (id,
 * view) wait for a single build; at most SRV_DERIVED_BUILDS builds run at once
 * in the process (others wait up to SRV_DERIVED_WAIT_S, then 429
 * too_many_requests). A built view over srv_derived_view_limit of its trace
 * (SRV_DERIVED_MAX_BYTES, or SRV_DERIVED_OUT_RATIO × the trace when larger) is
 * refused with 413 payload_too_large (detail.limit "derived_view_bytes"). The
 * directory is a cache: emptied on first use in a process, kept under
 * SRV_DERIVED_CACHE_BYTES (least recently served files go first).
 *
 * Limits (issue 14: a 5M-record bundle has every derived view): a trace is
 * loaded for a view when it fits the server's --max-decoded-bytes, the limit it
 * was accepted under at ingest (the decoded-bytes and ratio guards of the
 * upload are what protect against hostile input; an over-limit trace is 413,
 * detail.limit "derived_trace_bytes"). Builds over a trace larger than
 * SRV_DERIVED_HEAVY_BYTES hold about twice the trace (in spill files when the
 * server spills, base/spill.h; else in memory), so they run one at a time in
 * the process (srv_heavy_enter: derived views and dashboard view
 * indexes share the gate).
 *
 * routes_bundles.c supplies the build functions; they parse trace.jsonl as it
 * streams from the blob store, and link (fs blob store) or copy (pg) only the
 * nsight/ files into a private staging directory for /evidence and /viewer;
 * /archive is written straight from the blobs.
 *
 * Ownership: nothing escapes; fail.msg is the client message. */
#ifndef SRV_DERIVED_H
#define SRV_DERIVED_H

#include "srv.h"

#define SRV_DERIVED_BUILDS 2
#define SRV_DERIVED_WAIT_S 120
#define SRV_DERIVED_MAX_BYTES ((uint64_t)512 << 20) /* floor of the view limit */
#define SRV_DERIVED_OUT_RATIO 4                       /* view limit per trace byte above the floor */
#define SRV_DERIVED_HEAVY_BYTES ((uint64_t)64 << 20)  /* larger traces build one at a time */
#define SRV_DERIVED_CACHE_BYTES ((uint64_t)2 << 30)

typedef struct srv_derive_fail {
    cg_reason reason;  /* why (base/reason.def) */
    const char *limit; /* detail.limit, or NULL */
    char msg[512];
    uint64_t trace_bytes; /* set by the build: the trace size the view limit scales with */
} srv_derive_fail;

/* Writes the view of bundle id to the new file out_path. 0, or -1 with *fail. */
typedef int (*srv_derive_fn)(srv_req *r, const char *id, const char *out_path, srv_derive_fail *fail);

/* Whether a trace of trace_bytes may be loaded for a derived view (≤ max_decoded). */
bool srv_derived_trace_fits(uint64_t trace_bytes, uint64_t max_decoded);
/* Largest derived view of a trace of trace_bytes. */
uint64_t srv_derived_view_limit(uint64_t trace_bytes);

/* The heavy-build gate: a build over a trace of trace_bytes > SRV_DERIVED_HEAVY_BYTES
 * waits until no other such build runs (wait_s > 0: at most that long; 0: as
 * long as it takes). Returns 1 (gate taken: pass to srv_heavy_leave), 0 (a
 * light build: no gate), or -1 (the wait ran out). */
int srv_heavy_enter(uint64_t trace_bytes, int wait_s);
void srv_heavy_leave(int token);
/* Hands the heap freed by a large build back to the system (glibc: malloc_trim;
 * elsewhere nothing), so that what one thread freed does not stay in its
 * malloc arena while the next build, in another thread, allocates anew. */
void srv_memory_trim(void);

enum MHD_Result srv_derived_serve(srv_req *r, const char *id, const char *view, const char *ctype, srv_derive_fn fn);

#endif
