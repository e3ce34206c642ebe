/* series.c — series/1: per-bundle facts, ordering by capture_step, label
 * filtering and the series document. */
#include "campaign/series.h"

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "bundle/verify.h"

void cg_series_point_from_trace(cg_arena *a, const cg_trace *t, const char *bundle, const char *receipt_run_id,
                                const char *manifest_sha256, cg_series_point *out) {
    memset(out, 0, sizeof *out);
    out->bundle = cg_arena_strdup(a, bundle);
    out->receipt_run_id = cg_arena_strdup(a, receipt_run_id);
    out->manifest_sha256 = cg_arena_strdup(a, manifest_sha256);
    out->run_id = cg_arena_strdup(a, t->run.run_id);
    out->entrypoint = cg_arena_strdup(a, t->run.entrypoint);
    out->phase = t->run.phase;
    out->capture_step = t->run.capture_step;
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        if (!(s->measured && s->closed)) continue;
        if (out->measured_regions == 0) out->measured_duration_ns = s->duration_ns;
        out->measured_regions++;
    }
    out->n_stats = t->n_tensor_stats;
    out->stats = cg_arena_zalloc(a, (out->n_stats ? out->n_stats : 1) * sizeof *out->stats);
    for (size_t i = 0; i < out->n_stats; i++) {
        const cg_tensor_stats *s = &t->tensor_stats[i];
        cg_series_stat *d = &out->stats[i];
        d->label = cg_arena_strdup(a, s->label);
        d->rms = s->rms;
        d->abs_max = s->abs_max;
        d->mean = s->mean;
        d->non_finite = s->non_finite;
        d->elements = s->elements;
    }
    out->n_gradients = t->n_gradients;
    out->gradients = cg_arena_zalloc(a, (out->n_gradients ? out->n_gradients : 1) * sizeof *out->gradients);
    for (size_t i = 0; i < out->n_gradients; i++) {
        const cg_gradient *g = &t->gradients[i];
        cg_series_gradient *d = &out->gradients[i];
        d->root = cg_arena_strdup(a, g->root);
        d->key = cg_arena_strdup(a, g->key);
        d->state = g->state;
        d->has_norm = g->has_norm;
        d->norm = g->norm;
    }
}

int cg_series_point_from_bundle(cg_arena *a, const char *root, cg_series_point *out, cg_error *err) {
    cg_bundle_receipt receipt;
    if (cg_bundle_verify(root, &receipt, err) != 0) return cg_err_context(err, "verify series bundle %s", root);
    cg_trace *t = cg_trace_read_file(cg_path_join_arena(a, root, "trace.jsonl"), NULL, err);
    if (!t) return cg_err_context(err, "parse trace of series bundle %s", root);
    cg_series_point_from_trace(a, t, root, receipt.run_id, receipt.manifest_sha256, out);
    cg_trace_free(t);
    return 0;
}

/* ---------------------------------------------------------------- building */

typedef struct series_ref {
    const char *key;
    size_t entry; /* position in capture-step order */
    size_t event; /* document order within the bundle */
    const cg_series_point *point;
    const void *item; /* cg_series_stat or cg_series_gradient */
} series_ref;

static int cmp_ref(const void *x, const void *y) {
    const series_ref *p = x, *q = y;
    int c = strcmp(p->key, q->key);
    if (c) return c;
    if (p->entry != q->entry) return p->entry < q->entry ? -1 : 1;
    return p->event < q->event ? -1 : p->event > q->event;
}

static bool keep(const char *key, const char *prefix) {
    return !prefix || strncmp(key, prefix, strlen(prefix)) == 0;
}

static cg_jv *scalar_point(cg_arena *a, const series_ref *r) {
    const cg_series_stat *s = r->item;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "capture_step", cg_jv_u64(a, r->point->capture_step));
    cg_jv_obj_put(a, o, "run_id", cg_jv_str(a, r->point->run_id));
    cg_jv_obj_put(a, o, "rms", cg_jv_f64(a, s->rms));
    cg_jv_obj_put(a, o, "abs_max", cg_jv_f64(a, s->abs_max));
    cg_jv_obj_put(a, o, "mean", cg_jv_f64(a, s->mean));
    cg_jv_obj_put(a, o, "non_finite", cg_jv_u64(a, s->non_finite));
    cg_jv_obj_put(a, o, "elements", cg_jv_u64(a, s->elements));
    return o;
}

static cg_jv *gradient_point(cg_arena *a, const series_ref *r) {
    const cg_series_gradient *g = r->item;
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "capture_step", cg_jv_u64(a, r->point->capture_step));
    cg_jv_obj_put(a, o, "run_id", cg_jv_str(a, r->point->run_id));
    cg_jv_obj_put(a, o, "state", cg_jv_str_nocopy(a, cg_grad_state_name(g->state)));
    cg_jv_obj_put(a, o, "norm", g->has_norm ? cg_jv_f64(a, g->norm) : cg_jv_null(a));
    return o;
}

