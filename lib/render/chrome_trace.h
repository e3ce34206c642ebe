/* chrome_trace.h — a trace as Chrome Trace Event Format JSON (what ui.perfetto.dev
 * and chrome://tracing open), written as a stream.
 *
 * Layout of the output (one JSON object, events one per line):
 *   - process 1 "host": host spans and ops as complete ("X") events. Each thread
 *     track is a lane in which events nest properly: a span goes to its parent's
 *     lane when it fits inside it, ops to their span's lane, anything else to the
 *     first lane it fits (or a new one), so concurrent spans never break nesting.
 *     Logical memory (live bytes of `memory` records per device, in timestamp
 *     order) and physical `device_memory` samples are counter ("C") tracks of
 *     this process: both carry trace-clock timestamps.
 *   - one process per (device, clock_id) of `device_interval` records, one lane
 *     group per stream. Device clocks are never aligned with the host clock or
 *     with each other: each keeps its own time origin, and the process names say so.
 *   - `otherData` names the producer, the trace schema and run id.
 * Metadata ("M") events close the event list: process names in pid order
 * (host first, then the device clocks in the order they first appear in start
 * order), then thread names per lane group in the same order.
 * Times are microseconds with three decimals, printed exactly from integer ns.
 *
 * Memory: O(records) for the sort orders and lanes; the output itself is
 * flushed to the sink in chunks of about 64 KiB and never held whole.
 * Errors: a sink returning non-zero stops the write (-1, err set). */
#ifndef CG_RENDER_CHROME_TRACE_H
#define CG_RENDER_CHROME_TRACE_H

#include "base/error.h"
#include "base/json.h"
#include "trace/trace.h"

#define CG_CHROME_TRACE_PRODUCER "candle-graph/chrome-trace/1"

int cg_chrome_trace_write(const cg_trace *t, cg_json_sink sink, void *ctx, cg_error *err);

#endif
