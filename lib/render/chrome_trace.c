/* chrome_trace.c — Chrome Trace Event Format export (see chrome_trace.h). */
#include "render/chrome_trace.h"
#include "base/alloc.h"
#include "base/num.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/hmap.h"

#define FLUSH_AT (64u * 1024u)
#define HOST_PID 1u
#define LANE_TRIES 64u /* lanes searched before a new one is opened (bounds the cost) */

/* ---- buffered output ---- */
typedef struct out {
    cg_buf b;
    cg_json_sink sink;
    void *ctx;
    bool failed, first;
} out;

static void out_flush(out *o) {
    if (!o->failed && o->b.len && o->sink(o->ctx, o->b.data, o->b.len)) o->failed = true;
    cg_buf_reset(&o->b);
}

static void ev_begin(out *o) {
    if (!o->first) cg_buf_puts(&o->b, ",\n");
    o->first = false;
}

static void ev_end(out *o) {
    if (o->b.len >= FLUSH_AT) out_flush(o);
}

#define PUT_LIT(b, lit) cg_buf_append((b), (lit), sizeof(lit) - 1)

static void put_us(cg_buf *b, uint64_t ns) {
    cg_json_write_u64(b, ns / 1000u);
    unsigned frac = (unsigned)(ns % 1000u);
    char d[4] = {'.', (char)('0' + frac / 100u), (char)('0' + frac / 10u % 10u), (char)('0' + frac % 10u)};
    cg_buf_append(b, d, sizeof d);
}

/* ,"pid":P,"tid":T,"ts": */
static void put_track(cg_buf *b, unsigned pid, unsigned tid) {
    PUT_LIT(b, ",\"pid\":");
    cg_json_write_u64(b, pid);
    PUT_LIT(b, ",\"tid\":");
    cg_json_write_u64(b, tid);
    PUT_LIT(b, ",\"ts\":");
}

static void put_str(cg_buf *b, const char *s) { cg_json_write_str(b, s, strlen(s)); }

/* ,"key":"value" (key is a literal) */
#define PUT_KV_STR(b, key, v) (PUT_LIT((b), ",\"" key "\":"), put_str((b), (v)))


/* ---- lanes: thread tracks in which complete events nest ---- */
typedef struct lane {
    uint64_t *ends; /* end times of the open enclosing events, innermost last */
    size_t n, cap;
    unsigned tid;
} lane;

typedef struct group {
    lane *lanes;
    size_t n, cap;
    unsigned pid;
    const char *label; /* thread name stem */
} group;


/* Events arrive in start order, so an event that ended by `start` can enclose
 * no later one: dropping it is safe whichever lane is finally chosen. */
static bool lane_fits(lane *l, uint64_t start, uint64_t end) {
    while (l->n && l->ends[l->n - 1] <= start) l->n--;
    return l->n == 0 || l->ends[l->n - 1] >= end;
}

static void lane_push(lane *l, uint64_t end) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->ends = cg_xrealloc(l->ends, l->cap, sizeof *l->ends);
    }
    l->ends[l->n++] = end;
}

/* Places [start, end] in `preferred` (SIZE_MAX: none) when it nests there, else
 * in the first of the first LANE_TRIES lanes where it nests, else a new lane.
 * Returns the lane index. */
static size_t group_place(group *g, size_t preferred, uint64_t start, uint64_t end, unsigned *next_tid) {
    size_t chosen = SIZE_MAX;
    if (preferred < g->n && lane_fits(&g->lanes[preferred], start, end)) chosen = preferred;
    for (size_t i = 0; chosen == SIZE_MAX && i < g->n && i < LANE_TRIES; i++)
        if (i != preferred && lane_fits(&g->lanes[i], start, end)) chosen = i;
    if (chosen == SIZE_MAX) {
        if (g->n == g->cap) {
            g->cap = g->cap ? g->cap * 2 : 4;
            g->lanes = cg_xrealloc(g->lanes, g->cap, sizeof *g->lanes);
        }
        g->lanes[g->n] = (lane){NULL, 0, 0, (*next_tid)++};
        chosen = g->n++;
    }
    lane_push(&g->lanes[chosen], end);
    return chosen;
}

