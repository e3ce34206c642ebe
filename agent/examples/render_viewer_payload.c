/* render_viewer_payload — renders a viewer/5 payload JSON file into the offline
 * viewer HTML. Used by the browser tests (tests/integration/test_viewer_browser.sh)
 * until `candle-graph view` renders from traces.
 *
 * usage: render_viewer_payload PAYLOAD.json OUT.html
 * Exit 0 when OUT was written; 2 on usage errors; 1 on any other error. */
#include <stdio.h>
#include <stdlib.h>

#include "base/fs.h"
#include "base/json.h"
#include "render/viewer_html.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: render_viewer_payload PAYLOAD.json OUT.html\n");
        return 2;
    }
    cg_error err;
    cg_err_clear(&err);
    size_t len = 0;
    char *text = cg_read_file(argv[1], 256u << 20, &len, &err);
    if (!text) {
        fprintf(stderr, "render_viewer_payload: %s: %s\n", argv[1], err.msg);
        return 1;
    }
    cg_arena arena;
    cg_arena_init(&arena, 0);
    cg_buf html = CG_BUF_INIT;
    int rc = 1;
    cg_jv *payload = cg_json_parse(&arena, text, len, NULL, &err);
    if (!payload) {
        fprintf(stderr, "render_viewer_payload: %s: %s\n", argv[1], err.msg);
    } else if (cg_viewer_render_html(payload, &html, &err) != 0) {
        fprintf(stderr, "render_viewer_payload: %s\n", err.msg);
    } else if (cg_write_file(argv[2], html.data, html.len, false, &err) != 0) {
        fprintf(stderr, "render_viewer_payload: %s: %s\n", argv[2], err.msg);
    } else {
        rc = 0;
    }
    cg_buf_free(&html);
    cg_arena_free(&arena);
    free(text);
    return rc;
}
