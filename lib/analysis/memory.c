/* memory.c — logical and physical memory planes (spec §8) and their JSON. The
 * per-span and per-op metrics for the graph are in memory_span.c. */
#include "analysis/memory.h"
#include "base/alloc.h"
#include "base/hmap.h"
#include "base/num.h"

#include <stdlib.h>
#include <string.h>

#define NONE32 UINT32_MAX

/* ---------------------------------------------------------------- logical */

typedef struct tkey {
    uint64_t ts;
    uint32_t idx;
} tkey;

static int cmp_tkey(const void *pa, const void *pb) {
    const tkey *a = pa, *b = pb;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The events in (timestamp, document index) order; no sort when the document
 * is already in time order (the usual capture). */
static uint32_t *time_order(const cg_trace *t) {
    size_t n = t->n_memory;
    uint32_t *ord = cg_xalloc(n, sizeof *ord);
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        ord[i] = (uint32_t)i;
        if (i && t->memory[i].timestamp_ns < t->memory[i - 1].timestamp_ns) sorted = false;
    }
    if (sorted) return ord;
    tkey *k = cg_xalloc(n, sizeof *k);
    for (size_t i = 0; i < n; i++) k[i] = (tkey){t->memory[i].timestamp_ns, (uint32_t)i};
    qsort(k, n, sizeof *k, cmp_tkey);
    for (size_t i = 0; i < n; i++) ord[i] = k[i].idx;
    cg_free(k);
    return ord;
}

/* Interned devices (ids = rank by name) and (device, storage_id) keys. */
typedef struct keyring {
    const cg_trace *t;
    cg_hmap devs, keys;
    uint32_t *dev_ev, *rank; /* first event of each device (first-seen id); rank by name */
    size_t n_devs, cap_devs;
    const char *last_dev;    /* pointer cache: interned strings repeat */
    uint32_t last_id;
    struct kslot {
        uint32_t ev, dev, live; /* first event, device rank, open lifetime (NONE32) */
    } *key;
    size_t n_keys, cap_keys;
} keyring;

typedef struct skey {
    uint32_t dev;
    const char *storage_id;
} skey;

static bool dev_eq(const void *ctx, uint32_t id, const void *key) {
    const keyring *k = ctx;
    return strcmp(k->t->memory[k->dev_ev[id]].device, key) == 0;
}

static bool key_eq(const void *ctx, uint32_t id, const void *key) {
    const keyring *k = ctx;
    const skey *s = key;
    return k->key[id].dev == s->dev && strcmp(k->t->memory[k->key[id].ev].storage_id, s->storage_id) == 0;
}

static uint64_t str_hash(uint64_t seed, const char *s) { return cg_hmap_hash_bytes(seed, s, strlen(s)); }

/* First-seen id of event i's device, interning it. */
static uint32_t device_id(keyring *k, uint32_t i) {
    const char *d = k->t->memory[i].device;
    if (d == k->last_dev) return k->last_id;
    uint64_t h = cg_hmap_mix(str_hash(0, d), 1);
    uint32_t id = cg_hmap_find_or_put(&k->devs, h, dev_eq, k, d, (uint32_t)k->n_devs);
    if (id == CG_HMAP_NONE) {
        k->dev_ev = cg_xgrow(k->dev_ev, &k->cap_devs, k->n_devs + 1, sizeof *k->dev_ev);
        k->dev_ev[k->n_devs] = i;
        id = (uint32_t)k->n_devs++;
    }
    k->last_dev = d;
    k->last_id = id;
    return id;
}

/* Interns every device and ranks the devices by name into lm->devices. */
static void rank_devices(keyring *k, cg_logical_memory *lm, cg_arena *a) {
    for (size_t i = 0; i < k->t->n_memory; i++) device_id(k, (uint32_t)i);
    size_t nd = k->n_devs;
    uint32_t *by_name = cg_xalloc(nd, sizeof *by_name);
    for (size_t d = 0; d < nd; d++) { /* insertion by name: devices are few */
        size_t j = d;
        const char *name = k->t->memory[k->dev_ev[d]].device;
        while (j > 0 && strcmp(k->t->memory[k->dev_ev[by_name[j - 1]]].device, name) > 0) {
            by_name[j] = by_name[j - 1];
            j--;
        }
        by_name[j] = (uint32_t)d;
    }
    k->rank = cg_xalloc(nd, sizeof *k->rank);
    lm->devices = cg_arena_zalloc(a, (nd ? nd : 1) * sizeof *lm->devices);
    lm->n_devices = nd;
    for (size_t r = 0; r < nd; r++) {
        k->rank[by_name[r]] = (uint32_t)r;
        lm->devices[r].device = k->t->memory[k->dev_ev[by_name[r]]].device;
    }
    cg_free(by_name);
}

/* the walk prefetches the key slot of the event this many events ahead */
#define KEY_AHEAD 16u

