/* series.h — candle-graph/series/1 over bundles ordered by capture_step (§4.3).
 *
 * A cg_series_point holds what the series needs from one bundle (its
 * coordinates, receipt, measured region and tensor_stats / gradient events),
 * so the filesystem path (cg_build_series: verify + parse each root) and a
 * server building series from its index (cg_build_series_from_points) share
 * one JSON builder and the same error rules.
 *
 * Ownership: points and JSON live in the caller's arena. The point arrays of
 * the document (tensor_stats.<label>, gradients.<root/key>) are lazy
 * (base/json.h): their items are built while the document is written, so its
 * memory is that of the points, not of the JSON tree; they read the points,
 * which must outlive every use of the document; call cg_jv_materialize for a
 * DOM.
 * Errors: "series requires at least one bundle", "verify series bundle …",
 * "parse trace of series bundle …", "series bundles mix entrypoints: A and B",
 * "series bundles mix phases: A and B", "ambiguous series coordinate:
 * capture_step N is provided by both A and B"; NULL is returned with err set
 * (cg_build_series_from_points: reason invalid_parameter). */
#ifndef CG_CAMPAIGN_SERIES_H
#define CG_CAMPAIGN_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "trace/trace.h"

#define CG_SERIES_SCHEMA "candle-graph/series/1"

typedef struct cg_series_stat {
    const char *label;
    double rms, abs_max, mean;
    uint64_t non_finite, elements;
} cg_series_stat;

typedef struct cg_series_gradient {
    const char *root, *key;
    cg_grad_state state;
    bool has_norm;
    double norm;
} cg_series_gradient;

typedef struct cg_series_point {
    const char *bundle;          /* root path as given / displayed */
    const char *receipt_run_id;  /* bundle manifest run ID (SeriesInput.run_id) */
    const char *manifest_sha256;
    const char *run_id;          /* trace meta run ID (timing / scalar / gradient points) */
    const char *entrypoint;
    cg_phase phase;
    uint64_t capture_step;
    uint64_t measured_regions;     /* spans with measured && closed */
    uint64_t measured_duration_ns; /* of the first such span */
    cg_series_stat *stats;         /* document order */
    size_t n_stats;
    cg_series_gradient *gradients; /* document order */
    size_t n_gradients;
} cg_series_point;

/* Facts of one verified bundle; strings are copied into a. */
void cg_series_point_from_trace(cg_arena *a, const cg_trace *t, const char *bundle, const char *receipt_run_id,
                                const char *manifest_sha256, cg_series_point *out);
/* verify_bundle + parse trace.jsonl with the series error contexts. */
int cg_series_point_from_bundle(cg_arena *a, const char *root, cg_series_point *out, cg_error *err);

/* series/1 from points in input order (first point = reference). label_prefix
 * may be NULL (keeps everything; written as null). */
cg_jv *cg_build_series_from_points(cg_arena *a, const cg_series_point *points, size_t n, const char *label_prefix,
                                   cg_error *err);
/* build_series(bundle_roots, label_prefix). */
cg_jv *cg_build_series(cg_arena *a, const char *const *roots, size_t n, const char *label_prefix, cg_error *err);

/* Stable JSON of a point for storage, and back. The tensor_stats and
 * gradients arrays are lazy (items made while the value is walked): p must
 * outlive the value. */
cg_jv *cg_series_point_to_json(cg_arena *a, const cg_series_point *p);
int cg_series_point_from_json(cg_arena *a, const cg_jv *v, cg_series_point *out, cg_error *err);

#endif