/* One key's points: a lazy array over its run of sorted refs, each point built
 * only while the document is written (a 5M-record series has millions). */
typedef struct series_group {
    const series_ref *refs;
    cg_jv *(*point)(cg_arena *, const series_ref *);
} series_group;

static cg_jv *group_item(cg_arena *a, void *ctx, size_t i) {
    const series_group *g = ctx;
    return g->point(a, &g->refs[i]);
}

/* Groups refs by key (sorted) into {key: [points…]}; refs must live in a. */
static cg_jv *grouped(cg_arena *a, series_ref *refs, size_t n, cg_jv *(*point)(cg_arena *, const series_ref *)) {
    qsort(refs, n, sizeof *refs, cmp_ref);
    cg_jv *o = cg_jv_obj(a);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && strcmp(refs[j].key, refs[i].key) == 0; j++) {
        }
        series_group *g = cg_arena_alloc(a, sizeof *g);
        *g = (series_group){&refs[i], point};
        cg_jv_obj_put(a, o, cg_arena_strdup(a, refs[i].key), cg_jv_lazy_arr(a, j - i, group_item, g));
    }
    return o;
}

cg_jv *cg_build_series_from_points(cg_arena *a, const cg_series_point *pts, size_t n, const char *label_prefix,
                                   cg_error *err) {
    if (n == 0) {
        cg_err_setr(err, CG_R_INVALID_PARAMETER, CG_EINVAL, "series requires at least one bundle");
        return NULL;
    }
    /* per point in input order, as the crate checks them: entrypoint, phase, then a step
     * an earlier point already provides */
    const cg_series_point *ref = &pts[0];
    for (size_t i = 0; i < n; i++) {
        if (strcmp(pts[i].entrypoint, ref->entrypoint) != 0) {
            cg_err_setr(err, CG_R_INVALID_PARAMETER, CG_EINVAL,
                        "series bundles mix entrypoints: %s observes %s, expected %s from %s", pts[i].bundle,
                        CG_QUOTE(pts[i].entrypoint), CG_QUOTE(ref->entrypoint), ref->bundle);
            return NULL;
        }
        if (pts[i].phase != ref->phase) {
            cg_err_setr(err, CG_R_INVALID_PARAMETER, CG_EINVAL,
                        "series bundles mix phases: %s observes %s, expected %s from %s", pts[i].bundle,
                        CG_QUOTE(cg_phase_name(pts[i].phase)), CG_QUOTE(cg_phase_name(ref->phase)), ref->bundle);
            return NULL;
        }
        for (size_t j = 0; j < i; j++)
            if (pts[j].capture_step == pts[i].capture_step) {
                cg_err_setr(err, CG_R_INVALID_PARAMETER, CG_EINVAL,
                            "ambiguous series coordinate: capture_step %llu is provided by both %s and %s",
                            (unsigned long long)pts[i].capture_step, pts[j].bundle, pts[i].bundle);
                return NULL;
            }
    }
    /* capture-step order (steps are unique now) */
    size_t *order = cg_xalloc(n, sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = 1; i < n; i++) {
        size_t v = order[i], j = i;
        while (j > 0 && pts[order[j - 1]].capture_step > pts[v].capture_step) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    cg_jv *o = cg_jv_obj(a), *inputs = cg_jv_arr(a), *timing = cg_jv_arr(a);
    size_t n_stats = 0, n_grads = 0;
    for (size_t k = 0; k < n; k++) {
        const cg_series_point *p = &pts[order[k]];
        n_stats += p->n_stats;
        n_grads += p->n_gradients;
        cg_jv *in = cg_jv_obj(a);
        cg_jv_obj_put(a, in, "capture_step", cg_jv_u64(a, p->capture_step));
        cg_jv_obj_put(a, in, "run_id", cg_jv_str(a, p->receipt_run_id));
        cg_jv_obj_put(a, in, "bundle", cg_jv_str(a, p->bundle));
        cg_jv_obj_put(a, in, "manifest_sha256", cg_jv_str(a, p->manifest_sha256));
        cg_jv_arr_push(a, inputs, in);
        cg_jv *tp = cg_jv_obj(a);
        cg_jv_obj_put(a, tp, "capture_step", cg_jv_u64(a, p->capture_step));
        cg_jv_obj_put(a, tp, "run_id", cg_jv_str(a, p->run_id));
        cg_jv_obj_put(a, tp, "outer_wall_time_ns",
                      p->measured_regions == 1 ? cg_jv_u64(a, p->measured_duration_ns) : cg_jv_null(a));
        cg_jv_arr_push(a, timing, tp);
    }
    series_ref *sr = cg_arena_alloc(a, (n_stats ? n_stats : 1) * sizeof *sr);
    series_ref *gr = cg_arena_alloc(a, (n_grads ? n_grads : 1) * sizeof *gr);
    size_t ns = 0, ng = 0;
    for (size_t k = 0; k < n; k++) {
        const cg_series_point *p = &pts[order[k]];
        for (size_t e = 0; e < p->n_stats; e++)
            if (keep(p->stats[e].label, label_prefix))
                sr[ns++] = (series_ref){p->stats[e].label, k, e, p, &p->stats[e]};
        for (size_t e = 0; e < p->n_gradients; e++) {
            const char *key = cg_arena_printf(a, "%s/%s", p->gradients[e].root, p->gradients[e].key);
            if (keep(key, label_prefix)) gr[ng++] = (series_ref){key, k, e, p, &p->gradients[e]};
        }
    }
    cg_jv_obj_put(a, o, "schema", cg_jv_str_nocopy(a, CG_SERIES_SCHEMA));
    cg_jv_obj_put(a, o, "entrypoint", cg_jv_str(a, ref->entrypoint));
    cg_jv_obj_put(a, o, "coordinate", cg_jv_str_nocopy(a, "capture_step"));
    cg_jv_obj_put(a, o, "label_prefix", label_prefix ? cg_jv_str(a, label_prefix) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "inputs", inputs);
    cg_jv_obj_put(a, o, "outer_wall_time", timing);
    cg_jv_obj_put(a, o, "tensor_stats", grouped(a, sr, ns, scalar_point));
    cg_jv_obj_put(a, o, "gradients", grouped(a, gr, ng, gradient_point));
    cg_free(order);
    return o;
}

cg_jv *cg_build_series(cg_arena *a, const char *const *roots, size_t n, const char *label_prefix, cg_error *err) {
    if (n == 0) {
        cg_err_set(err, CG_EINVAL, "series requires at least one bundle");
        return NULL;
    }
    cg_series_point *pts = cg_arena_zalloc(a, n * sizeof *pts);
    for (size_t i = 0; i < n; i++)
        if (cg_series_point_from_bundle(a, roots[i], &pts[i], err) != 0) return NULL;
    return cg_build_series_from_points(a, pts, n, label_prefix, err);
}

/* ---------------------------------------------------------------- storage JSON */

/* The series point's tensor_stats and gradients items, produced while the
 * point is written (lazy arrays: no DOM of a 5M-record trace's 400k items). */
static cg_jv *stat_item(cg_arena *a, void *ctx, size_t i) {
    const cg_series_stat *s = &((const cg_series_point *)ctx)->stats[i];
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "label", cg_jv_str_nocopy(a, s->label));
    cg_jv_obj_put(a, e, "rms", cg_jv_f64(a, s->rms));
    cg_jv_obj_put(a, e, "abs_max", cg_jv_f64(a, s->abs_max));
    cg_jv_obj_put(a, e, "mean", cg_jv_f64(a, s->mean));
    cg_jv_obj_put(a, e, "non_finite", cg_jv_u64(a, s->non_finite));
    cg_jv_obj_put(a, e, "elements", cg_jv_u64(a, s->elements));
    return e;
}