static void group_free(group *g) {
    for (size_t i = 0; i < g->n; i++) cg_free(g->lanes[i].ends);
    cg_free(g->lanes);
}

/* ---- sort orders ---- */
typedef struct item {
    uint64_t start, dur;
    uint32_t kind; /* 0 span, 1 op (spans first at equal start and length) */
    size_t idx;
} item;

static int item_cmp(const void *pa, const void *pb) {
    const item *a = pa, *b = pb;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->dur != b->dur) return a->dur > b->dur ? -1 : 1; /* longer (enclosing) first */
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

typedef struct ctx {
    const cg_trace *t;
    out o;
    cg_arena a;
    unsigned next_tid;
    group host;
    group *dev; /* one per (device, clock_id, stream_id) */
    size_t n_dev, cap_dev;
    cg_hstr dev_index;   /* "device\0clock\0stream" -> index into dev */
    cg_hstr clock_index; /* "device\0clock" -> pid */
    unsigned next_pid;
} ctx;

/* Opens a complete event: {"name":N,"cat":CAT,"ph":"X","pid":P,"tid":T,"ts":…,"dur":…,"args":{"span_id":S
 * (the caller adds its other args and closes with "}}"). */
static cg_buf *complete_begin(ctx *c, const char *name, const char *cat, unsigned pid, unsigned tid, uint64_t ts,
                              uint64_t dur, const char *span_id) {
    cg_buf *b = &c->o.b;
    ev_begin(&c->o);
    PUT_LIT(b, "{\"name\":");
    put_str(b, name);
    PUT_LIT(b, ",\"cat\":");
    put_str(b, cat);
    PUT_LIT(b, ",\"ph\":\"X\"");
    put_track(b, pid, tid);
    put_us(b, ts);
    PUT_LIT(b, ",\"dur\":");
    put_us(b, dur);
    PUT_LIT(b, ",\"args\":{\"span_id\":");
    put_str(b, span_id);
    return b;
}

static void emit_span(ctx *c, const cg_span *s, unsigned tid) {
    cg_buf *b = complete_begin(c, s->name, "span", HOST_PID, tid, s->start_ns, s->closed ? s->duration_ns : 0, s->id);
    PUT_KV_STR(b, "kind", cg_span_kind_name(s->kind));
    if (s->step != CG_STEP_NONE) PUT_KV_STR(b, "step", cg_step_name(s->step));
    if (s->measured) PUT_LIT(b, ",\"measured\":true");
    if (!s->closed) PUT_LIT(b, ",\"closed\":false");
    PUT_LIT(b, "}}");
    ev_end(&c->o);
}

static void emit_op(ctx *c, const cg_op *op, unsigned tid) {
    cg_buf *b = complete_begin(c, op->op_name, "op", HOST_PID, tid, op->timestamp_ns, op->duration_ns, op->span_id);
    PUT_KV_STR(b, "dtype", op->dtype);
    PUT_KV_STR(b, "device", op->device);
    if (op->has_output_dense_bytes) {
        PUT_LIT(b, ",\"output_dense_bytes\":");
        cg_json_write_u64(b, op->output_dense_bytes);
    }
    PUT_LIT(b, "}}");
    ev_end(&c->o);
}

