/* advice.h — "run k more": candle-graph/replication-advice/1 (issue 15), how
 * many more runs per side would resolve a comparison/6 that is inconclusive or
 * ineligible only for too few runs, estimated from the observed samples with
 * the comparison's own bootstrap (docs/statistics.md, "Replication advice").
 *
 * Resolved at m runs per side means: the 95 % interval of the median delta,
 * bootstrapped with m draws per side from the observed samples
 * (cg_stats_bootstrap_unpaired_m, same seed and ranks as comparison/6),
 * excludes zero, or lies inside ±target (target = target_effect_percent of the
 * baseline median); and m ≥ CG_COMPARISON_MINIMUM_RUNS. The answer is the
 * smallest k ≥ 0 found by scanning k = 0 … 16, then doubling and bisecting, up
 * to CG_ADVICE_MAX_RUNS runs per side; null when the comparison is ineligible
 * for a reason more runs cannot fix, or when the cap is not enough.
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