static uint64_t key_hash(const char *storage_id, uint32_t dev) {
    return cg_hmap_mix(str_hash(0x5eed, storage_id), dev);
}

/* The key of event i (device rank dev), interning it. */
static uint32_t key_id(keyring *k, uint32_t i, uint32_t dev) {
    skey s = {dev, k->t->memory[i].storage_id};
    uint64_t h = key_hash(s.storage_id, dev);
    uint32_t id = cg_hmap_find_or_put(&k->keys, h, key_eq, k, &s, (uint32_t)k->n_keys);
    if (id != CG_HMAP_NONE) return id;
    k->key = cg_xgrow(k->key, &k->cap_keys, k->n_keys + 1, sizeof *k->key);
    k->key[k->n_keys] = (struct kslot){i, dev, NONE32};
    return (uint32_t)k->n_keys++;
}

static void keyring_free(keyring *k) {
    cg_hmap_free(&k->keys);
    cg_hmap_free(&k->devs);
    cg_free(k->key);
    cg_free(k->rank);
    cg_free(k->dev_ev);
}

/* A lifetime under construction: positions in time order of its opening alloc
 * and of its free (NONE32 while live), and its device rank. */
typedef struct wlife {
    uint32_t open_pos, close_pos, dev;
} wlife;

typedef struct alias { /* an event naming a tensor of lifetime `life` */
    uint32_t life, pos;
} alias;

/* Running state of the walk over timestamp groups. */
typedef struct walk {
    uint64_t total_live, cat_live[CG_CAT_COUNT];
    size_t cat_active[CG_CAT_COUNT];
    uint64_t *dev_live;
    size_t *dev_active, *dev_stamp, *touched, n_touched, group;
    wlife *lives;
    size_t n_lives;
    alias *al;
    size_t n_al, peak_limit; /* peak_limit: first position after the peak's group */
} walk;

static void walk_change(walk *w, size_t d, cg_category c, uint64_t bytes, bool add) {
    if (add) {
        w->total_live += bytes;
        w->cat_live[c] += bytes;
        w->dev_live[d] += bytes;
        w->cat_active[c]++;
        w->dev_active[d]++;
    } else {
        w->total_live -= bytes;
        w->cat_live[c] -= bytes;
        w->dev_live[d] -= bytes;
        w->cat_active[c]--;
        w->dev_active[d]--;
    }
    if (w->dev_stamp[d] == w->group) return;
    w->dev_stamp[d] = w->group;
    w->touched[w->n_touched++] = d;
}

/* Closes the group [first, end) just walked: its timeline point and the peaks. */
static void close_point(cg_logical_memory *lm, walk *w, uint64_t ts, size_t first, size_t end) {
    lm->timeline[lm->n_timeline] = (cg_logical_point){ts, w->total_live};
    lm->group_start[first / 64] |= (uint64_t)1 << (first % 64);
    for (size_t k = 0; k < w->n_touched; k++) {
        size_t d = w->touched[k];
        cg_logical_device *dv = &lm->devices[d];
        if (!dv->has_peak || w->dev_live[d] > dv->peak_live_bytes) {
            dv->has_peak = true;
            dv->peak_live_bytes = w->dev_live[d];
            dv->peak_timestamp_ns = ts;
        }
    }
    if (lm->storage_allocation_count > 0 &&
        (!lm->has_peak || w->total_live > lm->timeline[lm->peak_point].live_bytes)) {
        lm->has_peak = true;
        lm->peak_point = lm->n_timeline;
        w->peak_limit = end;
    }
    lm->n_timeline++;
}

/* Applies the event at time position j to the walk and records its effect. */
static void walk_event(cg_logical_memory *lm, walk *w, keyring *k, const uint32_t *ord, size_t j) {
    const cg_trace *t = k->t;
    const cg_memory *m = &t->memory[ord[j]];
    uint32_t d = k->rank[device_id(k, ord[j])], key = key_id(k, ord[j], d);
    uint32_t *live = &k->key[key].live;
    lm->effects[j] = CG_EFFECT_NONE;
    if (!m->is_free) {
        if (*live == NONE32) {
            *live = (uint32_t)w->n_lives;
            w->lives[w->n_lives++] = (wlife){(uint32_t)j, NONE32, d};
            lm->effects[j] = 2 * *live;
            lm->storage_allocation_count++;
            lm->total_allocated_bytes = cg_sat_add_u64(lm->total_allocated_bytes, m->bytes);
            lm->devices[d].storage_allocation_count++;
            lm->devices[d].total_allocated_bytes = cg_sat_add_u64(lm->devices[d].total_allocated_bytes, m->bytes);
            walk_change(w, d, m->category, m->bytes, true);
        }
        w->al[w->n_al++] = (alias){*live, (uint32_t)j};
    } else if (*live != NONE32) {
        wlife *wl = &w->lives[*live];
        const cg_memory *open = &t->memory[ord[wl->open_pos]];
        wl->close_pos = (uint32_t)j;
        lm->effects[j] = 2 * *live + 1;
        w->al[w->n_al++] = (alias){*live, (uint32_t)j};
        lm->matched_storage_free_count++;
        lm->devices[wl->dev].matched_storage_free_count++;
        walk_change(w, wl->dev, open->category, open->bytes, false);
        *live = NONE32;
    }
}

