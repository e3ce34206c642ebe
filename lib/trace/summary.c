/* summary.c — TraceSummary (§3): counts, measured total, depth and logical peak. */
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"

#include "base/alloc.h"
#include "trace/trace.h"

typedef struct mem_ev {
    uint64_t ts;
    size_t idx;
} mem_ev;

static int cmp_mem_ev(const void *x, const void *y) {
    const mem_ev *a = x, *b = y;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Simultaneous logical peak (§8): groups of equal timestamp, key (device, storage_id). */
static bool logical_peak(const cg_trace *t, uint64_t *peak_out) {
    if (!t->n_memory) return false;
    mem_ev *ev = cg_xalloc(t->n_memory, sizeof *ev);
    for (size_t i = 0; i < t->n_memory; i++) {
        ev[i].ts = t->memory[i].timestamp_ns;
        ev[i].idx = i;
    }
    qsort(ev, t->n_memory, sizeof *ev, cmp_mem_ev);
    cg_hstr live;
    cg_hstr_init(&live, 0);
    cg_arena keys;
    cg_arena_init(&keys, 0);
    uint64_t cur = 0, peak = 0;
    bool have_peak = false;
    size_t i = 0;
    while (i < t->n_memory) {
        size_t j = i;
        while (j < t->n_memory && ev[j].ts == ev[i].ts) {
            const cg_memory *m = &t->memory[ev[j].idx];
            char *key = cg_arena_printf(&keys, "%s%c%s", m->device, 0x1f, m->storage_id);
            size_t *v = cg_hstr_get(&live, key);
            if (!m->is_free) {
                if (!v || *v == SIZE_MAX) {
                    if (v) *v = (size_t)m->bytes;
                    else cg_hstr_put(&live, key, (size_t)m->bytes, NULL);
                    cur += m->bytes;
                }
            } else if (v && *v != SIZE_MAX) {
                cur -= *v;
                *v = SIZE_MAX; /* tombstone: not live */
            }
            j++;
        }
        if (!have_peak || cur > peak) {
            peak = cur;
            have_peak = true;
        }
        i = j;
    }
    cg_hstr_free(&live);
    cg_arena_free(&keys);
    cg_free(ev);
    *peak_out = peak;
    return true;
}

/* Parent index of span i: a span index, NO_SPAN (root) or UNKNOWN_PARENT. */
#define NO_SPAN SIZE_MAX
#define UNKNOWN_PARENT (SIZE_MAX - 1)
static size_t parent_of(const cg_trace *t, size_t i) {
    const char *pid = t->spans[i].parent_id;
    if (!pid) return NO_SPAN;
    const cg_span *p = cg_trace_find_span(t, pid);
    return p ? (size_t)(p - t->spans) : UNKNOWN_PARENT;
}

/* build_summary's depth of a span: the number of distinct ids met walking its
 * parent links (a root has 0; a missing parent still counts one link). The
 * direct walk is used only for spans that lead into a cycle. */
static uint64_t walk_depth(const cg_trace *t, size_t i, uint32_t *seen, uint32_t stamp) {
    uint64_t d = 0;
    for (size_t cur = parent_of(t, i); cur != NO_SPAN; cur = parent_of(t, cur)) {
        d++;
        if (cur == UNKNOWN_PARENT || seen[cur] == stamp) return cur == UNKNOWN_PARENT ? d : d - 1;
        seen[cur] = stamp;
    }
    return d;
}

static uint64_t max_depth(const cg_trace *t) {
    size_t n = t->n_spans;
    uint64_t *depth = cg_xzalloc(n, sizeof *depth), best = 0;
    size_t *stack = cg_xalloc(n, sizeof *stack);
    unsigned char *state = cg_xzalloc(n, 1); /* 0 new, 1 on the walk, 2 done, 3 cyclic */
    uint32_t *seen = cg_xzalloc(n, sizeof *seen);
    for (size_t i = 0; i < n; i++) {
        size_t sp = 0, cur = i;
        uint64_t base = 0;
        unsigned char verdict = 2;
        while (state[cur] == 0) {
            state[cur] = 1;
            stack[sp++] = cur;
            size_t p = parent_of(t, cur);
            if (p == NO_SPAN || p == UNKNOWN_PARENT) {
                base = p == NO_SPAN ? 0 : 1;
                sp--; /* cur itself: depth base */
                depth[cur] = base;
                state[cur] = 2;
                break;
            }
            cur = p;
        }
        if (sp && state[cur] == 2) base = depth[cur];
        else if (sp && state[cur] != 0) verdict = 3; /* reached the walk itself or a cyclic span */
        while (sp) {
            size_t k = stack[--sp];
            state[k] = verdict;
            depth[k] = verdict == 2 ? ++base : walk_depth(t, k, seen, (uint32_t)k + 1);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (depth[i] > best) best = depth[i];
    cg_free(depth);
    cg_free(stack);
    cg_free(state);
    cg_free(seen);
    return best;
}

void cg_trace_summary_counts(const cg_trace *t, cg_trace_summary *s) {
    memset(s, 0, sizeof *s);
    s->op_count = t->n_ops;
    s->span_count = t->n_spans;
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *sp = &t->spans[i];
        if (!sp->parent_id) s->root_span_count++;
        if (sp->measured) s->total_ns += sp->duration_ns;
    }
    s->max_depth = max_depth(t);
    for (size_t i = 0; i < t->n_memory; i++) {
        if (t->memory[i].is_free) s->free_count++;
        else s->alloc_count++;
    }
}

void cg_trace_summary_build(const cg_trace *t, cg_trace_summary *s) {
    cg_trace_summary_counts(t, s);
    s->has_logical_peak = logical_peak(t, &s->logical_peak_bytes);
}

cg_jv *cg_trace_summary_to_json(cg_arena *a, const cg_trace_summary *s) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "op_count", cg_jv_u64(a, s->op_count));
    cg_jv_obj_put(a, o, "total_ns", cg_jv_u64(a, s->total_ns));
    cg_jv_obj_put(a, o, "span_count", cg_jv_u64(a, s->span_count));
    cg_jv_obj_put(a, o, "root_span_count", cg_jv_u64(a, s->root_span_count));
    cg_jv_obj_put(a, o, "max_depth", cg_jv_u64(a, s->max_depth));
    cg_jv_obj_put(a, o, "alloc_count", cg_jv_u64(a, s->alloc_count));
    cg_jv_obj_put(a, o, "free_count", cg_jv_u64(a, s->free_count));
    cg_jv_obj_put(a, o, "logical_peak_bytes",
                  s->has_logical_peak ? cg_jv_u64(a, s->logical_peak_bytes) : cg_jv_null(a));
    return o;
}