/* Host spans and ops, in start order, nested per lane. */
static void emit_host(ctx *c) {
    const cg_trace *t = c->t;
    size_t n = t->n_spans + t->n_ops;
    if (!n) return;
    item *items = cg_xrealloc(NULL, n, sizeof *items);
    size_t *span_lane = cg_xrealloc(NULL, (t->n_spans ? t->n_spans : 1), sizeof *span_lane);
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        items[i] = (item){s->start_ns, s->closed ? s->duration_ns : 0, 0, i};
        span_lane[i] = SIZE_MAX;
    }
    for (size_t i = 0; i < t->n_ops; i++)
        items[t->n_spans + i] = (item){t->ops[i].timestamp_ns, t->ops[i].duration_ns, 1, i};
    qsort(items, n, sizeof *items, item_cmp);
    for (size_t k = 0; k < n && !c->o.failed; k++) {
        const item *it = &items[k];
        const char *owner = it->kind ? t->ops[it->idx].span_id : t->spans[it->idx].parent_id;
        const cg_span *p = owner ? cg_trace_find_span(t, owner) : NULL;
        size_t pref = p ? span_lane[p - t->spans] : SIZE_MAX;
        size_t l = group_place(&c->host, pref, it->start, cg_sat_add_u64(it->start, it->dur), &c->next_tid);
        if (it->kind) {
            emit_op(c, &t->ops[it->idx], c->host.lanes[l].tid);
        } else {
            span_lane[it->idx] = l;
            emit_span(c, &t->spans[it->idx], c->host.lanes[l].tid);
        }
    }
    cg_free(span_lane);
    cg_free(items);
}

/* The lane group of a (device, clock_id, stream_id), created with its clock's
 * process on first use. Keys live in the context's arena. */
static group *device_group(ctx *c, const cg_device_interval *d) {
    size_t ld = strlen(d->device), lc = strlen(d->clock_id), ls = strlen(d->stream_id);
    char *key = cg_arena_alloc(&c->a, ld + lc + ls + 3);
    memcpy(key, d->device, ld + 1);
    memcpy(key + ld + 1, d->clock_id, lc + 1);
    memcpy(key + ld + lc + 2, d->stream_id, ls + 1);
    size_t *found = NULL;
    if (!cg_hstr_putn(&c->dev_index, key, ld + lc + ls + 2, c->n_dev, &found)) return &c->dev[*found];
    size_t *pid = NULL;
    if (cg_hstr_putn(&c->clock_index, key, ld + lc + 1, c->next_pid, &pid)) c->next_pid++;
    unsigned clock_pid = (unsigned)(pid ? *pid : c->next_pid - 1);
    if (c->n_dev == c->cap_dev) {
        c->cap_dev = c->cap_dev ? c->cap_dev * 2 : 4;
        c->dev = cg_xrealloc(c->dev, c->cap_dev, sizeof *c->dev);
    }
    c->dev[c->n_dev] = (group){NULL, 0, 0, clock_pid, d->stream_id};
    return &c->dev[c->n_dev++];
}

static void emit_device_interval(ctx *c, const cg_device_interval *d, unsigned pid, unsigned tid) {
    const cg_span *s = cg_trace_find_span(c->t, d->span_id);
    cg_buf *b = complete_begin(c, s ? s->name : d->span_id, "device", pid, tid, d->start_ns, d->duration_ns, d->span_id);
    PUT_KV_STR(b, "stream_id", d->stream_id);
    PUT_KV_STR(b, "backend", d->backend);
    PUT_KV_STR(b, "clock_id", d->clock_id);
    PUT_LIT(b, "}}");
    ev_end(&c->o);
}

/* Device intervals, each on its own clock's process, in start order per stream. */
static void emit_device(ctx *c) {
    const cg_trace *t = c->t;
    size_t n = t->n_device_intervals;
    if (!n) return;
    item *items = cg_xrealloc(NULL, n, sizeof *items);
    for (size_t i = 0; i < n; i++)
        items[i] = (item){t->device_intervals[i].start_ns, t->device_intervals[i].duration_ns, 0, i};
    qsort(items, n, sizeof *items, item_cmp);
    for (size_t k = 0; k < n && !c->o.failed; k++) {
        const cg_device_interval *d = &t->device_intervals[items[k].idx];
        group *g = device_group(c, d);
        size_t l = group_place(g, SIZE_MAX, d->start_ns, cg_sat_add_u64(d->start_ns, d->duration_ns), &c->next_tid);
        emit_device_interval(c, d, g->pid, g->lanes[l].tid);
    }
    cg_free(items);
}

