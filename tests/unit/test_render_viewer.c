/* Unit tests for lib/render/viewer_html: the offline viewer/5 document embeds
 * the payload with the spec's escaping, round-trips it exactly, cannot be
 * broken out of by payload strings, and references no network address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/fs.h"
#include "base/json.h"
#include "render/viewer_html.h"

static const char k_open[] = "<script id=\"cg-payload\" type=\"application/json\">";

static cg_jv *load_fixture(cg_arena *a, const char *name) {
    const char *dir = getenv("CG_FIXTURES");
    char path[4096];
    snprintf(path, sizeof path, "%s/viewer/%s", dir ? dir : "fixtures", name);
    cg_error err;
    size_t len = 0;
    char *text = cg_read_file(path, 0, &len, &err);
    if (!text) fail_msg("cannot read %s: %s", path, err.msg);
    cg_jv *v = cg_json_parse(a, text, len, NULL, &err);
    free(text);
    if (!v) fail_msg("cannot parse %s: %s", path, err.msg);
    return v;
}

static void render(const cg_jv *payload, cg_buf *out) {
    cg_error err;
    cg_err_clear(&err);
    int rc = cg_viewer_render_html(payload, out, &err);
    if (rc != 0) fail_msg("render failed: %s", err.msg);
}

/* Returns the payload script body (a view into doc) and its length. */
static const char *payload_text(const cg_buf *doc, size_t *len) {
    const char *start = strstr(doc->data, k_open);
    assert_non_null(start);
    assert_null(strstr(start + 1, k_open)); /* exactly one payload element */
    start += sizeof k_open - 1;
    const char *end = strstr(start, "</script");
    assert_non_null(end);
    *len = (size_t)(end - start);
    return start;
}

static bool mem_contains(const char *p, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, needle, k) == 0) return true;
    return false;
}

static bool contains_ci(const char *hay, const char *needle) {
    size_t k = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, k) == 0) return true;
    return false;
}

/* Payload text parses (JSON.parse semantics undo the \u escapes) to a value
 * equal to the input; it contains no raw <, >, U+2028 or U+2029. */
static void assert_roundtrip(const cg_jv *payload, const cg_buf *doc) {
    size_t len = 0;
    const char *text = payload_text(doc, &len);
    assert_false(memchr(text, '<', len));
    assert_false(memchr(text, '>', len));
    assert_false(mem_contains(text, len, "\xE2\x80\xA8"));
    assert_false(mem_contains(text, len, "\xE2\x80\xA9"));
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_jv *back = cg_json_parse(&a, text, len, NULL, &err);
    if (!back) fail_msg("embedded payload does not parse: %s", err.msg);
    assert_true(cg_jv_equal(payload, back));
    /* Un-escaping the four sequences by hand gives exactly the compact JSON. */
    cg_buf plain = CG_BUF_INIT, want = CG_BUF_INIT;
    for (size_t i = 0; i < len; i++) {
        if (i + 6 <= len && text[i] == '\\' && text[i + 1] == 'u') {
            const char *rep = NULL;
            if (memcmp(text + i, "\\u003c", 6) == 0) rep = "<";
            else if (memcmp(text + i, "\\u003e", 6) == 0) rep = ">";
            else if (memcmp(text + i, "\\u2028", 6) == 0) rep = "\xE2\x80\xA8";
            else if (memcmp(text + i, "\\u2029", 6) == 0) rep = "\xE2\x80\xA9";
            if (rep) {
                cg_buf_puts(&plain, rep);
                i += 5;
                continue;
            }
        }
        if (text[i] == '\\' && i + 1 < len) { /* keep other escapes (e.g. \\u003c written as \\\\u003c) */
            cg_buf_append(&plain, text + i, 2);
            i++;
            continue;
        }
        cg_buf_putc(&plain, text[i]);
    }
    cg_json_write(&want, payload, false);
    assert_int_equal(plain.len, want.len);
    assert_memory_equal(plain.data, want.data, want.len);
    cg_buf_free(&plain);
    cg_buf_free(&want);
    cg_arena_free(&a);
}

/* No http(s):// anywhere; every src=/href=/action= value is a fragment, data: or
 * blob: URL (attribute or script assignment alike). */
