/* report.c — report.md rendering. */
#include "render/report.h"

#include <string.h>

#include "analysis/capability.h"

static const char *const row_titles[CG_CAPK_COUNT] = {
    "Structural trace", "Outer wall time", "Measured-scope host time", "Nested device time", "Operations",
    "Tensors",          "Gradients",       "Logical memory",           "Physical memory",    "GPU correlation",
    "Provenance binding"};

/* Markdown table cell: escape '|' and fold newlines. */
static void cell(cg_buf *out, const char *s) {
    for (; s && *s; s++) {
        if (*s == '|') cg_buf_puts(out, "\\|");
        else if (*s == '\n' || *s == '\r') cg_buf_putc(out, ' ');
        else cg_buf_putc(out, *s);
    }
}

static const char *s_or(const cg_jv *o, const char *k, const char *def) {
    const char *s = cg_jv_as_str(cg_jv_get(o, k));
    return s ? s : def;
}

int cg_report_render(const cg_jv *p, cg_buf *out, cg_error *err) {
    cg_jv *prov = cg_jv_get(p, "provenance"), *health = cg_jv_get(p, "health"), *caps = cg_jv_get(p, "capabilities");
    if (!prov || !health || !caps) return cg_err_set(err, CG_EINVAL, "evidence packet lacks provenance, health or capabilities");
    cg_jv *valid = cg_jv_get(health, "structurally_valid"), *complete = cg_jv_get(health, "capture_complete");
    bool is_valid = valid && valid->type == CG_JBOOL && valid->u.b;
    bool is_complete = complete && complete->type == CG_JBOOL && complete->u.b;
    const char *status = !is_valid ? "STRUCTURALLY INVALID" : !is_complete ? "FAILED CAPTURE" : "COMPLETE CAPTURE";

    cg_buf_puts(out, "# candle-graph evidence report\n\n");
    cg_buf_printf(out, "**Status: %s**\n\n", status);
    cg_buf_puts(out, "| Field | Value |\n| --- | --- |\n");
    static const char *const fields[][2] = {
        {"Entrypoint", "entrypoint"}, {"Run", "run_id"}, {"Phase", "phase"}, {"Device", "device"}};
    for (size_t i = 0; i < 4; i++) {
        cg_buf_printf(out, "| %s | ", fields[i][0]);
        cell(out, s_or(prov, fields[i][1], ""));
        cg_buf_puts(out, " |\n");
    }
    cg_buf_puts(out, "\n## Capability matrix\n\n| Capability | Level | Source | Reason |\n| --- | --- | --- | --- |\n");
    for (int k = 0; k < CG_CAPK_COUNT; k++) {
        cg_jv *st = cg_jv_get(caps, cg_cap_field_name((cg_cap_kind)k));
        cg_buf_printf(out, "| %s | ", row_titles[k]);
        cell(out, s_or(st, "level", "unavailable"));
        cg_buf_puts(out, " | ");
        cell(out, s_or(st, "source", "none"));
        cg_buf_puts(out, " | ");
        cell(out, s_or(st, "reason", "capability was not recorded by this evidence schema"));
        cg_buf_puts(out, " |\n");
    }
    cg_buf_puts(out, "\n## Qualified findings\n\n");
    cg_jv *findings = cg_jv_get(p, "findings");
    if (!cg_jv_len(findings)) cg_buf_puts(out, "No qualified findings.\n");
    for (size_t i = 0; i < cg_jv_len(findings); i++) {
        cg_jv *f = cg_jv_at(findings, i);
        cg_buf_printf(out, "- **%s** (%s", s_or(f, "code", ""), s_or(f, "qualification", ""));
        cg_jv *req = cg_jv_get(f, "requires");
        if (cg_jv_len(req)) {
            cg_buf_puts(out, "; requires ");
            for (size_t j = 0; j < cg_jv_len(req); j++)
                cg_buf_printf(out, "%s%s", j ? ", " : "", cg_jv_as_str(cg_jv_at(req, j)) ? cg_jv_as_str(cg_jv_at(req, j)) : "");
        }
        cg_buf_printf(out, "): %s\n", s_or(f, "summary", ""));
    }
    cg_buf_puts(out, "\n## Gaps\n\n");
    cg_jv *gaps = cg_jv_get(p, "gaps");
    if (!cg_jv_len(gaps)) cg_buf_puts(out, "No gaps.\n");
    for (size_t i = 0; i < cg_jv_len(gaps); i++) {
        const char *g = cg_jv_as_str(cg_jv_at(gaps, i));
        cg_buf_puts(out, "- ");
        cell(out, g ? g : "");
        cg_buf_putc(out, '\n');
    }
    return 0;
}
