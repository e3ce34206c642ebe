/* memory_span.c — per-span and per-op logical memory metrics for the graph
 * (the crate's node_memory_metrics), from the logical plane of memory.c. */
#include "analysis/memory.h"
#include "base/alloc.h"
#include "base/hmap.h"
#include "base/num.h"

#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)

/* The crate's clipped_lifetime_metrics walks one window: live = the bytes live
 * at its start, then per timestamp T inside it live = sat_sub(live, F_T) + A_T
 * (F_T / A_T: bytes of the lifetimes ending / starting at T), peak = the largest
 * live seen. Each step is the map x -> max(x + (A_T - F_T), A_T), and such maps
 * compose (x -> max(x + a, b)), as does "the largest value met along the way"
 * (x -> max(x + c, d)); so a segment tree over the distinct timestamps holding
 * these maps, with Fenwick sums of A and F and the bytes Z_T of zero-length
 * lifetimes, answers a window's peak and residual in O(log n) for whatever set
 * of lifetimes it holds. A span whose subtree holds few lifetimes is measured
 * by walking them directly (the same steps), without the tree.
 * Figures are exact while byte sums stay below 2^63 (the map coefficients
 * saturate there); the A/F/Z sums wrap exactly (each removal undoes an addition). */
typedef struct fmap {
    int64_t a, b, c, d; /* step map max(x + a, b), peak map max(x + c, d) */
} fmap;

typedef struct ftree {
    size_t m;          /* leaves: the distinct timestamps */
    fmap *n;           /* n[i] = join(n[2i], n[2i+1]) for 1 <= i < m; leaves are computed */
    uint64_t *sa, *sf, *sz; /* A, F and Z per leaf (sz NULL: no zero-length lifetime) */
    uint64_t *fa, *ff;      /* Fenwick sums of A and F, 1-based over leaves */
} ftree;

static int64_t i64_of(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

static int64_t add_i64(int64_t x, int64_t y) {
    if (y > 0 && x > INT64_MAX - y) return INT64_MAX;
    if (y < 0 && x < INT64_MIN - y) return INT64_MIN;
    return x + y;
}

static int64_t max_i64(int64_t x, int64_t y) { return x > y ? x : y; }

static fmap fmap_join(fmap l, fmap r) {
    fmap o = {add_i64(l.a, r.a), max_i64(add_i64(l.b, r.a), r.b), max_i64(l.c, add_i64(l.a, r.c)), 0};
    o.d = max_i64(max_i64(l.d, add_i64(l.b, r.c)), r.d);
    return o;
}

static fmap fmap_leaf(uint64_t sa, uint64_t sf) {
    int64_t A = i64_of(sa), F = i64_of(sf);
    return (fmap){A - F, A, A - F, A};
}

static void ftree_init(ftree *f, size_t m, bool zeros) {
    f->m = m;
    f->n = cg_xzalloc(m, sizeof *f->n); /* all-zero maps are x -> max(x, 0) = x on x >= 0 */
    f->fa = cg_xzalloc(m + 1, sizeof *f->fa);
    f->ff = cg_xzalloc(m + 1, sizeof *f->ff);
    f->sa = cg_xzalloc(m, sizeof *f->sa);
    f->sf = cg_xzalloc(m, sizeof *f->sf);
    f->sz = zeros ? cg_xzalloc(m, sizeof *f->sz) : NULL;
}

static void ftree_free(ftree *f) {
    cg_free(f->sz);
    cg_free(f->sf);
    cg_free(f->sa);
    cg_free(f->ff);
    cg_free(f->fa);
    cg_free(f->n);
}

/* sum of the first k leaves of a Fenwick array */
static uint64_t fen_sum(const uint64_t *fw, size_t k) {
    uint64_t s = 0;
    for (; k > 0; k &= k - 1) s += fw[k];
    return s;
}

static void fen_add(uint64_t *fw, size_t m, size_t k, uint64_t v) {
    for (k++; k <= m; k += k & (0 - k)) fw[k] += v;
}

static fmap ftree_node(const ftree *f, size_t i) {
    if (i < f->m) return f->n[i];
    return fmap_leaf(f->sa[i - f->m], f->sf[i - f->m]);
}

/* adds (or removes) bytes to leaf k's A (start) or F (end) sum */
static void ftree_update(ftree *f, size_t k, bool end, uint64_t bytes, bool add) {
    uint64_t v = add ? bytes : 0 - bytes;
    fen_add(end ? f->ff : f->fa, f->m, k, v);
    *(end ? &f->sf[k] : &f->sa[k]) += v;
    for (size_t i = (f->m + k) / 2; i >= 1; i /= 2) f->n[i] = fmap_join(ftree_node(f, 2 * i), ftree_node(f, 2 * i + 1));
}

/* The join of leaves [lo, hi), lo < hi. */
static fmap ftree_query(const ftree *f, size_t lo, size_t hi) {
    fmap left = {0}, right = {0};
    bool has_l = false, has_r = false;
    for (lo += f->m, hi += f->m; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) {
            fmap x = ftree_node(f, lo++);
            left = has_l ? fmap_join(left, x) : x;
            has_l = true;
        }
        if (hi & 1) {
            fmap x = ftree_node(f, --hi);
            right = has_r ? fmap_join(x, right) : x;
            has_r = true;
        }
    }
    if (!has_l) return right;
    return has_r ? fmap_join(left, right) : left;
}

