/* writer.c — compact JSONL output of a trace document in to_events() order. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/fs.h"
#include "trace/trace.h"

static void line(cg_buf *out, cg_arena *a, cg_jv *v) {
    cg_json_write(out, v, false);
    cg_buf_putc(out, '\n');
    cg_arena_reset(a);
}

void cg_trace_write(cg_buf *out, const cg_trace *t) {
    cg_arena a;
    cg_arena_init(&a, 0);
    line(out, &a, cg_event_meta_json(&a, t->schema, &t->run));
    for (size_t i = 0; i < t->n_spans; i++) {
        line(out, &a, cg_event_span_start_json(&a, &t->spans[i]));
        if (t->spans[i].closed) line(out, &a, cg_event_span_end_json(&a, &t->spans[i]));
    }
    for (size_t i = 0; i < t->n_ops; i++) line(out, &a, cg_event_op_json(&a, &t->ops[i]));
    for (size_t i = 0; i < t->n_tensors; i++) line(out, &a, cg_event_tensor_json(&a, &t->tensors[i]));
    for (size_t i = 0; i < t->n_tensor_stats; i++) line(out, &a, cg_event_tensor_stats_json(&a, &t->tensor_stats[i]));
    for (size_t i = 0; i < t->n_memory; i++) line(out, &a, cg_event_memory_json(&a, &t->memory[i]));
    for (size_t i = 0; i < t->n_device_memory; i++) line(out, &a, cg_event_device_memory_json(&a, &t->device_memory[i]));
    for (size_t i = 0; i < t->n_device_intervals; i++)
        line(out, &a, cg_event_device_interval_json(&a, &t->device_intervals[i]));
    for (size_t i = 0; i < t->n_gradients; i++) line(out, &a, cg_event_gradient_json(&a, &t->gradients[i]));
    for (size_t i = 0; i < t->n_edges; i++) line(out, &a, cg_event_edge_json(&a, &t->edges[i]));
    line(out, &a, cg_event_terminal_json(&a, &t->terminal));
    cg_arena_free(&a);
}

int cg_trace_write_file(const cg_trace *t, const char *path, cg_error *err) {
    char parent[4096];
    cg_path_parent(path, parent, sizeof parent);
    if (cg_mkdir_p(parent, err) != 0) return -1;
    cg_buf b = CG_BUF_INIT;
    cg_trace_write(&b, t);
    int rc = cg_write_file(path, b.data, b.len, false, err);
    cg_buf_free(&b);
    return rc;
}
