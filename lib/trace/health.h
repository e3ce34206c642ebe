/* health.h — structural health of a trace (spec §5).
 *
 * cg_health_analyze never fails: every problem becomes an issue. The result
 * owns its issues and messages (its own arena); free with cg_health_free.
 * structurally_valid = no error-severity issue; capture_complete = terminal
 * outcome is complete. Issue order is deterministic (the order of the checks in
 * health.c, each check in document order). */
#ifndef CG_TRACE_HEALTH_H
#define CG_TRACE_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/trace.h"

typedef enum cg_severity { CG_SEV_ERROR = 0, CG_SEV_WARNING } cg_severity;
const char *cg_severity_name(cg_severity s); /* "error" | "warning" */

typedef struct cg_health_issue {
    cg_severity severity;
    const char *code;    /* stable snake_case code from the spec table */
    const char *message; /* human text */
} cg_health_issue;

/* EvidenceCoverage counts (JSON field order as listed). */
typedef struct cg_evidence_coverage {
    uint64_t spans, closed_spans, root_spans, measured_spans, operations, tensors,
        memory_events, device_memory_samples, device_intervals, gradients, call_edges,
        data_edges, forward_spans, backward_spans, optimizer_spans;
} cg_evidence_coverage;

typedef struct cg_health {
    cg_arena arena;
    bool structurally_valid;
    bool capture_complete;
    cg_health_issue *issues;
    size_t n_issues;
    cg_evidence_coverage coverage;
} cg_health;

cg_health *cg_health_analyze(const cg_trace *t);
void cg_health_free(cg_health *h);
/* {structurally_valid, capture_complete, issues: [{severity, code, message}], coverage} */
cg_jv *cg_health_to_json(cg_arena *a, const cg_health *h);
cg_jv *cg_coverage_to_json(cg_arena *a, const cg_evidence_coverage *c);
/* true if any issue has this code */
bool cg_health_has(const cg_health *h, const char *code);

#endif
