/* payload.h — the candle-graph/viewer/5 payload (spec §12), derived from an
 * evidence packet JSON (fresh or read from a bundle's evidence.json), so the
 * offline viewer and the web app show exactly what the packet says.
 * Everything is allocated in the arena; the packet is only read (the payload
 * shares sub-values with it, so the packet must outlive the payload). */
#ifndef CG_RENDER_PAYLOAD_H
#define CG_RENDER_PAYLOAD_H

#include "base/json.h"

cg_jv *cg_viewer_payload(cg_arena *a, const cg_jv *packet);

#endif