/* ------------------------------------------- lifetimes from the walk */

typedef struct lorder { /* tie order of lifetimes opened at one timestamp */
    const char *storage_id;
    uint32_t dev, open_pos, life;
} lorder;

static int cmp_lorder(const void *pa, const void *pb) {
    const lorder *a = pa, *b = pb;
    if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1; /* ranks follow device names */
    int c = strcmp(a->storage_id, b->storage_id);
    if (c) return c;
    return a->open_pos < b->open_pos ? -1 : a->open_pos > b->open_pos;
}

/* order[k] = the k-th lifetime by (start, device, storage_id). Lifetimes are
 * opened in time order, so only runs of equal start need sorting. */
static uint32_t *life_order(const cg_trace *t, const uint32_t *ord, const walk *w) {
    size_t nl = w->n_lives;
    uint32_t *order = cg_xalloc(nl ? nl : 1, sizeof *order);
    lorder *run = NULL;
    size_t cap = 0;
    for (size_t i = 0, j; i < nl; i = j) {
        uint64_t ts = t->memory[ord[w->lives[i].open_pos]].timestamp_ns;
        for (j = i + 1; j < nl && t->memory[ord[w->lives[j].open_pos]].timestamp_ns == ts; j++) continue;
        if (j - i == 1) {
            order[i] = (uint32_t)i;
            continue;
        }
        run = cg_xgrow(run, &cap, j - i, sizeof *run);
        for (size_t k = i; k < j; k++)
            run[k - i] = (lorder){t->memory[ord[w->lives[k].open_pos]].storage_id, w->lives[k].dev,
                                  w->lives[k].open_pos, (uint32_t)k};
        qsort(run, j - i, sizeof *run, cmp_lorder);
        for (size_t k = i; k < j; k++) order[k] = run[k - i].life;
    }
    cg_free(run);
    return order;
}

typedef struct idpos {
    const char *id;
    uint32_t pos;
} idpos;