typedef struct slife {
    uint32_t k0, k1; /* leaves of its start and end timestamps (k0 = k1: zero-length) */
    uint64_t bytes;
} slife;

/* Recomputes the Fenwick sums and the internal maps from the leaf sums: O(m). */
static void ftree_rebuild(ftree *f) {
    size_t m = f->m;
    for (size_t k = 0; k < m; k++) {
        f->fa[k + 1] = f->sa[k];
        f->ff[k + 1] = f->sf[k];
    }
    for (size_t i = 1; i <= m; i++) {
        size_t j = i + (i & (0 - i));
        if (j > m) continue;
        f->fa[j] += f->fa[i];
        f->ff[j] += f->ff[i];
    }
    for (size_t i = m - 1; i >= 1; i--) f->n[i] = fmap_join(ftree_node(f, 2 * i), ftree_node(f, 2 * i + 1));
}

/* Adds (or removes) the lifetimes ls[from, to) except those of [skip_from,
 * skip_to) (an empty skip range: none): one update each, or, when they are
 * many against the tree's size, the leaf sums and one rebuild. */
static void apply_range(ftree *f, const slife *ls, size_t from, size_t to, size_t skip_from, size_t skip_to,
                        bool add) {
    size_t depth = 1, count = to - from - (skip_to - skip_from);
    for (size_t m = f->m; m > 1; m /= 2) depth++;
    bool bulk = 2 * count * depth >= f->m;
    for (size_t k = from; k < to; k++) {
        if (k == skip_from && skip_to > skip_from) k = skip_to;
        if (k >= to) break;
        uint64_t v = add ? ls[k].bytes : 0 - ls[k].bytes;
        if (ls[k].k0 == ls[k].k1) f->sz[ls[k].k0] += v;
        if (bulk) {
            f->sa[ls[k].k0] += v;
            f->sf[ls[k].k1] += v;
            continue;
        }
        ftree_update(f, ls[k].k0, false, ls[k].bytes, add);
        ftree_update(f, ls[k].k1, true, ls[k].bytes, add);
    }
    if (bulk && count > 0) ftree_rebuild(f);
}

/* Sorts v[0, n) ascending: least significant byte first, one counting pass per
 * byte that is not the same in every value (timestamps: a few), in scratch of n. */
