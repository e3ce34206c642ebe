/* profile_run.c — ProfileRun: the run description behind a session's meta
 * record. Everything the run holds is copied into its own arena. */
#include "capture/capture.h"
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

struct cg_profile_run {
    cg_arena arena;
    cg_run_meta meta; /* run_id optional override, timestamp always NULL */
    size_t tags_cap;
};

static cg_profile_run *profile_new(const char *entrypoint, uint64_t step, const char *device,
                                   cg_phase phase) {
    if (!entrypoint || !device) return NULL;
    cg_profile_run *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    cg_arena_init(&r->arena, 4096);
    r->meta.entrypoint = cg_arena_strdup(&r->arena, entrypoint);
    r->meta.device = cg_arena_strdup(&r->arena, device);
    r->meta.phase = phase;
    r->meta.capture_step = step;
    r->meta.warmup_steps = step > 0 ? step - 1 : 0;
    r->meta.correlation_id =
        cg_arena_printf(&r->arena, "%s/%s-%llu", entrypoint,
                        phase == CG_PHASE_TRAIN ? "update" : "inference", (unsigned long long)step);
    r->meta.timing_mode = CG_TIMING_HOST;
    /* zeroed contract = CaptureContract::default (scope unknown, coverage none) */
    return r;
}

cg_profile_run *cg_profile_run_training(const char *entrypoint, uint64_t capture_step,
                                        const char *device) {
    return profile_new(entrypoint, capture_step, device, CG_PHASE_TRAIN);
}

cg_profile_run *cg_profile_run_inference(const char *entrypoint, uint64_t capture_step,
                                         const char *device) {
    return profile_new(entrypoint, capture_step, device, CG_PHASE_INFER);
}

void cg_profile_run_free(cg_profile_run *r) {
    if (!r) return;
    cg_arena_free(&r->arena);
    cg_free(r);
}

int cg_profile_run_tag(cg_profile_run *r, const char *key, const char *value) {
    if (!r || !key || !value) return -1;
    size_t lo = 0, hi = r->meta.n_tags;
    while (lo < hi) { /* first tag with key >= key (byte order, like BTreeMap<String,_>) */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(r->meta.tags[mid].key, key) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < r->meta.n_tags && strcmp(r->meta.tags[lo].key, key) == 0) {
        r->meta.tags[lo].value = cg_arena_strdup(&r->arena, value);
        return 0;
    }
    if (r->meta.n_tags == r->tags_cap) {
        size_t cap = r->tags_cap ? r->tags_cap * 2 : 8;
        cg_kv *tags = cg_arena_alloc(&r->arena, cap * sizeof *tags);
        if (r->meta.n_tags) memcpy(tags, r->meta.tags, r->meta.n_tags * sizeof *tags);
        r->meta.tags = tags;
        r->tags_cap = cap;
    }
    memmove(r->meta.tags + lo + 1, r->meta.tags + lo, (r->meta.n_tags - lo) * sizeof *r->meta.tags);
    r->meta.tags[lo].key = cg_arena_strdup(&r->arena, key);
    r->meta.tags[lo].value = cg_arena_strdup(&r->arena, value);
    r->meta.n_tags++;
    return 0;
}

int cg_profile_run_correlation_id(cg_profile_run *r, const char *correlation_id) {
    if (!r || !correlation_id) return -1;
    r->meta.correlation_id = cg_arena_strdup(&r->arena, correlation_id);
    return 0;
}

int cg_profile_run_run_id(cg_profile_run *r, const char *run_id) {
    if (!r || !run_id) return -1;
    r->meta.run_id = cg_arena_strdup(&r->arena, run_id);
    return 0;
}


static int copy_strlist(cg_arena *a, cg_strlist *dst, const cg_strlist *src) {
    dst->n = src->n;
    dst->items = NULL;
    if (src->n == 0) return 0;
    if (!src->items) return -1;
    dst->items = cg_arena_alloc(a, src->n * sizeof *dst->items);
    for (size_t i = 0; i < src->n; i++) {
        if (!src->items[i]) return -1;
        dst->items[i] = cg_arena_strdup(a, src->items[i]);
    }
    return 0;
}

static int copy_gradient_contract(cg_arena *a, cg_gradient_contract **dst,
                                  const cg_gradient_contract *src) {
    cg_gradient_contract *g = cg_arena_zalloc(a, sizeof *g);
    if (!src->manifest_sha256) return -1;
    if ((src->n_expected && !src->expected) || (src->n_families && !src->families)) return -1;
    g->manifest_sha256 = cg_arena_strdup(a, src->manifest_sha256);
    g->n_expected = src->n_expected;
    if (src->n_expected) g->expected = cg_arena_alloc(a, src->n_expected * sizeof *g->expected);
    for (size_t i = 0; i < src->n_expected; i++) {
        const cg_expected_gradient *e = &src->expected[i];
        if (!e->root || !e->key || !e->family) return -1;
        g->expected[i].root = cg_arena_strdup(a, e->root);
        g->expected[i].key = cg_arena_strdup(a, e->key);
        g->expected[i].family = cg_arena_strdup(a, e->family);
    }
    g->n_families = src->n_families;
    if (src->n_families) g->families = cg_arena_alloc(a, src->n_families * sizeof *g->families);
    for (size_t i = 0; i < src->n_families; i++) {
        if (!src->families[i].family) return -1;
        g->families[i] = src->families[i];
        g->families[i].family = cg_arena_strdup(a, src->families[i].family);
    }
    *dst = g;
    return 0;
}

int cg_profile_run_capture_contract(cg_profile_run *r, const cg_capture_contract *c) {
    if (!r || !c) return -1;
    cg_capture_contract copy = *c;
    copy.gradient_contract = NULL;
    if (copy_strlist(&r->arena, &copy.required_semantic_labels, &c->required_semantic_labels) ||
        copy_strlist(&r->arena, &copy.gpu_expected_semantic_labels,
                     &c->gpu_expected_semantic_labels) ||
        copy_strlist(&r->arena, &copy.cpu_only_semantic_labels, &c->cpu_only_semantic_labels))
        return -1;
    if (c->gradient_contract &&
        copy_gradient_contract(&r->arena, &copy.gradient_contract, c->gradient_contract))
        return -1;
    r->meta.contract = copy; /* the abandoned partial copies stay in the arena */
    return 0;
}

int cg_profile_run_comparison_identity(cg_profile_run *r, const cg_comparison_identity *id) {
    if (!r || !id) return -1;
    cg_comparison_identity *c = cg_comparison_identity_copy(&r->arena, id);
    if (!c->workload_id || !c->model_id || !c->config_id || !c->data_id || !c->seed_policy ||
        !c->precision || !c->device_state)
        return -1;
    r->meta.identity = c;
    return 0;
}

void cg_profile_run_warmup_steps(cg_profile_run *r, uint64_t warmup_steps) {
    if (r) r->meta.warmup_steps = warmup_steps;
}

void cg_profile_run_measured_region_device_synchronized(cg_profile_run *r) {
    if (r) r->meta.measured_region_device_synchronized = true;
}

void cg_profile_run_device_synchronized(cg_profile_run *r) {
    if (!r) return;
    r->meta.timing_mode = CG_TIMING_DEVICE_SYNCHRONIZED;
    r->meta.measured_region_device_synchronized = true;
}

const cg_run_meta *cg_profile_run_meta(const cg_profile_run *r) { return r ? &r->meta : NULL; }