static int cmp_idpos(const void *pa, const void *pb) {
    const idpos *a = pa, *b = pb;
    int c = strcmp(a->id, b->id);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* The alias positions of each lifetime, by (tensor id, position):
 * pos[first[l], first[l + 1]) for lifetime l (walk order). */
static uint32_t *alias_groups(const cg_trace *t, const uint32_t *ord, const walk *w, uint32_t **first_out) {
    size_t nl = w->n_lives;
    uint32_t *first = cg_xzalloc(nl + 1, sizeof *first);
    for (size_t k = 0; k < w->n_al; k++) first[w->al[k].life + 1]++;
    for (size_t l = 0; l < nl; l++) first[l + 1] += first[l];
    uint32_t *pos = cg_xalloc(w->n_al ? w->n_al : 1, sizeof *pos), *fill = cg_xalloc(nl ? nl : 1, sizeof *fill);
    memcpy(fill, first, nl * sizeof *fill);
    for (size_t k = 0; k < w->n_al; k++) pos[fill[w->al[k].life]++] = w->al[k].pos; /* ascending */
    cg_free(fill);
    idpos *tmp = NULL;
    size_t cap = 0;
    for (size_t l = 0; l < nl; l++) {
        size_t n = first[l + 1] - first[l];
        if (n < 2) continue;
        tmp = cg_xgrow(tmp, &cap, n, sizeof *tmp);
        for (size_t k = 0; k < n; k++) tmp[k] = (idpos){t->memory[ord[pos[first[l] + k]]].tensor_id, pos[first[l] + k]};
        qsort(tmp, n, sizeof *tmp, cmp_idpos);
        for (size_t k = 0; k < n; k++) pos[first[l] + k] = tmp[k].pos;
    }
    cg_free(tmp);
    *first_out = first;
    return pos;
}

/* Appends to ids the unique tensor ids (as events) of pos[from, to) with
 * position < limit; returns how many. */
static uint32_t unique_ids(const cg_trace *t, const uint32_t *ord, const uint32_t *pos, size_t from, size_t to,
                           size_t limit, uint32_t *ids) {
    uint32_t n = 0;
    for (size_t k = from; k < to; k++) {
        if (pos[k] >= limit) continue;
        uint32_t ev = ord[pos[k]];
        if (n > 0 && strcmp(t->memory[ids[n - 1]].tensor_id, t->memory[ev].tensor_id) == 0) continue;
        ids[n++] = ev;
    }
    return n;
}

static bool live_at_peak(const wlife *wl, size_t peak_limit) {
    return wl->open_pos < peak_limit && (wl->close_pos == NONE32 || wl->close_pos >= peak_limit);
}

/* Final lifetimes in (start, device, storage_id) order with their tensor ids,
 * the snapshot of those live at the peak (aliases seen by then, no end), and
 * the effects renumbered to the final order. */
static void finish_lifetimes(cg_logical_memory *lm, cg_arena *a, const uint32_t *ord, const walk *w) {
    const cg_trace *t = lm->trace;
    size_t nl = w->n_lives, n_peak = 0;
    uint32_t *order = life_order(t, ord, w), *first, *pos = alias_groups(t, ord, w, &first);
    for (size_t l = 0; l < nl; l++) n_peak += live_at_peak(&w->lives[l], w->peak_limit);
    size_t n_ids = 0;
    for (size_t l = 0; l < nl; l++)
        n_ids += first[l + 1] - first[l] + (live_at_peak(&w->lives[l], w->peak_limit) ? first[l + 1] - first[l] : 0);
    uint32_t *ids = cg_xalloc(n_ids ? n_ids : 1, sizeof *ids); /* upper bound; copied exact */
    lm->lifetimes = cg_arena_alloc(a, (nl ? nl : 1) * sizeof *lm->lifetimes);
    lm->peak_live_allocations = cg_arena_alloc(a, (n_peak ? n_peak : 1) * sizeof *lm->peak_live_allocations);
    lm->n_lifetimes = nl;
    uint32_t *rank = cg_xalloc(nl ? nl : 1, sizeof *rank), used = 0;
    for (size_t k = 0; k < nl; k++) {
        uint32_t l = order[k];
        const wlife *wl = &w->lives[l];
        rank[l] = (uint32_t)k;
        cg_lifetime_rec r = {ord[wl->open_pos], wl->close_pos == NONE32 ? CG_LIFETIME_RETAINED : ord[wl->close_pos],
                             wl->dev, used, 0};
        r.n_ids = unique_ids(t, ord, pos, first[l], first[l + 1], SIZE_MAX, ids + used);
        used += r.n_ids;
        lm->lifetimes[k] = r;
        if (!live_at_peak(wl, w->peak_limit)) continue;
        r.close = CG_LIFETIME_RETAINED;
        r.ids_first = used;
        r.n_ids = unique_ids(t, ord, pos, first[l], first[l + 1], w->peak_limit, ids + used);
        used += r.n_ids;
        lm->peak_live_allocations[lm->n_peak_live_allocations++] = r;
    }
    lm->tensor_ev = cg_arena_alloc(a, (used ? used : 1) * sizeof *lm->tensor_ev);
    memcpy(lm->tensor_ev, ids, used * sizeof *ids);
    for (size_t j = 0; j < lm->n_effects; j++)
        if (lm->effects[j] != CG_EFFECT_NONE) lm->effects[j] = 2 * rank[lm->effects[j] >> 1] + (lm->effects[j] & 1);
    cg_free(rank);
    cg_free(ids);
    cg_free(pos);
    cg_free(first);
    cg_free(order);
}

static cg_logical_memory *logical_analyze(const cg_trace *t, cg_arena *a) {
    size_t n = t->n_memory;
    if (n >= (size_t)1 << 31) cg_oom_exit(n); /* beyond the 32-bit event indices (see Limits) */
    cg_logical_memory *lm = cg_arena_zalloc(a, sizeof *lm);
    lm->trace = t;
    keyring k = {.t = t};
    cg_hmap_init(&k.devs, 4);
    cg_hmap_init(&k.keys, n / 2 + 16); /* a key per storage: an alloc and a free each, usually */
    rank_devices(&k, lm, a);
    size_t nd = lm->n_devices;
    walk w = {0};
    w.dev_live = cg_xzalloc(nd, sizeof *w.dev_live);
    w.dev_active = cg_xzalloc(nd, sizeof *w.dev_active);
    w.dev_stamp = cg_xalloc(nd, sizeof *w.dev_stamp);
    for (size_t d = 0; d < nd; d++) w.dev_stamp[d] = SIZE_MAX;
    w.touched = cg_xalloc(nd, sizeof *w.touched);
    w.lives = cg_xalloc(n, sizeof *w.lives);
    w.al = cg_xalloc(n, sizeof *w.al); /* each event names at most one tensor */
    uint32_t *ord = time_order(t);
    lm->timeline = cg_arena_alloc(a, n * sizeof *lm->timeline);
    lm->effects = cg_arena_alloc(a, n * sizeof *lm->effects);
    lm->n_effects = n;
    lm->group_start = cg_arena_zalloc(a, (n / 64 + 1) * sizeof *lm->group_start);
    for (size_t i = 0, j; i < n; i = j, w.group++) { /* by groups of equal timestamp */
        uint64_t ts = t->memory[ord[i]].timestamp_ns;
        w.n_touched = 0;
        for (j = i; j < n && t->memory[ord[j]].timestamp_ns == ts; j++) {
            if (j + KEY_AHEAD < n) { /* a large trace's key table does not fit the cache */
                uint32_t e = ord[j + KEY_AHEAD];
                cg_hmap_prefetch(&k.keys, key_hash(t->memory[e].storage_id, k.rank[device_id(&k, e)]));
            }
            walk_event(lm, &w, &k, ord, j);
        }
        close_point(lm, &w, ts, i, j);
    }
    keyring_free(&k);
    cg_free(w.touched);
    cg_free(w.dev_stamp);
    cg_free(w.dev_active);
    cg_free(w.dev_live);
    finish_lifetimes(lm, a, ord, &w);
    cg_free(w.al);
    cg_free(w.lives);
    cg_free(ord);
    return lm;
}

/* ------------------------------------------------- replaying the timeline */

cg_lifetime cg_logical_lifetime(const cg_logical_memory *l, const cg_lifetime_rec *r) {
    const cg_memory *o = &l->trace->memory[r->open];
    cg_lifetime v = {o->device, o->storage_id, o->span_id, o->op_name, o->bytes, &o->shape, o->dtype, o->category,
                     o->timestamp_ns, r->close != CG_LIFETIME_RETAINED, 0, r->n_ids};
    if (v.has_end) v.end_timestamp_ns = l->trace->memory[r->close].timestamp_ns;
    return v;
}

const char *cg_logical_tensor_id(const cg_logical_memory *l, const cg_lifetime_rec *r, size_t i) {
    return l->trace->memory[l->tensor_ev[r->ids_first + i]].tensor_id;
}

/* The live bytes per device and category after the points [0, next). */
typedef struct replay {
    const cg_logical_memory *l;
    uint64_t *dev_live, cat_live[CG_CAT_COUNT];
    size_t *dev_active, cat_active[CG_CAT_COUNT];
    size_t next, ev; /* next point, its first event */
} replay;

static void replay_init(replay *r, const cg_logical_memory *l, uint64_t *dev_live, size_t *dev_active) {
    r->l = l;
    r->dev_live = dev_live;
    r->dev_active = dev_active;
    r->next = SIZE_MAX; /* reset on first use */
}

/* Brings r to the state just after point p (replaying from 0 when p is behind). */
static void replay_to(replay *r, size_t p) {
    const cg_logical_memory *l = r->l;
    if (r->next == SIZE_MAX || r->next > p + 1) {
        memset(r->dev_live, 0, l->n_devices * sizeof *r->dev_live);
        memset(r->dev_active, 0, l->n_devices * sizeof *r->dev_active);
        memset(r->cat_live, 0, sizeof r->cat_live);
        memset(r->cat_active, 0, sizeof r->cat_active);
        r->next = r->ev = 0;
    }
    for (; r->next <= p; r->next++) {
        size_t i = r->ev;
        do {
            uint32_t e = l->effects[i++];
            if (e == CG_EFFECT_NONE) continue;
            const cg_lifetime_rec *lr = &l->lifetimes[e >> 1];
            const cg_memory *o = &l->trace->memory[lr->open];
            if (e & 1) {
                r->dev_live[lr->device] -= o->bytes;
                r->dev_active[lr->device]--;
                r->cat_live[o->category] -= o->bytes;
                r->cat_active[o->category]--;
            } else {
                r->dev_live[lr->device] += o->bytes;
                r->dev_active[lr->device]++;
                r->cat_live[o->category] += o->bytes;
                r->cat_active[o->category]++;
            }
        } while (i < l->n_effects && !(l->group_start[i / 64] >> (i % 64) & 1));
        r->ev = i;
    }
}

void cg_logical_live_by_device(const cg_logical_memory *l, size_t point, uint64_t *out, bool *seen) {
    size_t nd = l->n_devices;
    for (size_t d = 0; d < nd; d++) {
        out[d] = 0;
        seen[d] = false;
    }
    if (l->n_timeline == 0) return;
    if (point >= l->n_timeline) point = l->n_timeline - 1;
    replay r;
    size_t *active = cg_xzalloc(nd ? nd : 1, sizeof *active);
    replay_init(&r, l, out, active);
    replay_to(&r, point);
    for (size_t d = 0; d < nd; d++) seen[d] = active[d] > 0;
    cg_free(active);
}

/* --------------------------------------------------------------- physical */

static int cmp_dm_time(const void *pa, const void *pb) {
    const cg_device_memory *a = *(const cg_device_memory *const *)pa, *b = *(const cg_device_memory *const *)pb;
    if (a->timestamp_ns != b->timestamp_ns) return a->timestamp_ns < b->timestamp_ns ? -1 : 1;
    int c = strcmp(a->device, b->device);
    if (c) return c;
    return a < b ? -1 : a > b; /* stable: document order */
}

static int cmp_dm_dev(const void *pa, const void *pb) {
    const cg_device_memory *a = *(const cg_device_memory *const *)pa, *b = *(const cg_device_memory *const *)pb;
    int c = strcmp(a->device, b->device);
    if (c) return c;
    if (a->timestamp_ns != b->timestamp_ns) return a->timestamp_ns < b->timestamp_ns ? -1 : 1;
    return a < b ? -1 : a > b;
}

static cg_physical_memory *physical_analyze(const cg_trace *t, cg_arena *a) {
    size_t n = t->n_device_memory;
    cg_physical_memory *pm = cg_arena_zalloc(a, sizeof *pm);
    pm->timeline = cg_arena_alloc(a, n * sizeof *pm->timeline);
    pm->n_timeline = n;
    for (size_t i = 0; i < n; i++) pm->timeline[i] = &t->device_memory[i];
    qsort(pm->timeline, n, sizeof *pm->timeline, cmp_dm_time);
    const cg_device_memory **byd = cg_xalloc(n, sizeof *byd);
    memcpy(byd, pm->timeline, n * sizeof *byd);
    qsort(byd, n, sizeof *byd, cmp_dm_dev);
    size_t nd = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(byd[i - 1]->device, byd[i]->device)) nd++;
    pm->devices = cg_arena_zalloc(a, nd * sizeof *pm->devices);
    pm->n_devices = nd;
    for (size_t i = 0, d = SIZE_MAX; i < n; i++) {
        const cg_device_memory *s = byd[i];
        if (i == 0 || strcmp(byd[i - 1]->device, s->device)) pm->devices[++d].device = s->device;
        cg_physical_device *pd = &pm->devices[d];
        pd->sample_count++;
        if (s->has_used) {
            pd->used_sample_count++;
            if (!pd->has_peak_used || s->used_bytes > pd->peak_used_bytes) {
                pd->has_peak_used = true;
                pd->peak_used_bytes = s->used_bytes;
                pd->peak_used_timestamp_ns = s->timestamp_ns;
            }
        }
        if (s->has_free) {
            pd->free_sample_count++;
            if (!pd->has_minimum_free || s->free_bytes < pd->minimum_free_bytes) {
                pd->has_minimum_free = true;
                pd->minimum_free_bytes = s->free_bytes;
                pd->minimum_free_timestamp_ns = s->timestamp_ns;
            }
        }
        if (s->has_reserved) {
            pd->reserved_sample_count++;
            if (!pd->has_peak_reserved || s->reserved_bytes > pd->peak_reserved_bytes) {
                pd->has_peak_reserved = true;
                pd->peak_reserved_bytes = s->reserved_bytes;
                pd->peak_reserved_timestamp_ns = s->timestamp_ns;
            }
        }
        if (s->has_capacity) {
            pd->capacity_sample_count++;
            if (!pd->has_maximum_capacity || s->capacity_bytes > pd->maximum_observed_capacity_bytes) {
                pd->has_maximum_capacity = true;
                pd->maximum_observed_capacity_bytes = s->capacity_bytes;
            }
        }
    }
    cg_free(byd);
    return pm;
}