static void sort_u64(uint64_t *v, size_t n) {
    uint64_t any = 0, all = ~(uint64_t)0;
    for (size_t i = 0; i < n; i++) {
        any |= v[i];
        all &= v[i];
    }
    uint64_t *tmp = cg_xalloc(n ? n : 1, sizeof *tmp), *src = v, *dst = tmp;
    for (unsigned sh = 0; sh < 64; sh += 8) {
        if (!((any ^ all) >> sh & 0xff)) continue;
        size_t cnt[256] = {0}, sum = 0;
        for (size_t i = 0; i < n; i++) cnt[src[i] >> sh & 0xff]++;
        for (size_t d = 0; d < 256; d++) {
            size_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) dst[cnt[src[i] >> sh & 0xff]++] = src[i];
        uint64_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
    cg_free(tmp);
}

/* count of x[i] < v (or <= v when inclusive) */
static size_t count_below(const uint64_t *x, size_t m, uint64_t v, bool inclusive) {
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x[mid] < v || (inclusive && x[mid] == v))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The span forest: parents, children (CSR), preorder (order[pos] = span),
 * positions and subtree extents [tin, tout), built without recursion.
 * Unreachable spans keep NONE. */
typedef struct stree {
    size_t ns, reached;
    size_t *par, *nch, *child, *tin, *tout, *order;
} stree;

static void stree_build(stree *T, const cg_trace *t) {
    size_t ns = T->ns = t->n_spans;
    T->par = cg_xalloc(ns, sizeof *T->par);
    T->nch = cg_xzalloc(ns + 1, sizeof *T->nch);
    for (size_t i = 0; i < ns; i++) {
        const cg_span *ps = t->spans[i].parent_id ? cg_trace_find_span(t, t->spans[i].parent_id) : NULL;
        T->par[i] = ps ? (size_t)(ps - t->spans) : NONE;
        if (T->par[i] != NONE) T->nch[T->par[i] + 1]++;
    }
    for (size_t i = 0; i < ns; i++) T->nch[i + 1] += T->nch[i];
    T->child = cg_xalloc(ns, sizeof *T->child);
    size_t *fill = cg_xalloc(ns, sizeof *fill), *stack = cg_xalloc(ns, sizeof *stack);
    T->order = cg_xalloc(ns, sizeof *T->order);
    memcpy(fill, T->nch, ns * sizeof *fill);
    for (size_t i = 0; i < ns; i++)
        if (T->par[i] != NONE) T->child[fill[T->par[i]]++] = i;
    T->tin = cg_xalloc(ns, sizeof *T->tin);
    T->tout = cg_xalloc(ns, sizeof *T->tout);
    for (size_t i = 0; i < ns; i++) T->tin[i] = T->tout[i] = NONE;
    T->reached = 0;
    for (size_t root = 0; root < ns; root++) {
        if (T->par[root] != NONE) continue;
        size_t sp = 0;
        stack[sp++] = root;
        while (sp) {
            size_t v = stack[--sp];
            T->tin[v] = T->reached;
            T->order[T->reached++] = v;
            for (size_t k = T->nch[v + 1]; k > T->nch[v]; k--) stack[sp++] = T->child[k - 1];
        }
    }
    for (size_t k = T->reached; k > 0; k--) { /* subtree extents, reverse preorder */
        size_t v = T->order[k - 1], size = 1;
        for (size_t c = T->nch[v]; c < T->nch[v + 1]; c++) size += T->tout[T->child[c]] - T->tin[T->child[c]];
        T->tout[v] = T->tin[v] + size;
    }
    cg_free(stack);
    cg_free(fill);
}

static void stree_free(stree *T) {
    cg_free(T->order);
    cg_free(T->tout);
    cg_free(T->tin);
    cg_free(T->child);
    cg_free(T->nch);
    cg_free(T->par);
}

/* The lifetimes of reachable spans, in preorder of their span (pref[i] = first
 * with tin >= i, so a subtree's lifetimes are ls[pref[tin], pref[tout])), on
 * the compressed timestamps xs[0..m). */
typedef struct slives {
    slife *ls;
    size_t nls, m;
    uint64_t *xs; /* distinct start and end timestamps, sorted */
    size_t *pref;
    bool zeros;   /* some lifetime is zero-length */
} slives;

static uint64_t rec_end(const cg_trace *t, const cg_lifetime_rec *r) {
    return r->close == CG_LIFETIME_RETAINED ? UINT64_MAX : t->memory[r->close].timestamp_ns;
}

/* Fills every span's direct allocation and collects the lifetimes of reachable
 * spans, placed by preorder of their span (a counting sort). */
static void slives_collect(slives *L, const cg_trace *t, const cg_logical_memory *lm, const stree *T,
                           cg_span_memory *out) {
    size_t nl = lm->n_lifetimes, nx = 0;
    uint32_t *tin_of = cg_xalloc((nl ? nl : 1), sizeof *tin_of); /* UINT32_MAX: not collected */
    L->xs = cg_xalloc((nl ? 2 * nl : 1), sizeof *L->xs);
    L->pref = cg_xzalloc((T->reached + 2), sizeof *L->pref);
    const char *last_id = NULL; /* interned ids repeat: neighbours often share the pointer */
    const cg_span *last = NULL;
    for (size_t k = 0; k < nl; k++) {
        const cg_memory *o = &t->memory[lm->lifetimes[k].open];
        const cg_span *sp = o->span_id == last_id ? last : cg_trace_find_span(t, o->span_id);
        last_id = o->span_id;
        last = sp;
        tin_of[k] = UINT32_MAX;
        if (!sp) continue;
        size_t s = (size_t)(sp - t->spans);
        out[s].has_allocated = true;
        out[s].allocated_bytes = cg_sat_add_u64(out[s].allocated_bytes, o->bytes);
        if (T->tin[s] == NONE) continue;
        tin_of[k] = (uint32_t)T->tin[s];
        L->pref[T->tin[s] + 2]++;
        L->xs[nx++] = o->timestamp_ns;
        L->xs[nx++] = rec_end(t, &lm->lifetimes[k]);
    }
    sort_u64(L->xs, nx);
    L->m = 0;
    for (size_t k = 0; k < nx; k++)
        if (L->m == 0 || L->xs[L->m - 1] != L->xs[k]) L->xs[L->m++] = L->xs[k];
    L->xs = cg_xrealloc(L->xs, L->m ? L->m : 1, sizeof *L->xs);
    L->nls = nx / 2;
    for (size_t i = 0; i < T->reached; i++) L->pref[i + 2] += L->pref[i + 1];
    L->ls = cg_xalloc((L->nls ? L->nls : 1), sizeof *L->ls);
    L->zeros = false;
    for (size_t k = 0; k < nl; k++) { /* pref[i + 1]: next free slot of tin i */
        if (tin_of[k] == UINT32_MAX) continue;
        const cg_lifetime_rec *r = &lm->lifetimes[k];
        L->ls[L->pref[tin_of[k] + 1]++] =
            (slife){(uint32_t)count_below(L->xs, L->m, t->memory[r->open].timestamp_ns, false),
                    (uint32_t)count_below(L->xs, L->m, rec_end(t, r), false), t->memory[r->open].bytes};
    }
    for (size_t k = 0; k < L->nls; k++) L->zeros |= L->ls[k].k0 == L->ls[k].k1;
    cg_free(tin_of); /* now pref[i] = first lifetime with tin >= i */
}

static void slives_free(slives *L) {
    cg_free(L->pref);
    cg_free(L->xs);
    cg_free(L->ls);
}

/* Heavy child of every reachable span: the child with the most subtree lifetimes. */
static size_t *heavy_children(const stree *T, const slives *L) {
    size_t *heavy = cg_xalloc(T->ns, sizeof *heavy);
    for (size_t i = 0; i < T->ns; i++) {
        heavy[i] = NONE;
        if (T->tin[i] == NONE) continue;
        size_t best = 0;
        for (size_t c = T->nch[i]; c < T->nch[i + 1]; c++) {
            size_t ch = T->child[c], w = L->pref[T->tout[ch]] - L->pref[T->tin[ch]];
            if (heavy[i] == NONE || w > best) {
                heavy[i] = ch;
                best = w;
            }
        }
    }
    return heavy;
}

/* A span's window on the compressed timestamps: leaves [0, at_start) are at or
 * before its start, [at_start, before_end) strictly inside, [before_end, to_end)
 * at its end. False for an empty window (0 / 0). */
typedef struct window {
    size_t at_start, before_end, to_end;
} window;

static bool span_leaves(window *w, const slives *L, const cg_span *s) {
    uint64_t ws = s->start_ns;
    uint64_t we = ws + s->duration_ns < ws ? UINT64_MAX : ws + s->duration_ns;
    if (we <= ws || L->m == 0) return false;
    w->at_start = count_below(L->xs, L->m, ws, true);
    w->before_end = count_below(L->xs, L->m, we, false);
    w->to_end = count_below(L->xs, L->m, we, true);
    return true;
}

/* Peak and residual of a span's window while the tree holds exactly its subtree:
 * peak = the crate's walk from the live bytes at the window start through the
 * timestamps strictly inside; residual = bytes with start < window end < end. */
static void span_window(cg_span_memory *o, const ftree *f, const slives *L, const cg_span *s) {
    window w;
    o->has_window = true;
    if (!span_leaves(&w, L, s)) return;
    uint64_t live = fen_sum(f->fa, w.at_start) - fen_sum(f->ff, w.at_start);
    int64_t x0 = i64_of(live), peak = x0;
    if (w.before_end > w.at_start) {
        fmap mid = ftree_query(f, w.at_start, w.before_end);
        peak = max_i64(peak, max_i64(add_i64(x0, mid.c), mid.d));
    }
    o->peak_live_bytes = (uint64_t)peak;
    uint64_t started = fen_sum(f->fa, w.before_end), ended = fen_sum(f->ff, w.to_end);
    uint64_t zero_at_end = f->sz && w.to_end > w.before_end ? f->sz[w.before_end] : 0;
    o->residual_bytes = started - ended + zero_at_end;
}

/* Subtrees with at most this many lifetimes are measured directly. */
#define SMALL 32

typedef struct step {
    uint32_t leaf;
    bool end;
    uint64_t bytes;
} step;

/* span_window over the lifetimes ls[0, n) (n <= SMALL), walked directly. */
static void span_window_direct(cg_span_memory *o, const slives *L, const slife *ls, size_t n, const cg_span *s) {
    window w;
    o->has_window = true;
    if (!span_leaves(&w, L, s)) return;
    step st[2 * SMALL];
    size_t ns = 0;
    uint64_t live = 0, started = 0, ended = 0, zero_at_end = 0;
    for (size_t k = 0; k < n; k++) {
        const slife *l = &ls[k];
        if (l->k0 < w.at_start) live += l->bytes;
        if (l->k1 < w.at_start) live -= l->bytes;
        if (l->k0 < w.before_end) started += l->bytes;
        if (l->k1 < w.to_end) ended += l->bytes;
        if (l->k0 == l->k1 && l->k0 == w.before_end && w.to_end > w.before_end) zero_at_end += l->bytes;
        for (int e = 0; e < 2; e++) {
            uint32_t leaf = e ? l->k1 : l->k0;
            if (leaf < w.at_start || leaf >= w.before_end) continue;
            size_t j = ns++; /* insertion by leaf */
            while (j > 0 && st[j - 1].leaf > leaf) {
                st[j] = st[j - 1];
                j--;
            }
            st[j] = (step){leaf, e == 1, l->bytes};
        }
    }
    int64_t x = i64_of(live), peak = x;
    for (size_t i = 0, j; i < ns; i = j) {
        uint64_t A = 0, F = 0;
        for (j = i; j < ns && st[j].leaf == st[i].leaf; j++) *(st[j].end ? &F : &A) += st[j].bytes;
        fmap m = fmap_leaf(A, F);
        x = max_i64(add_i64(x, m.a), m.b);
        peak = max_i64(peak, x);
    }
    o->peak_live_bytes = (uint64_t)peak;
    o->residual_bytes = started - ended + zero_at_end;
}

/* Measures every span of v's subtree (at most SMALL lifetimes) directly. */
static void subtree_direct(cg_span_memory *out, const cg_trace *t, const stree *T, const slives *L, size_t v,
                           bool complete) {
    for (size_t q = T->tin[v]; q < T->tout[v]; q++) {
        size_t u = T->order[q], p0 = L->pref[T->tin[u]], p1 = L->pref[T->tout[u]];
        const cg_span *s = &t->spans[u];
        if (s->closed && (complete || p1 > p0)) span_window_direct(&out[u], L, L->ls + p0, p1 - p0, s);
    }
}

typedef struct frame {
    size_t v;
    unsigned char keep, state;
} frame;

/* Small-to-large walk: every span's subtree lifetimes are in the tree when its
 * window is measured; light subtrees are removed again afterwards. Subtrees
 * with at most SMALL lifetimes are measured directly and enter the tree only
 * when kept. The tree is built on first need. */
static void subtree_walk(cg_span_memory *out, const cg_trace *t, const stree *T, const slives *L, bool complete) {
    size_t *heavy = heavy_children(T, L);
    ftree f = {0};
    frame *fs = cg_xalloc(T->ns, sizeof *fs);
    const size_t *nch = T->nch, *child = T->child, *tin = T->tin, *tout = T->tout, *pref = L->pref;
    for (size_t root = 0; root < T->ns; root++) {
        if (T->par[root] != NONE || tin[root] == NONE) continue;
        size_t sp = 0;
        fs[sp++] = (frame){root, 0, 0};
        while (sp) {
            frame fr = fs[--sp];
            size_t v = fr.v;
            if (fr.state == 0 && pref[tout[v]] - pref[tin[v]] <= SMALL) {
                subtree_direct(out, t, T, L, v, complete);
                if (fr.keep && f.n) apply_range(&f, L->ls, pref[tin[v]], pref[tout[v]], 0, 0, true);
                continue;
            }
            if (!f.n) ftree_init(&f, L->m ? L->m : 1, L->zeros);
            if (fr.state == 0) {
                fs[sp++] = (frame){v, fr.keep, 1};
                if (heavy[v] != NONE) fs[sp++] = (frame){heavy[v], 1, 0};
                for (size_t c = nch[v]; c < nch[v + 1]; c++)
                    if (child[c] != heavy[v]) fs[sp++] = (frame){child[c], 0, 0};
                continue;
            }
            size_t h = heavy[v]; /* its subtree is in the tree already: add the rest of v's */
            size_t skip_from = h == NONE ? 0 : pref[tin[h]], skip_to = h == NONE ? 0 : pref[tout[h]];
            apply_range(&f, L->ls, pref[tin[v]], pref[tout[v]], skip_from, skip_to, true);
            const cg_span *s = &t->spans[v];
            if (s->closed && (complete || pref[tout[v]] > pref[tin[v]])) span_window(&out[v], &f, L, s);
            if (!fr.keep) apply_range(&f, L->ls, pref[tin[v]], pref[tout[v]], 0, 0, false);
        }
    }
    cg_free(fs);
    if (f.n) ftree_free(&f);
    cg_free(heavy);
}

cg_span_memory *cg_memory_span_metrics(const cg_trace *t, const cg_memory_profile *p, cg_arena *a) {
    if (!p || !p->logical) return NULL;
    const cg_logical_memory *lm = p->logical;
    size_t ns = t->n_spans;
    cg_span_memory *out = cg_arena_zalloc(a, (ns ? ns : 1) * sizeof *out);
    bool complete = t->run.contract.logical_memory == CG_COV_COMPLETE;
    for (size_t i = 0; i < ns; i++) out[i].has_allocated = complete;
    if (ns == 0) return out;
    stree T;
    stree_build(&T, t);
    slives L;
    slives_collect(&L, t, lm, &T, out);
    subtree_walk(out, t, &T, &L, complete);
    slives_free(&L);
    stree_free(&T);
    return out;
}

/* ------------------------------------------------------ per-op metrics */

/* (span_id, op_name) keys of the ops: key k names op first[k], or several (ambiguous). */
typedef struct opkeys {
    const cg_trace *t;
    cg_hmap map;
    uint32_t *first;
    bool *ambiguous;
    size_t n;
} opkeys;

typedef struct opkey {
    const char *span_id, *op_name;
} opkey;

static bool opkey_eq(const void *ctx, uint32_t id, const void *key) {
    const opkeys *k = ctx;
    const opkey *q = key;
    const cg_op *op = &k->t->ops[k->first[id]];
    return strcmp(op->span_id, q->span_id) == 0 && strcmp(op->op_name, q->op_name) == 0;
}

static uint64_t opkey_hash(const opkey *q) {
    uint64_t h = cg_hmap_hash_bytes(0, q->span_id, strlen(q->span_id));
    return cg_hmap_mix(cg_hmap_hash_bytes(h, q->op_name, strlen(q->op_name)), 7);
}

/* The lookups below prefetch the table slot of the key this many keys ahead
 * (a large trace's table does not fit the cache). */
#define OPK_AHEAD 16u

/* The key of op i / of lifetime j's opening alloc; the latter returns that
 * alloc, NULL when it has no op name (no key). */
static opkey op_key(const cg_trace *t, size_t i) { return (opkey){t->ops[i].span_id, t->ops[i].op_name}; }
static const cg_memory *lifetime_key(const cg_trace *t, const cg_logical_memory *lm, size_t j, opkey *q) {
    const cg_memory *l = &t->memory[lm->lifetimes[j].open];
    *q = (opkey){l->span_id, l->op_name};
    return l->op_name ? l : NULL;
}

cg_op_memory *cg_memory_op_metrics(const cg_trace *t, const cg_memory_profile *p, cg_arena *a) {
    if (!p || !p->logical) return NULL;
    size_t no = t->n_ops;
    if (no >= CG_HMAP_NONE) cg_oom_exit(no); /* beyond the table's 32-bit ids */
    cg_op_memory *out = cg_arena_zalloc(a, (no ? no : 1) * sizeof *out);
    opkeys k = {.t = t, .first = cg_xalloc(no ? no : 1, sizeof *k.first),
                .ambiguous = cg_xzalloc(no ? no : 1, sizeof *k.ambiguous)};
    cg_hmap_init(&k.map, no);
    for (size_t i = 0; i < no; i++) {
        if (i + OPK_AHEAD < no) {
            opkey ahead = op_key(t, i + OPK_AHEAD);
            cg_hmap_prefetch(&k.map, opkey_hash(&ahead));
        }
        opkey q = op_key(t, i);
        k.first[k.n] = (uint32_t)i;
        uint32_t id = cg_hmap_find_or_put(&k.map, opkey_hash(&q), opkey_eq, &k, &q, (uint32_t)k.n);
        if (id == CG_HMAP_NONE)
            k.n++;
        else
            k.ambiguous[id] = true;
    }
    const cg_logical_memory *lm = p->logical;
    for (size_t j = 0; j < lm->n_lifetimes; j++) {
        opkey q;
        if (j + OPK_AHEAD < lm->n_lifetimes && lifetime_key(t, lm, j + OPK_AHEAD, &q))
            cg_hmap_prefetch(&k.map, opkey_hash(&q));
        const cg_memory *l = lifetime_key(t, lm, j, &q);
        if (!l) continue;
        uint32_t id = cg_hmap_find(&k.map, opkey_hash(&q), opkey_eq, &k, &q, NULL);
        if (id == CG_HMAP_NONE || k.ambiguous[id]) continue; /* ambiguous: span-level attribution only */
        cg_op_memory *o = &out[k.first[id]];
        o->has_allocated = true;
        o->allocated_bytes = cg_sat_add_u64(o->allocated_bytes, l->bytes);
    }
    cg_hmap_free(&k.map);
    cg_free(k.ambiguous);
    cg_free(k.first);
    return out;
}