static void emit_counter_head(ctx *c, const char *stem, const char *device, uint64_t ts) {
    cg_buf *b = &c->o.b;
    ev_begin(&c->o);
    PUT_LIT(b, "{\"name\":");
    size_t ls = strlen(stem), ld = strlen(device);
    char *name = cg_arena_alloc(&c->a, ls + ld + 1);
    memcpy(name, stem, ls);
    memcpy(name + ls, device, ld + 1);
    put_str(b, name);
    PUT_LIT(b, ",\"cat\":\"memory\",\"ph\":\"C\",\"pid\":");
    cg_json_write_u64(b, HOST_PID);
    PUT_LIT(b, ",\"ts\":");
    put_us(b, ts);
    PUT_LIT(b, ",\"args\":{");
}

/* Logical memory: live bytes per device after each record, in timestamp order
 * (frees saturate at zero: a free of an unseen storage cannot go negative). */
static void emit_logical_memory(ctx *c) {
    const cg_trace *t = c->t;
    size_t n = t->n_memory;
    if (!n) return;
    item *items = cg_xrealloc(NULL, n, sizeof *items);
    uint64_t *live = cg_xrealloc(NULL, n, sizeof *live);
    cg_hstr devices;
    cg_hstr_init(&devices, 0);
    for (size_t i = 0; i < n; i++) items[i] = (item){t->memory[i].timestamp_ns, 0, 0, i};
    qsort(items, n, sizeof *items, item_cmp);
    for (size_t k = 0; k < n && !c->o.failed; k++) {
        const cg_memory *m = &t->memory[items[k].idx];
        size_t *slot = NULL;
        if (cg_hstr_put(&devices, m->device, devices.n, &slot)) live[devices.n - 1] = 0;
        uint64_t *v = &live[slot ? *slot : devices.n - 1];
        *v = m->is_free ? (*v > m->bytes ? *v - m->bytes : 0) : cg_sat_add_u64(*v, m->bytes);
        emit_counter_head(c, "logical memory ", m->device, m->timestamp_ns);
        PUT_LIT(&c->o.b, "\"live_bytes\":");
        cg_json_write_u64(&c->o.b, *v);
        PUT_LIT(&c->o.b, "}}");
        ev_end(&c->o);
    }
    cg_hstr_free(&devices);
    cg_free(live);
    cg_free(items);
}

/* Physical samples, values verbatim (absent values stay absent). */
static void emit_device_memory(ctx *c) {
    const cg_trace *t = c->t;
    for (size_t i = 0; i < t->n_device_memory && !c->o.failed; i++) {
        const cg_device_memory *m = &t->device_memory[i];
        emit_counter_head(c, "device memory ", m->device, m->timestamp_ns);
        cg_buf *b = &c->o.b;
        const char *sep = "";
        const struct { bool has; const char *k; uint64_t v; } f[] = {
            {m->has_used, "used_bytes", m->used_bytes},
            {m->has_free, "free_bytes", m->free_bytes},
            {m->has_reserved, "reserved_bytes", m->reserved_bytes},
            {m->has_capacity, "capacity_bytes", m->capacity_bytes},
        };
        for (size_t j = 0; j < sizeof f / sizeof f[0]; j++) {
            if (!f[j].has) continue;
            cg_buf_printf(b, "%s\"%s\":%" PRIu64, sep, f[j].k, f[j].v);
            sep = ",";
        }
        PUT_LIT(b, "}}");
        ev_end(&c->o);
    }
}