cg_memory_profile *cg_memory_analyze(const cg_trace *t, cg_arena *a) {
    cg_memory_profile *p = cg_arena_zalloc(a, sizeof *p);
    if (t->n_memory > 0) p->logical = logical_analyze(t, a);
    if (t->n_device_memory > 0) p->physical = physical_analyze(t, a);
    return p;
}

bool cg_memory_logical_peak(const cg_memory_profile *p, uint64_t *bytes, uint64_t *timestamp_ns) {
    if (!p || !p->logical || !p->logical->has_peak) return false;
    const cg_logical_point *pt = &p->logical->timeline[p->logical->peak_point];
    if (bytes) *bytes = pt->live_bytes;
    if (timestamp_ns) *timestamp_ns = pt->timestamp_ns;
    return true;
}

/* ------------------------------------------------------------------- JSON */

static cg_jv *shape_json(cg_arena *a, const cg_shape *s) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; s && i < s->n; i++) cg_jv_arr_push(a, arr, cg_jv_u64(a, s->dims[i]));
    return arr;
}

static cg_jv *lifetime_json(cg_arena *a, const cg_logical_memory *lm, const cg_lifetime_rec *r) {
    cg_lifetime l = cg_logical_lifetime(lm, r);
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "device", cg_jv_str_nocopy(a, l.device));
    cg_jv_obj_put(a, o, "storage_id", cg_jv_str_nocopy(a, l.storage_id));
    cg_jv *ids = cg_jv_arr(a);
    for (size_t i = 0; i < l.n_tensor_ids; i++)
        cg_jv_arr_push(a, ids, cg_jv_str_nocopy(a, cg_logical_tensor_id(lm, r, i)));
    cg_jv_obj_put(a, o, "tensor_ids", ids);
    cg_jv_obj_put(a, o, "allocation_span_id", cg_jv_str_nocopy(a, l.allocation_span_id));
    cg_jv_obj_put(a, o, "op_name", l.op_name ? cg_jv_str_nocopy(a, l.op_name) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "bytes", cg_jv_u64(a, l.bytes));
    cg_jv_obj_put(a, o, "shape", shape_json(a, l.shape));
    cg_jv_obj_put(a, o, "dtype", cg_jv_str_nocopy(a, l.dtype));
    cg_jv_obj_put(a, o, "category", cg_jv_str_nocopy(a, cg_category_name(l.category)));
    cg_jv_obj_put(a, o, "start_timestamp_ns", cg_jv_u64(a, l.start_timestamp_ns));
    if (l.has_end) cg_jv_obj_put(a, o, "end_timestamp_ns", cg_jv_u64(a, l.end_timestamp_ns));
    return o;
}

