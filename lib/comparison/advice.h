/* advice.h — "run k more": candle-graph/replication-advice/1 (issue 15), how
 * many more runs per side would resolve a comparison/6 that is inconclusive or
 * ineligible only for too few runs, estimated from the observed samples with
 * the comparison's own bootstrap (docs/statistics.md, "Replication advice").
 *
 * From the observed samples, comparison/6's own bootstrap (same seed, same
 * 10,000 resamples, same ranks) gives the 95 % interval of the median delta,
 * its centre c and half-width h; at n+k runs per side the half-width is
 * projected with the median's 1/sqrt(n) rate, h_k = h·sqrt((1/(nb+k) +
 * 1/(nc+k)) / (1/nb + 1/nc)). Resolved at k: c ± h_k excludes zero or lies
 * inside ±target (target = target_effect_percent of the baseline median),
 * with at least CG_COMPARISON_MINIMUM_RUNS runs per side. The answer is the
 * smallest such k up to CG_ADVICE_MAX_RUNS runs per side; null when the
 * comparison is ineligible for a reason more runs cannot fix, or past the cap.
 * comparison/6 itself is never changed.
 *
 * Ownership: the result lives in arena a. The comparison is borrowed. Never
 * fails (a comparison without samples gives null advice). */
#ifndef CG_COMPARISON_ADVICE_H
#define CG_COMPARISON_ADVICE_H

#include <stdbool.h>

#include "base/arena.h"
#include "base/json.h"

#define CG_ADVICE_SCHEMA "candle-graph/replication-advice/1"
#define CG_ADVICE_MAX_RUNS 1000

/* target_effect_pct > 0: the minimum effect to resolve, in percent of the
 * baseline median; ≤ 0: the observed |delta| percent (1 % when it is 0). */
cg_jv *cg_replication_advice(cg_arena *a, const cg_jv *comparison, double target_effect_pct);

#endif
