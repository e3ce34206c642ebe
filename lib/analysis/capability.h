/* capability.h — capability-qualified evidence (spec §9 "Capabilities"):
 * the 11 capability states of an evidence packet and the rules that assess them.
 *
 * Every state's strings are static or live in the arena given to
 * cg_capabilities_assess; the struct itself is plain data. */
#ifndef CG_ANALYSIS_CAPABILITY_H
#define CG_ANALYSIS_CAPABILITY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/json.h"
#include "nsight/nsight.h"
#include "trace/health.h"
#include "trace/trace.h"

typedef enum cg_cap_level {
    CG_CAP_UNAVAILABLE = 0,
    CG_CAP_PARTIAL,
    CG_CAP_COMPLETE,
    CG_CAP_INVALID
} cg_cap_level;

typedef enum cg_cap_kind {
    CG_CAPK_STRUCTURAL_TRACE = 0,
    CG_CAPK_OUTER_WALL_TIME,
    CG_CAPK_NESTED_HOST_TIME,
    CG_CAPK_NESTED_DEVICE_TIME,
    CG_CAPK_OPERATIONS,
    CG_CAPK_TENSORS,
    CG_CAPK_GRADIENTS,
    CG_CAPK_LOGICAL_MEMORY,
    CG_CAPK_PHYSICAL_MEMORY,
    CG_CAPK_GPU_CORRELATION,
    CG_CAPK_PROVENANCE_BINDING,
    CG_CAPK_COUNT
} cg_cap_kind;

typedef struct cg_cap_state {
    cg_cap_level level;
    const char *source;
    const char *reason;
} cg_cap_state;

/* Indexed by cg_cap_kind. */
typedef struct cg_capabilities {
    cg_cap_state s[CG_CAPK_COUNT];
} cg_capabilities;

const char *cg_cap_level_name(cg_cap_level l);    /* unavailable|partial|complete|invalid */
int cg_cap_level_parse(const char *s);
const char *cg_cap_kind_name(cg_cap_kind k);      /* CapabilityKind: structural_trace, …, operations, … */
const char *cg_cap_field_name(cg_cap_kind k);     /* EvidenceCapabilities field: …, operation_coverage, … */
/* Weakest of two levels: invalid < unavailable < partial < complete. */
cg_cap_level cg_cap_weakest(cg_cap_level a, cg_cap_level b);
/* A capability is "available" when its level is partial or complete. */
static inline bool cg_cap_available(cg_cap_level l) { return l == CG_CAP_PARTIAL || l == CG_CAP_COMPLETE; }

/* Assesses all 11 capabilities from the trace, its health, the declared device
 * coverage of the timing plane and the Nsight evidence (already bound). */
void cg_capabilities_assess(cg_arena *a, const cg_trace *t, const cg_health *h, cg_coverage device_coverage,
                            const cg_nsight_evidence *gpu, cg_capabilities *out);

/* EvidenceCapabilities JSON: {structural_trace: {level, source, reason}, …} */
cg_jv *cg_capabilities_to_json(cg_arena *a, const cg_capabilities *c);
cg_jv *cg_cap_state_to_json(cg_arena *a, const cg_cap_state *s);
/* Reads an EvidenceCapabilities object; missing fields get the default state
 * (unavailable, source "none", "capability was not recorded by this evidence schema"). */
int cg_capabilities_from_json(cg_arena *a, const cg_jv *v, cg_capabilities *out, cg_error *err);

#endif