/* categories of a point's map, keys sorted (a BTreeMap in the crate); only
 * the active ones (usually one or two) are ordered */
static cg_jv *by_category_json(cg_arena *a, const replay *r) {
    int order[CG_CAT_COUNT], n = 0;
    for (int c = 0; c < CG_CAT_COUNT; c++) {
        if (!r->cat_active[c]) continue;
        int k = n++;
        while (k > 0 && strcmp(cg_category_name((cg_category)order[k - 1]), cg_category_name((cg_category)c)) > 0) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = c;
    }
    cg_jv *o = cg_jv_obj(a);
    for (int k = 0; k < n; k++)
        cg_jv_obj_put(a, o, cg_category_name((cg_category)order[k]), cg_jv_u64(a, r->cat_live[order[k]]));
    return o;
}

static cg_jv *by_device_json(cg_arena *a, const replay *r) {
    cg_jv *o = cg_jv_obj(a);
    for (size_t d = 0; d < r->l->n_devices; d++)
        if (r->dev_active[d]) cg_jv_obj_put(a, o, r->l->devices[d].device, cg_jv_u64(a, r->dev_live[d]));
    return o;
}

static cg_jv *lifetime_item(cg_arena *a, void *ctx, size_t i) {
    const cg_logical_memory *l = ctx;
    return lifetime_json(a, l, &l->lifetimes[i]);
}

