/* rules.c — the document rules that both the reader (parse-time, fatal) and
 * health (issue list) apply, each in one function named after the rule. The
 * callers word the failure themselves: the crate phrases the same rule
 * differently at parse time ("terminal event") and in health ("terminal
 * outcome"). */
#include <math.h>

#include "trace/trace.h"

#include "base/num.h"

cg_terminal_reason_rule cg_rule_terminal_reason(const cg_terminal *t) {
    if (t->outcome == CG_OUTCOME_COMPLETE && t->reason) return CG_TERMINAL_COMPLETE_WITH_REASON;
    if (t->outcome == CG_OUTCOME_FAILED && (!t->reason || cg_str_blank(t->reason)))
        return CG_TERMINAL_FAILED_WITHOUT_REASON;
    return CG_TERMINAL_REASON_OK;
}

uint64_t cg_rule_latest_host_evidence_end(const cg_trace *t) {
    uint64_t end = 0;
    for (size_t i = 0; i < t->n_spans; i++) {
        const cg_span *s = &t->spans[i];
        uint64_t e = cg_sat_add_u64(s->start_ns, s->closed ? s->duration_ns : 0);
        if (e > end) end = e;
    }
    for (size_t i = 0; i < t->n_ops; i++) {
        uint64_t e = cg_sat_add_u64(t->ops[i].timestamp_ns, t->ops[i].duration_ns);
        if (e > end) end = e;
    }
    for (size_t i = 0; i < t->n_memory; i++)
        if (t->memory[i].timestamp_ns > end) end = t->memory[i].timestamp_ns;
    for (size_t i = 0; i < t->n_device_memory; i++)
        if (t->device_memory[i].timestamp_ns > end) end = t->device_memory[i].timestamp_ns;
    return end;
}

bool cg_rule_terminal_precedes_evidence(const cg_trace *t, uint64_t *latest) {
    *latest = cg_rule_latest_host_evidence_end(t);
    return t->terminal.timestamp_ns < *latest;
}

bool cg_rule_tensor_stats_valid(const cg_tensor_stats *s) {
    if (cg_str_blank(s->label)) return false;
    uint64_t prod = 1;
    for (size_t i = 0; i < s->shape.n; i++) {
        uint64_t d = s->shape.dims[i];
        if (d && prod > UINT64_MAX / d) return false; /* checked_mul overflow */
        prod *= d;
    }
    return prod == s->elements && s->non_finite <= s->elements && isfinite(s->rms) && s->rms >= 0 &&
           isfinite(s->abs_max) && s->abs_max >= 0 && isfinite(s->mean);
}
