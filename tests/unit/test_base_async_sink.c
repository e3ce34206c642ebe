/* base/async_sink: chunks reach the inner sink complete and in order whatever
 * their sizes; a failing inner sink stops delivery, and its result comes back
 * from later puts and from finish. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/async_sink.h"
#include "base/buf.h"

typedef struct collect {
    cg_buf got;
    size_t calls, fail_at; /* fail_at: 1-based call that fails (0: never) */
} collect;

static int collect_sink(void *ctx, const char *data, size_t len) {
    collect *c = ctx;
    c->calls++;
    if (c->fail_at && c->calls == c->fail_at) return 7;
    cg_buf_append(&c->got, data, len);
    return 0;
}

static void test_order_and_bytes(void **st) {
    (void)st;
    collect c = {CG_BUF_INIT, 0, 0};
    cg_async_sink *s = cg_async_sink_start(collect_sink, &c);
    assert_non_null(s);
    cg_buf want = CG_BUF_INIT;
    char *chunk = malloc(1 << 18);
    assert_non_null(chunk);
    for (size_t i = 0; i < 400; i++) {
        size_t n = (i * 7919) % (1 << 18);
        for (size_t k = 0; k < n; k++) chunk[k] = (char)('a' + (i + k) % 26);
        cg_buf_append(&want, chunk, n);
        assert_int_equal(cg_async_sink_put(s, chunk, n), 0);
        memset(chunk, '#', n); /* the sink copied it: reusing the buffer is safe */
    }
    assert_int_equal(cg_async_sink_finish(s), 0);
    assert_int_equal(c.calls, 400);
    assert_int_equal(c.got.len, want.len);
    assert_memory_equal(c.got.data, want.data, want.len);
    free(chunk);
    cg_buf_free(&want);
    cg_buf_free(&c.got);
}

static void test_failure_stops_delivery(void **st) {
    (void)st;
    collect c = {CG_BUF_INIT, 0, 5};
    cg_async_sink *s = cg_async_sink_start(collect_sink, &c);
    assert_non_null(s);
    int last = 0;
    for (int i = 0; i < 100 && !last; i++) last = cg_async_sink_put(s, "0123456789", 10);
    assert_int_equal(last, 7); /* a later put saw the failure */
    assert_int_equal(cg_async_sink_finish(s), 7);
    assert_int_equal(c.calls, 5);     /* nothing was delivered after the failing call */
    assert_int_equal(c.got.len, 40); /* the four chunks before it */
    cg_buf_free(&c.got);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_bytes),
        cmocka_unit_test(test_failure_stops_delivery),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
