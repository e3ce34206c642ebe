/* srv_web.h — the web app's routes (issue 8): static files and the timeline LOD.
 *
 * routes_static.c serves the files of web/ that are embedded into the binary
 * (srv_embedded_file with paths "web/..."): "/" is web/index.html, and
 * "/app/…", "/viewer/…", "/vendor/…" map to web/app, web/viewer, web/vendor.
 * Nothing is read from the file system, so no path can leave web/; a path with
 * a ".." or "." segment, a backslash, a NUL or an empty segment is not found.
 * Answers carry a Content-Type from the extension, a strong ETag (SHA-256 of
 * the bytes, computed once per file) and honour If-None-Match (304).
 *
 * routes_timeline.c answers GET /bundles/{id}/timeline from a per-bundle index
 * (timeline_index.c, srv_timeline.h) built once from trace.jsonl and kept in a
 * small LRU cache held by the server; see the file header for the response
 * shape. Both need no ownership from callers. */
#ifndef SRV_WEB_H
#define SRV_WEB_H

#include <stdbool.h>

#include "srv.h"

/* For GET/HEAD requests whose path matched no route: when the path names an
 * embedded web file, queues the answer into *res and returns true; else false
 * (the caller answers 404 as before). */
bool srv_static_try(srv_req *r, const char *method, const char *path, enum MHD_Result *res);

enum MHD_Result srv_h_bundle_timeline(srv_req *r);

/* Drops every cached timeline index nobody is using. */
void srv_timeline_cache_clear(srv_server *s);
/* Queues a freshly published bundle (full 64-hex id) so its timeline index,
 * then its dashboard view index (srv_views_warm), is built in the background (one worker thread, started on first use; at most 16
 * queued, further ids are dropped and built on first request instead). Call
 * after the publishing transaction committed. */
void srv_timeline_warm(srv_server *s, const char *id);
/* Stops the worker (waits for the index it is building), clears the cache and
 * frees the server's timeline state. Call once at shutdown, after HTTP stopped
 * and before the pool is freed. */
void srv_timeline_stop(srv_server *s);

#endif