static cg_jv *peak_live_item(cg_arena *a, void *ctx, size_t i) {
    const cg_logical_memory *l = ctx;
    return lifetime_json(a, l, &l->peak_live_allocations[i]);
}

/* One timeline point, its maps from the replay (items come in order, so each
 * point costs its own events; a jump back replays from point 0). */
static cg_jv *point_json(cg_arena *a, replay *r, size_t p) {
    replay_to(r, p);
    const cg_logical_point *pt = &r->l->timeline[p];
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "timestamp_ns", cg_jv_u64(a, pt->timestamp_ns));
    cg_jv_obj_put(a, e, "live_bytes", cg_jv_u64(a, pt->live_bytes));
    cg_jv_obj_put(a, e, "live_bytes_by_device", by_device_json(a, r));
    cg_jv_obj_put(a, e, "live_bytes_by_category", by_category_json(a, r));
    return e;
}

static cg_jv *timeline_item(cg_arena *a, void *ctx, size_t p) { return point_json(a, ctx, p); }

static void put_opt(cg_arena *a, cg_jv *o, const char *k, bool has, uint64_t v) {
    if (has) cg_jv_obj_put(a, o, k, cg_jv_u64(a, v));
}

static cg_jv *logical_peak_json(cg_arena *a, const cg_logical_memory *l, replay *r) {
    cg_jv *peak = point_json(a, r, l->peak_point);
    cg_jv_obj_put(a, peak, "live_allocations",
                  cg_jv_lazy_arr(a, l->n_peak_live_allocations, peak_live_item, (void *)(uintptr_t)l));
    return peak;
}

static cg_jv *logical_device_json(cg_arena *a, const cg_logical_device *dv) {
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "device", cg_jv_str_nocopy(a, dv->device));
    cg_jv_obj_put(a, e, "storage_allocation_count", cg_jv_u64(a, dv->storage_allocation_count));
    cg_jv_obj_put(a, e, "matched_storage_free_count", cg_jv_u64(a, dv->matched_storage_free_count));
    cg_jv_obj_put(a, e, "total_allocated_bytes", cg_jv_u64(a, dv->total_allocated_bytes));
    put_opt(a, e, "peak_live_bytes", dv->has_peak, dv->peak_live_bytes);
    put_opt(a, e, "peak_timestamp_ns", dv->has_peak, dv->peak_timestamp_ns);
    return e;
}

