/* srv_derived.h — derived views of stored bundles (/graph, rebuilt /evidence,
 * /viewer, /archive) built from the blob store, never from a copy of the
 * bundle (issue 13, finding 6).
 *
 * derived.c: srv_derived_serve answers a request with view `view` of bundle
 * `id` (full 64-hex id): from <data_dir>/derived/<id>.<view> when it was built
 * before, else by calling fn to build it. Concurrent requests for one (id,
 * view) wait for a single build; at most SRV_DERIVED_BUILDS builds run at once
 * in the process (others wait up to SRV_DERIVED_WAIT_S, then 429
 * too_many_requests). A built view over SRV_DERIVED_MAX_BYTES is refused with
 * 413 payload_too_large (detail.limit "derived_view_bytes"). The directory is
 * a cache: emptied on first use in a process, kept under
 * SRV_DERIVED_CACHE_BYTES (least recently served files go first).
 *
 * routes_bundles.c supplies the build functions; they read trace.jsonl into
 * memory from the blob store (refusing a trace over SRV_DERIVED_MAX_TRACE_BYTES
 * with 413, detail.limit "derived_trace_bytes"), and link (fs blob store) or copy
 * (pg) only the files a view needs into a private staging directory: nsight/
 * for /evidence and /viewer, the bundle for /archive.
 *
 * Ownership: nothing escapes; fail.msg is the client message. */
#ifndef SRV_DERIVED_H
#define SRV_DERIVED_H

#include "srv.h"

#define SRV_DERIVED_BUILDS 2
#define SRV_DERIVED_WAIT_S 120
#define SRV_DERIVED_MAX_BYTES ((uint64_t)512 << 20)
#define SRV_DERIVED_MAX_TRACE_BYTES ((uint64_t)256 << 20)
#define SRV_DERIVED_CACHE_BYTES ((uint64_t)2 << 30)

typedef struct srv_derive_fail {
    cg_reason reason;  /* why (base/reason.def) */
    const char *limit; /* detail.limit, or NULL */
    char msg[512];
} srv_derive_fail;

/* Writes the view of bundle id to the new file out_path. 0, or -1 with *fail. */
typedef int (*srv_derive_fn)(srv_req *r, const char *id, const char *out_path, srv_derive_fail *fail);

enum MHD_Result srv_derived_serve(srv_req *r, const char *id, const char *view, const char *ctype, srv_derive_fn fn);

#endif