static void emit_meta(ctx *c, const char *what, unsigned pid, const unsigned *tid, const char *name,
                      const char *name2) {
    cg_buf *b = &c->o.b;
    ev_begin(&c->o);
    cg_buf_printf(b, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u", what, pid);
    if (tid) cg_buf_printf(b, ",\"tid\":%u", *tid);
    cg_buf_puts(b, ",\"args\":{\"name\":");
    cg_buf b2 = CG_BUF_INIT;
    cg_buf_puts(&b2, name);
    if (name2) cg_buf_puts(&b2, name2);
    put_str(b, b2.data);
    cg_buf_free(&b2);
    PUT_LIT(b, "}}");
    ev_end(&c->o);
}

static void emit_lane_names(ctx *c, const group *g, const char *stem) {
    for (size_t i = 0; i < g->n; i++) {
        char suffix[48] = "";
        if (i) snprintf(suffix, sizeof suffix, " (lane %zu)", i + 1);
        emit_meta(c, "thread_name", g->pid, &g->lanes[i].tid, stem, suffix);
    }
}

/* Process and thread names; device processes say that their clock is their own. */
static void emit_names(ctx *c) {
    emit_meta(c, "process_name", HOST_PID, NULL, "host (trace clock)", NULL);
    emit_lane_names(c, &c->host, "spans and ops");
    for (size_t i = 0; i < c->clock_index.n; i++) { /* first-seen order: ascending pid */
        const cg_hstr_ent *s = &c->clock_index.ent[i];
        const char *device = s->key, *clock = s->key + strlen(s->key) + 1;
        cg_buf name = CG_BUF_INIT;
        cg_buf_printf(&name, "device %s, clock %s (own clock, not aligned with the host or other clocks)", device,
                      clock);
        emit_meta(c, "process_name", (unsigned)s->value, NULL, name.data, NULL);
        cg_buf_free(&name);
    }
    for (size_t i = 0; i < c->n_dev; i++) {
        cg_buf stem = CG_BUF_INIT;
        cg_buf_printf(&stem, "stream %s", c->dev[i].label);
        emit_lane_names(c, &c->dev[i], stem.data);
        cg_buf_free(&stem);
    }
}

int cg_chrome_trace_write(const cg_trace *t, cg_json_sink sink, void *ctx_, cg_error *err) {
    ctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.o.sink = sink;
    c.o.ctx = ctx_;
    c.o.first = true;
    c.next_tid = 1;
    c.next_pid = HOST_PID + 1;
    c.host.pid = HOST_PID;
    cg_arena_init(&c.a, 0);
    cg_hstr_init(&c.dev_index, 0);
    cg_hstr_init(&c.clock_index, 0);
    cg_buf_puts(&c.o.b, "{\"traceEvents\":[\n");
    emit_host(&c);
    emit_device(&c);
    emit_logical_memory(&c);
    emit_device_memory(&c);
    emit_names(&c);
    cg_buf_puts(&c.o.b, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"" CG_CHROME_TRACE_PRODUCER
                        "\",\"trace_schema\":");
    put_str(&c.o.b, t->schema ? t->schema : CG_TRACE_SCHEMA);
    cg_buf_puts(&c.o.b, ",\"run_id\":");
    put_str(&c.o.b, t->run.run_id ? t->run.run_id : "");
    cg_buf_puts(&c.o.b, ",\"clocks\":\"host spans, ops and memory counters use the trace clock; each device "
                        "process keeps its own device clock, never aligned with the host clock\"}}\n");
    out_flush(&c.o);
    bool failed = c.o.failed;
    cg_buf_free(&c.o.b);
    group_free(&c.host);
    for (size_t i = 0; i < c.n_dev; i++) group_free(&c.dev[i]);
    cg_free(c.dev);
    cg_hstr_free(&c.dev_index);
    cg_hstr_free(&c.clock_index);
    cg_arena_free(&c.a);
    if (failed) return cg_err_set(err, CG_EIO, "writing the Chrome trace failed");
    return 0;
}