static cg_jv *logical_json(cg_arena *a, const cg_logical_memory *l) {
    void *ctx = (void *)(uintptr_t)l; /* items only read the profile */
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "storage_allocation_count", cg_jv_u64(a, l->storage_allocation_count));
    cg_jv_obj_put(a, o, "matched_storage_free_count", cg_jv_u64(a, l->matched_storage_free_count));
    cg_jv_obj_put(a, o, "total_allocated_bytes", cg_jv_u64(a, l->total_allocated_bytes));
    replay *r = cg_arena_alloc(a, sizeof *r);
    replay_init(r, l, cg_arena_zalloc(a, (l->n_devices ? l->n_devices : 1) * sizeof *r->dev_live),
                cg_arena_zalloc(a, (l->n_devices ? l->n_devices : 1) * sizeof *r->dev_active));
    /* the peak and the timeline share the replay: the timeline's point 0 restarts it */
    if (l->has_peak) cg_jv_obj_put(a, o, "peak", logical_peak_json(a, l, r));
    cg_jv_obj_put(a, o, "timeline", cg_jv_lazy_arr(a, l->n_timeline, timeline_item, r));
    cg_jv_obj_put(a, o, "lifetimes", cg_jv_lazy_arr(a, l->n_lifetimes, lifetime_item, ctx));
    cg_jv *devs = cg_jv_arr(a);
    for (size_t d = 0; d < l->n_devices; d++) cg_jv_arr_push(a, devs, logical_device_json(a, &l->devices[d]));
    cg_jv_obj_put(a, o, "by_device", devs);
    return o;
}


static cg_jv *physical_item(cg_arena *a, void *ctx, size_t i) {
    const cg_device_memory *s = ((const cg_physical_memory *)ctx)->timeline[i];
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "timestamp_ns", cg_jv_u64(a, s->timestamp_ns));
    cg_jv_obj_put(a, e, "device", cg_jv_str_nocopy(a, s->device));
    put_opt(a, e, "used_bytes", s->has_used, s->used_bytes);
    put_opt(a, e, "free_bytes", s->has_free, s->free_bytes);
    put_opt(a, e, "reserved_bytes", s->has_reserved, s->reserved_bytes);
    put_opt(a, e, "capacity_bytes", s->has_capacity, s->capacity_bytes);
    return e;
}

static cg_jv *physical_json(cg_arena *a, const cg_physical_memory *pm) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "timeline", cg_jv_lazy_arr(a, pm->n_timeline, physical_item, (void *)(uintptr_t)pm));
    cg_jv *devs = cg_jv_arr(a);
    for (size_t d = 0; d < pm->n_devices; d++) {
        const cg_physical_device *pd = &pm->devices[d];
        cg_jv *e = cg_jv_obj(a);
        cg_jv_obj_put(a, e, "device", cg_jv_str_nocopy(a, pd->device));
        cg_jv_obj_put(a, e, "sample_count", cg_jv_u64(a, pd->sample_count));
        cg_jv_obj_put(a, e, "used_sample_count", cg_jv_u64(a, pd->used_sample_count));
        cg_jv_obj_put(a, e, "free_sample_count", cg_jv_u64(a, pd->free_sample_count));
        cg_jv_obj_put(a, e, "reserved_sample_count", cg_jv_u64(a, pd->reserved_sample_count));
        cg_jv_obj_put(a, e, "capacity_sample_count", cg_jv_u64(a, pd->capacity_sample_count));
        put_opt(a, e, "peak_used_bytes", pd->has_peak_used, pd->peak_used_bytes);
        put_opt(a, e, "peak_used_timestamp_ns", pd->has_peak_used, pd->peak_used_timestamp_ns);
        put_opt(a, e, "peak_reserved_bytes", pd->has_peak_reserved, pd->peak_reserved_bytes);
        put_opt(a, e, "peak_reserved_timestamp_ns", pd->has_peak_reserved, pd->peak_reserved_timestamp_ns);
        put_opt(a, e, "minimum_free_bytes", pd->has_minimum_free, pd->minimum_free_bytes);
        put_opt(a, e, "minimum_free_timestamp_ns", pd->has_minimum_free, pd->minimum_free_timestamp_ns);
        put_opt(a, e, "maximum_observed_capacity_bytes", pd->has_maximum_capacity,
                pd->maximum_observed_capacity_bytes);
        cg_jv_arr_push(a, devs, e);
    }
    cg_jv_obj_put(a, o, "by_device", devs);
    return o;
}

cg_jv *cg_memory_to_json(cg_arena *a, const cg_memory_profile *p) {
    return cg_jv_materialize(a, cg_memory_to_json_lazy(a, p));
}

cg_jv *cg_memory_to_json_lazy(cg_arena *a, const cg_memory_profile *p) {
    cg_jv *o = cg_jv_obj(a);
    if (p->logical) cg_jv_obj_put(a, o, "logical", logical_json(a, p->logical));
    if (p->physical) cg_jv_obj_put(a, o, "physical", physical_json(a, p->physical));
    return o;
}
