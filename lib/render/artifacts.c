/* artifacts.c — evidence.json, report.md and viewer.html of a bundle. */
#include "render/artifacts.h"

#include "analysis/evidence.h"
#include "render/payload.h"
#include "render/report.h"
#include "render/viewer_html.h"

cg_jv *cg_evidence_build_json(cg_arena *a, const char *trace_path, const char *nsight_dir, cg_error *err) {
    return cg_evidence_build_file(a, trace_path, nsight_dir, err);
}

int cg_render_bundle_artifacts(const char *trace_path, const char *nsight_dir, cg_buf *evidence_json,
                               cg_buf *report_md, cg_buf *viewer_html, cg_error *err) {
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    int rc = -1;
    cg_jv *packet = cg_evidence_build_file(&a, trace_path, nsight_dir, err);
    if (!packet) goto done;
    if (evidence_json) {
        cg_json_write(evidence_json, packet, true);
        cg_buf_putc(evidence_json, '\n');
    }
    if (report_md && cg_report_render(packet, report_md, err) != 0) goto done;
    if (viewer_html && cg_viewer_render_html(cg_viewer_payload(&a, packet), viewer_html, err) != 0) goto done;
    rc = 0;
done:
    cg_arena_free(&a);
    return rc;
}
