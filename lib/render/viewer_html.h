/* viewer_html.h — the offline single-file viewer (candle-graph/viewer/5, spec §12).
 *
 * cg_viewer_render_html writes one complete, self-contained HTML document into
 * `out`: doctype, charset, title, a Content-Security-Policy that forbids every
 * network fetch, the viewer CSS inline, the payload as
 *   <script id="cg-payload" type="application/json">…</script>
 * (compact JSON from cg_json_write with `<`, `>`, U+2028 and U+2029 escaped as
 * \u003c, \u003e, \u2028, \u2029 so no payload string can close the element),
 * then the vendored dagre bundle and the viewer scripts as inline classic
 * <script> blocks. The JS/CSS come from web/viewer/ and web/vendor/, embedded
 * into the library at build time (cg_embedded_asset). The document references
 * no URL of any kind.
 *
 * Ownership: the caller owns `out` (appended to; cg_buf_free). The payload is
 * only read. It is built elsewhere (render/artifacts) and must be a JSON object
 * with the viewer/5 fields; this function checks only that it is an object.
 * Errors: CG_EINVAL when payload is not an object; CG_ESTATE when an embedded
 * asset is missing from the build. On error `out` may hold a partial document.
 * Limits: none beyond memory (the payload is written once). */
#ifndef CG_RENDER_VIEWER_HTML_H
#define CG_RENDER_VIEWER_HTML_H

#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"

/* Schema string of the embedded payload. */
#define CG_VIEWER_SCHEMA "candle-graph/viewer/5"

/* Generated at build time by cmake/embed.cmake from the .js and .css files of
 * web/viewer/ and the .js files of web/vendor/. Returns the NUL-terminated bytes of the asset whose path is
 * relative to web/ (e.g. "viewer/app.js") and stores its length in *len, or
 * returns NULL when no such asset was embedded. The data is static. */
const char *cg_embedded_asset(const char *path, size_t *len);

int cg_viewer_render_html(const cg_jv *payload, cg_buf *out, cg_error *err);

/* Appends the compact JSON of v with the viewer escaping applied (`<`, `>`,
 * U+2028, U+2029 → \u003c, \u003e, \u2028, \u2029). Exposed for the server,
 * which embeds payloads the same way. */
void cg_viewer_write_escaped_json(cg_buf *out, const cg_jv *v);

#endif