static cg_jv *gradient_item(cg_arena *a, void *ctx, size_t i) {
    const cg_series_gradient *g = &((const cg_series_point *)ctx)->gradients[i];
    cg_jv *e = cg_jv_obj(a);
    cg_jv_obj_put(a, e, "root", cg_jv_str_nocopy(a, g->root));
    cg_jv_obj_put(a, e, "key", cg_jv_str_nocopy(a, g->key));
    cg_jv_obj_put(a, e, "state", cg_jv_str_nocopy(a, cg_grad_state_name(g->state)));
    cg_jv_obj_put(a, e, "norm", g->has_norm ? cg_jv_f64(a, g->norm) : cg_jv_null(a));
    return e;
}

cg_jv *cg_series_point_to_json(cg_arena *a, const cg_series_point *p) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "bundle", cg_jv_str(a, p->bundle));
    cg_jv_obj_put(a, o, "receipt_run_id", cg_jv_str(a, p->receipt_run_id));
    cg_jv_obj_put(a, o, "manifest_sha256", cg_jv_str(a, p->manifest_sha256));
    cg_jv_obj_put(a, o, "run_id", cg_jv_str(a, p->run_id));
    cg_jv_obj_put(a, o, "entrypoint", cg_jv_str(a, p->entrypoint));
    cg_jv_obj_put(a, o, "phase", cg_jv_str_nocopy(a, cg_phase_name(p->phase)));
    cg_jv_obj_put(a, o, "capture_step", cg_jv_u64(a, p->capture_step));
    cg_jv_obj_put(a, o, "measured_regions", cg_jv_u64(a, p->measured_regions));
    cg_jv_obj_put(a, o, "measured_duration_ns", cg_jv_u64(a, p->measured_duration_ns));
    cg_jv_obj_put(a, o, "tensor_stats", cg_jv_lazy_arr(a, p->n_stats, stat_item, (void *)p));
    cg_jv_obj_put(a, o, "gradients", cg_jv_lazy_arr(a, p->n_gradients, gradient_item, (void *)p));
    return o;
}

