/* report.h — report.md: the human summary of an evidence packet, in the crate's
 * layout (EvidencePacket::markdown): status, run identity, the 11-row capability matrix,
 * qualified findings and gaps. Rendered from the packet JSON, so a stored
 * evidence.json renders the same as a freshly built one. */
#ifndef CG_RENDER_REPORT_H
#define CG_RENDER_REPORT_H

#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"

/* Appends the Markdown to out. Fails only if the packet lacks required fields. */
int cg_report_render(const cg_jv *packet, cg_buf *out, cg_error *err);

#endif