static void assert_offline(const cg_buf *doc) {
    assert_false(contains_ci(doc->data, "http://"));
    assert_false(contains_ci(doc->data, "https://"));
    assert_false(contains_ci(doc->data, "@import"));
    static const char *const attrs[] = {"src", "href", "action", "srcset", "xlink:href"};
    for (size_t k = 0; k < sizeof attrs / sizeof attrs[0]; k++) {
        size_t n = strlen(attrs[k]);
        for (const char *p = doc->data; *p; p++) {
            if (strncasecmp(p, attrs[k], n) != 0) continue;
            if (p > doc->data && (isalnum((unsigned char)p[-1]) || p[-1] == '-' || p[-1] == '_' || p[-1] == ':')) continue;
            const char *q = p + n;
            while (*q == ' ') q++;
            if (*q != '=') continue;
            q++;
            while (*q == ' ') q++;
            if (*q == '"' || *q == '\'') q++;
            /* the viewer's SVG export assigns a blob: URL it creates itself */
            bool ok = *q == '#' || strncasecmp(q, "data:", 5) == 0 || strncasecmp(q, "blob:", 5) == 0 ||
                      strncmp(q, "URL.createObjectURL(", 20) == 0;
            if (!ok) fail_msg("document has an external-looking %s= reference: %.40s", attrs[k], p);
        }
    }
    assert_false(contains_ci(doc->data, "url(//"));
}

static void test_sample_payload_roundtrip(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *payload = load_fixture(&a, "sample_payload.json");
    cg_buf doc = CG_BUF_INIT;
    render(payload, &doc);
    assert_true(strncmp(doc.data, "<!doctype html>\n", 16) == 0);
    assert_non_null(strstr(doc.data, "<meta charset=\"utf-8\">"));
    assert_non_null(strstr(doc.data, "<title>toy::train::update \xE2\x80\x94 candle-graph viewer</title>"));
    assert_non_null(strstr(doc.data, "<style>"));
    assert_non_null(strstr(doc.data, "var dagre="));
    assert_non_null(strstr(doc.data, "Content-Security-Policy"));
    assert_true(strstr(doc.data, "</html>\n") == doc.data + doc.len - 8);
    /* the sample has C++ kernel names with < and > */
    size_t len = 0;
    const char *text = payload_text(&doc, &len);
    assert_true(mem_contains(text, len, "void gelu_kernel\\u003cfloat\\u003e(float*"));
    assert_roundtrip(payload, &doc);
    assert_offline(&doc);
    cg_buf_free(&doc);
    cg_arena_free(&a);
}

static void test_failed_payload_roundtrip(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *payload = load_fixture(&a, "failed_payload.json");
    cg_buf doc = CG_BUF_INIT;
    render(payload, &doc);
    assert_roundtrip(payload, &doc);
    assert_offline(&doc);
    /* its tags carry "<script>alert('x')</script>" and U+2028 */
    size_t len = 0;
    const char *text = payload_text(&doc, &len);
    assert_true(mem_contains(text, len, "\\u003cscript\\u003ealert('x')\\u003c/script\\u003e \\u2028 must"));
    cg_buf_free(&doc);
    cg_arena_free(&a);
}