static const char *get_str(cg_arena *a, const cg_jv *o, const char *key, bool *ok) {
    const char *s = cg_jv_as_str(cg_jv_get(o, key));
    if (!s) {
        *ok = false;
        return "";
    }
    return cg_arena_strdup(a, s);
}

static double get_f64(const cg_jv *o, const char *key, bool *ok) {
    double d = 0;
    const cg_jv *v = cg_jv_get(o, key);
    if (!v || (v->type != CG_JREAL && v->type != CG_JINT) || !cg_jv_as_f64(v, &d)) *ok = false;
    return d;
}

static uint64_t get_u64(const cg_jv *o, const char *key, bool *ok) {
    uint64_t u = 0;
    if (!cg_jv_as_u64(cg_jv_get(o, key), &u)) *ok = false;
    return u;
}

int cg_series_point_from_json(cg_arena *a, const cg_jv *v, cg_series_point *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    bool ok = v && v->type == CG_JOBJ;
    if (!ok) return cg_err_set(err, CG_EPARSE, "series point must be a JSON object");
    out->bundle = get_str(a, v, "bundle", &ok);
    out->receipt_run_id = get_str(a, v, "receipt_run_id", &ok);
    out->manifest_sha256 = get_str(a, v, "manifest_sha256", &ok);
    out->run_id = get_str(a, v, "run_id", &ok);
    out->entrypoint = get_str(a, v, "entrypoint", &ok);
    int phase = cg_phase_parse(get_str(a, v, "phase", &ok));
    if (phase < 0) ok = false;
    out->phase = phase < 0 ? CG_PHASE_TRAIN : (cg_phase)phase;
    out->capture_step = get_u64(v, "capture_step", &ok);
    out->measured_regions = get_u64(v, "measured_regions", &ok);
    out->measured_duration_ns = get_u64(v, "measured_duration_ns", &ok);
    const cg_jv *stats = cg_jv_get(v, "tensor_stats"), *grads = cg_jv_get(v, "gradients");
    if (!ok || !stats || stats->type != CG_JARR || !grads || grads->type != CG_JARR)
        return cg_err_set(err, CG_EPARSE, "series point is missing or mistypes a field");
    out->n_stats = cg_jv_len(stats);
    out->stats = cg_arena_zalloc(a, (out->n_stats ? out->n_stats : 1) * sizeof *out->stats);
    for (size_t i = 0; i < out->n_stats && ok; i++) {
        const cg_jv *e = cg_jv_at(stats, i);
        cg_series_stat *s = &out->stats[i];
        s->label = get_str(a, e, "label", &ok);
        s->rms = get_f64(e, "rms", &ok);
        s->abs_max = get_f64(e, "abs_max", &ok);
        s->mean = get_f64(e, "mean", &ok);
        s->non_finite = get_u64(e, "non_finite", &ok);
        s->elements = get_u64(e, "elements", &ok);
    }
    out->n_gradients = cg_jv_len(grads);
    out->gradients = cg_arena_zalloc(a, (out->n_gradients ? out->n_gradients : 1) * sizeof *out->gradients);
    for (size_t i = 0; i < out->n_gradients && ok; i++) {
        const cg_jv *e = cg_jv_at(grads, i);
        cg_series_gradient *g = &out->gradients[i];
        g->root = get_str(a, e, "root", &ok);
        g->key = get_str(a, e, "key", &ok);
        int st = cg_grad_state_parse(get_str(a, e, "state", &ok));
        if (st < 0) ok = false;
        g->state = st < 0 ? CG_GRAD_MISSING : (cg_grad_state)st;
        const cg_jv *nv = cg_jv_get(e, "norm");
        g->has_norm = nv && nv->type != CG_JNULL;
        if (g->has_norm) g->norm = get_f64(e, "norm", &ok);
    }
    if (!ok) return cg_err_set(err, CG_EPARSE, "series point has a malformed tensor_stats or gradients entry");
    return 0;
}
