/* async_sink.h — a cg_json_sink whose chunks are delivered on a worker thread.
 *
 * Writing a large document costs the producer (JSON text) and the consumer
 * (write(2) into the page cache, SHA-256) about as much each; with the
 * consumer on its own thread they overlap on a machine with a second core.
 * cg_async_sink_put copies each chunk into one of CG_ASYNC_SLOTS buffers (it
 * blocks while all are in flight) and the worker hands them, in order, to the
 * inner sink. The inner sink and its context are touched by the worker only,
 * from cg_async_sink_start until cg_async_sink_finish returns.
 *
 * Errors: once the inner sink returns non-zero, later chunks are dropped and
 * cg_async_sink_put returns that value (the producer stops a chunk or two later
 * than it would have synchronously); cg_async_sink_finish returns it too.
 * Memory: CG_ASYNC_SLOTS buffers as large as the largest chunk.
 * Ownership: cg_async_sink_finish frees what cg_async_sink_start allocated. */
#ifndef CG_BASE_ASYNC_SINK_H
#define CG_BASE_ASYNC_SINK_H

#include <stddef.h>

#include "base/json.h"

#define CG_ASYNC_SLOTS 3

typedef struct cg_async_sink cg_async_sink;

/* NULL when no thread could be started: then call inner directly. */
cg_async_sink *cg_async_sink_start(cg_json_sink inner, void *inner_ctx);
/* A cg_json_sink (ctx: the cg_async_sink). */
int cg_async_sink_put(void *ctx, const char *data, size_t len);
/* Waits until every chunk was delivered, stops the worker and frees s; returns
 * the inner sink's first non-zero result, or 0. */
int cg_async_sink_finish(cg_async_sink *s);

#endif