static void test_script_breakout_is_escaped(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *payload = cg_jv_obj(&a);
    cg_jv_obj_put(&a, payload, "schema", cg_jv_str(&a, CG_VIEWER_SCHEMA));
    cg_jv *summary = cg_jv_obj(&a);
    cg_jv_obj_put(&a, summary, "entrypoint", cg_jv_str(&a, "evil</title><script>alert(1)</script>"));
    cg_jv_obj_put(&a, payload, "summary", summary);
    cg_jv_obj_put(&a, payload, "a", cg_jv_str(&a, "</script><script>alert(1)</script>"));
    cg_jv_obj_put(&a, payload, "b", cg_jv_str(&a, "</SCRIPT ><!-- <script>"));
    cg_jv_obj_put(&a, payload, "c", cg_jv_str(&a, "line\xE2\x80\xA8sep\xE2\x80\xA9para"));
    cg_jv_obj_put(&a, payload, "d", cg_jv_str(&a, "literal \\u003c stays"));
    cg_jv_obj_put(&a, payload, "k<ey>", cg_jv_u64(&a, 1));
    cg_buf doc = CG_BUF_INIT;
    render(payload, &doc);
    assert_roundtrip(payload, &doc);
    size_t len = 0;
    const char *text = payload_text(&doc, &len);
    assert_true(mem_contains(text, len, "\"a\":\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\""));
    assert_true(mem_contains(text, len, "\"c\":\"line\\u2028sep\\u2029para\""));
    assert_true(mem_contains(text, len, "\"k\\u003cey\\u003e\":1"));
    /* the payload element is closed by the renderer, right after the JSON */
    assert_int_equal(text[len - 1], '}');
    assert_true(strncmp(text + len, "</script>\n<script>\n", 19) == 0);
    /* the title text is HTML-escaped */
    assert_non_null(strstr(doc.data, "<title>evil&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; \xE2\x80\x94"));
    /* only the renderer's own elements: 1 payload + 9 inline scripts */
    size_t scripts = 0;
    for (const char *p = doc.data; (p = strstr(p, "<script")) != NULL; p++) scripts++;
    assert_int_equal(scripts, 10);
    size_t closes = 0;
    for (const char *p = doc.data; *p; p++)
        if (strncasecmp(p, "</script", 8) == 0) closes++;
    assert_int_equal(closes, 10);
    cg_buf_free(&doc);
    cg_arena_free(&a);
}

static void test_escaped_json_writer(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_jv *arr = cg_jv_arr(&a);
    cg_jv_arr_push(&a, arr, cg_jv_str(&a, "a<b>c\xE2\x80\xA8\xE2\x80\xA9\xE2\x80\xA7\xC3\xA9"));
    cg_jv_arr_push(&a, arr, cg_jv_f64(&a, 0.5));
    cg_buf out = CG_BUF_INIT;
    cg_viewer_write_escaped_json(&out, arr);
    /* U+2027 and other non-ASCII stay raw UTF-8, like serde_json */
    assert_string_equal(out.data, "[\"a\\u003cb\\u003ec\\u2028\\u2029\xE2\x80\xA7\xC3\xA9\",0.5]");
    cg_buf_free(&out);
    cg_arena_free(&a);
}

static void test_rejects_non_object(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_buf doc = CG_BUF_INIT;
    cg_error err;
    cg_err_clear(&err);
    assert_int_equal(cg_viewer_render_html(cg_jv_arr(&a), &doc, &err), -1);
    assert_int_equal(err.code, CG_EINVAL);
    assert_string_equal(err.msg, "viewer payload must be a JSON object");
    assert_int_equal(cg_viewer_render_html(NULL, &doc, &err), -1);
    cg_buf_free(&doc);
    cg_arena_free(&a);
}

static void test_assets_embedded_and_safe(void **st) {
    (void)st;
    static const char *const names[] = {"vendor/dagre.min.js", "viewer/util.js", "viewer/evidence.js",
                                        "viewer/graph.js", "viewer/trace.js", "viewer/costs.js",
                                        "viewer/memory.js", "viewer/gpu.js", "viewer/app.js",
                                        "viewer/viewer.css"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = 0;
        const char *data = cg_embedded_asset(names[i], &len);
        if (!data) fail_msg("asset %s is not embedded", names[i]);
        assert_true(len > 0);
        assert_int_equal(data[len], '\0');
        assert_false(contains_ci(data, "http://"));
        assert_false(contains_ci(data, "https://"));
    }
    assert_null(cg_embedded_asset("viewer/missing.js", NULL));
    /* the viewer's own code uses no ES module syntax: it runs as classic inline scripts */
    size_t len = 0;
    const char *app = cg_embedded_asset("viewer/app.js", &len);
    assert_null(strstr(app, "\nimport "));
    assert_null(strstr(app, "\nexport "));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_payload_roundtrip), cmocka_unit_test(test_failed_payload_roundtrip),
        cmocka_unit_test(test_script_breakout_is_escaped), cmocka_unit_test(test_escaped_json_writer),
        cmocka_unit_test(test_rejects_non_object),     cmocka_unit_test(test_assets_embedded_and_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
