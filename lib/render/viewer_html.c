/* viewer_html.c — writes the offline viewer/5 HTML document (see viewer_html.h). */
#include "render/viewer_html.h"

#include <ctype.h>
#include <string.h>

/* Inline order matters: dagre first, then the viewer modules (each attaches to
 * window.CG), app.js last (it boots from the embedded payload). */
static const char *const k_scripts[] = {
    "vendor/dagre.min.js", "viewer/util.js", "viewer/evidence.js", "viewer/graph.js",
    "viewer/trace.js",     "viewer/costs.js", "viewer/memory.js",  "viewer/gpu.js",
    "viewer/app.js",
};
static const char *const k_styles[] = {"viewer/viewer.css"};

static const char k_csp[] =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; base-uri 'none'; form-action 'none'";

/* Appends the compact JSON of v, escaping <, >, U+2028 (E2 80 A8) and U+2029
 * (E2 80 A9). `<` and `>` can only occur inside JSON strings, where \u003c and
 * \u003e denote the same characters; the two separators are likewise only
 * inside strings. */
void cg_viewer_write_escaped_json(cg_buf *out, const cg_jv *v) {
    cg_buf tmp = CG_BUF_INIT;
    cg_json_write(&tmp, v, false);
    cg_buf_reserve(out, tmp.len + tmp.len / 8 + 16);
    size_t start = 0;
    for (size_t i = 0; i < tmp.len; i++) {
        const unsigned char c = (unsigned char)tmp.data[i];
        const char *rep = NULL;
        size_t skip = 1;
        if (c == '<') {
            rep = "\\u003c";
        } else if (c == '>') {
            rep = "\\u003e";
        } else if (c == 0xE2 && i + 2 < tmp.len && (unsigned char)tmp.data[i + 1] == 0x80 &&
                   ((unsigned char)tmp.data[i + 2] == 0xA8 || (unsigned char)tmp.data[i + 2] == 0xA9)) {
            rep = (unsigned char)tmp.data[i + 2] == 0xA8 ? "\\u2028" : "\\u2029";
            skip = 3;
        }
        if (!rep) continue;
        cg_buf_append(out, tmp.data + start, i - start);
        cg_buf_puts(out, rep);
        i += skip - 1;
        start = i + 1;
    }
    cg_buf_append(out, tmp.data + start, tmp.len - start);
    cg_buf_free(&tmp);
}

static bool starts_with_ci(const char *p, size_t avail, const char *lit) {
    size_t n = strlen(lit);
    if (avail < n) return false;
    for (size_t k = 0; k < n; k++)
        if (tolower((unsigned char)p[k]) != (unsigned char)lit[k]) return false;
    return true;
}

/* Appends an asset inside a <script> or <style> element. A closing-tag
 * sequence ("</script", "</style") or "<!--" inside the asset would end or
 * confuse the raw-text element, so "</" becomes "<\/" and "<!--" becomes
 * "<\!--" (both mean the same inside JS strings/regexps and CSS strings). */
static void append_raw_text(cg_buf *out, const char *data, size_t len) {
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '<') continue;
        const char *rep = NULL;
        if (starts_with_ci(data + i, len - i, "</script") || starts_with_ci(data + i, len - i, "</style"))
            rep = "<\\/";
        else if (starts_with_ci(data + i, len - i, "<!--"))
            rep = "<\\!";
        if (!rep) continue;
        cg_buf_append(out, data + start, i - start);
        cg_buf_puts(out, rep);
        i += 1; /* skip '<' and the '/' or '!' that rep re-emits */
        start = i + 1;
    }
    cg_buf_append(out, data + start, len - start);
}

static void append_html_text(cg_buf *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': cg_buf_puts(out, "&amp;"); break;
        case '<': cg_buf_puts(out, "&lt;"); break;
        case '>': cg_buf_puts(out, "&gt;"); break;
        case '"': cg_buf_puts(out, "&quot;"); break;
        case '\'': cg_buf_puts(out, "&#39;"); break;
        default: cg_buf_putc(out, *s);
        }
    }
}

static int append_asset(cg_buf *out, const char *path, cg_error *err) {
    size_t len = 0;
    const char *data = cg_embedded_asset(path, &len);
    if (!data) return cg_err_set(err, CG_ESTATE, "viewer asset %s is not embedded in this build", path);
    append_raw_text(out, data, len);
    if (len == 0 || data[len - 1] != '\n') cg_buf_putc(out, '\n');
    return 0;
}

int cg_viewer_render_html(const cg_jv *payload, cg_buf *out, cg_error *err) {
    if (!payload || payload->type != CG_JOBJ)
        return cg_err_set(err, CG_EINVAL, "viewer payload must be a JSON object");
    const char *entrypoint = cg_jv_as_str(cg_jv_get(cg_jv_get(payload, "summary"), "entrypoint"));

    cg_buf_puts(out, "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    cg_buf_printf(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n", k_csp);
    cg_buf_puts(out, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    cg_buf_puts(out, "<meta name=\"referrer\" content=\"no-referrer\">\n");
    cg_buf_puts(out, "<meta name=\"generator\" content=\"" CG_VIEWER_SCHEMA "\">\n<title>");
    if (entrypoint && *entrypoint) {
        append_html_text(out, entrypoint);
        cg_buf_puts(out, " \xE2\x80\x94 ");
    }
    cg_buf_puts(out, "candle-graph viewer</title>\n");
    for (size_t i = 0; i < sizeof k_styles / sizeof k_styles[0]; i++) {
        cg_buf_puts(out, "<style>\n");
        if (append_asset(out, k_styles[i], err) != 0) return -1;
        cg_buf_puts(out, "</style>\n");
    }
    cg_buf_puts(out, "</head>\n<body>\n<div id=\"cg-app\" class=\"cg-app\">"
                     "<noscript>This viewer needs JavaScript to display the embedded evidence.</noscript>"
                     "</div>\n<script id=\"cg-payload\" type=\"application/json\">");
    cg_viewer_write_escaped_json(out, payload);
    cg_buf_puts(out, "</script>\n");
    for (size_t i = 0; i < sizeof k_scripts / sizeof k_scripts[0]; i++) {
        cg_buf_puts(out, "<script>\n");
        if (append_asset(out, k_scripts[i], err) != 0) return -1;
        cg_buf_puts(out, "</script>\n");
    }
    cg_buf_puts(out, "</body>\n</html>\n");
    return 0;
}
