/* tensor_stats.c — tensor_stats aggregates of a float buffer (§2.5). */
#include "capture/capture.h"

#include <math.h>

void cg_tensor_stats_f32(const float *data, size_t n, cg_f32_stats *out) {
    double sum = 0.0, sumsq = 0.0, absmax = 0.0;
    uint64_t non_finite = 0;
    for (size_t i = 0; i < n; i++) {
        double x = (double)data[i];
        if (!isfinite(x)) {
            non_finite++;
            continue;
        }
        sum += x;
        sumsq += x * x;
        double ax = fabs(x);
        if (ax > absmax) absmax = ax;
    }
    out->elements = (uint64_t)n;
    out->non_finite = non_finite;
    if (n == 0 || non_finite > 0) {
        /* Over all elements a NaN/±inf makes Σx, Σx² and max|x| non-finite;
         * producer rule: non-finite aggregates are written as 0. */
        out->rms = 0.0;
        out->abs_max = 0.0;
        out->mean = 0.0;
        return;
    }
    double rms = sqrt(sumsq / (double)n);
    double mean = sum / (double)n;
    out->rms = isfinite(rms) ? rms : 0.0;
    out->abs_max = isfinite(absmax) ? absmax : 0.0;
    out->mean = isfinite(mean) ? mean : 0.0;
}
