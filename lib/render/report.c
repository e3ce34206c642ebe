/* report.c — report.md as the crate's EvidencePacket::markdown writes it
 * (src/evidence.rs at 4abcd63f): levels and capability kinds in their Rust
 * Debug spelling (`Complete`, `NestedHostTime`), reasons with '|' escaped,
 * findings and gaps as written. */
#include "render/report.h"

#include <ctype.h>
#include <string.h>

#include "analysis/capability.h"

static const char *const row_titles[CG_CAPK_COUNT] = {
    "Structural trace", "Outer wall time", "Measured-scope host time", "Nested device time", "Operations",
    "Tensors",          "Gradients",       "Logical memory",           "Physical memory",    "GPU correlation",
    "Provenance binding"};

static const char *s_or(const cg_jv *o, const char *k, const char *def) {
    const char *s = cg_jv_as_str(cg_jv_get(o, k));
    return s ? s : def;
}

/* snake_case wire name → the Rust variant name (Debug): gpu_correlation → GpuCorrelation. */
static void debug_name(cg_buf *out, const char *s) {
    bool upper = true;
    for (; *s; s++) {
        if (*s == '_') {
            upper = true;
            continue;
        }
        cg_buf_putc(out, upper ? (char)toupper((unsigned char)*s) : *s);
        upper = false;
    }
}

static void capability_rows(cg_buf *out, const cg_jv *caps) {
    for (int k = 0; k < CG_CAPK_COUNT; k++) {
        cg_jv *st = cg_jv_get(caps, cg_cap_field_name((cg_cap_kind)k));
        cg_buf_printf(out, "| %s | `", row_titles[k]);
        debug_name(out, s_or(st, "level", "unavailable"));
        cg_buf_printf(out, "` | `%s` | ", s_or(st, "source", "none"));
        for (const char *r = s_or(st, "reason", "capability was not recorded by this evidence schema"); *r; r++) {
            if (*r == '|') cg_buf_puts(out, "\\|");
            else cg_buf_putc(out, *r);
        }
        cg_buf_puts(out, " |\n");
    }
}

static void findings(cg_buf *out, const cg_jv *list) {
    if (!cg_jv_len(list)) {
        cg_buf_puts(out, "No findings met their evidence prerequisites.\n");
        return;
    }
    for (size_t i = 0; i < cg_jv_len(list); i++) {
        cg_jv *f = cg_jv_at(list, i), *req = cg_jv_get(f, "requires");
        cg_buf_puts(out, "- [`");
        debug_name(out, s_or(f, "qualification", ""));
        cg_buf_printf(out, "`] %s (requires ", s_or(f, "summary", ""));
        for (size_t j = 0; j < cg_jv_len(req); j++) {
            const char *r = cg_jv_as_str(cg_jv_at(req, j));
            cg_buf_puts(out, j ? ", `" : "`");
            debug_name(out, r ? r : "");
            cg_buf_putc(out, '`');
        }
        cg_buf_puts(out, ")\n");
    }
}

int cg_report_render(const cg_jv *p, cg_buf *out, cg_error *err) {
    cg_jv *prov = cg_jv_get(p, "provenance"), *health = cg_jv_get(p, "health"), *caps = cg_jv_get(p, "capabilities");
    if (!prov || !health || !caps) return cg_err_set(err, CG_EINVAL, "evidence packet lacks provenance, health or capabilities");
    cg_jv *valid = cg_jv_get(health, "structurally_valid"), *complete = cg_jv_get(health, "capture_complete");
    bool is_valid = valid && valid->type == CG_JBOOL && valid->u.b;
    bool is_complete = complete && complete->type == CG_JBOOL && complete->u.b;
    const char *status = !is_valid ? "STRUCTURALLY INVALID" : !is_complete ? "FAILED CAPTURE" : "COMPLETE CAPTURE";

    cg_buf_printf(out, "# candle-graph evidence\n\n- Status: **%s**\n", status);
    cg_buf_printf(out, "- Entrypoint: `%s`\n- Run: `%s`\n", s_or(prov, "entrypoint", ""), s_or(prov, "run_id", ""));
    cg_buf_printf(out, "- Phase: `%s`\n- Device: `%s`\n", s_or(prov, "phase", ""), s_or(prov, "device", ""));
    cg_buf_puts(out, "\n## Capability matrix\n\n| Capability | Level | Source | Reason |\n| --- | --- | --- | --- |\n");
    capability_rows(out, caps);
    cg_buf_puts(out, "\n## Qualified findings\n\n");
    findings(out, cg_jv_get(p, "findings"));
    cg_buf_puts(out, "\n## Evidence gaps\n\n");
    cg_jv *gaps = cg_jv_get(p, "gaps");
    if (!cg_jv_len(gaps)) cg_buf_puts(out, "No declared capability gaps.\n");
    for (size_t i = 0; i < cg_jv_len(gaps); i++) {
        const char *g = cg_jv_as_str(cg_jv_at(gaps, i));
        cg_buf_printf(out, "- %s\n", g ? g : "");
    }
    return 0;
}
