/* Unit tests for the trace reader's string and shape store (lib/trace/intern.h)
 * and the compact record layout it serves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/intern.h"
#include "trace/trace.h"

static void test_equal_strings_share_one_copy(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    tstore s;
    tstore_init(&s, &a, 0);
    const char *x = tstore_intern(&s, "TensorId(3)", 11);
    assert_string_equal(x, "TensorId(3)");
    assert_ptr_equal(tstore_intern(&s, "TensorId(3)xyz", 11), x); /* by length, not NUL */
    const char *y = tstore_intern(&s, "TensorId(3", 10);
    assert_string_equal(y, "TensorId(3");
    assert_ptr_not_equal(x, y);
    assert_ptr_equal(tstore_intern(&s, "", 0), tstore_intern(&s, "", 0));
    assert_string_equal(tstore_intern(&s, "", 0), "");
    tstore_done(&s);
    cg_arena_free(&a);
}

static void test_long_strings_are_copied(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    tstore s;
    tstore_init(&s, &a, 0);
    char big[97], huge[8192];
    memset(big, 'b', sizeof big);
    memset(huge, 'h', sizeof huge);
    const char *p = tstore_intern(&s, big, 96), *q = tstore_intern(&s, big, 96);
    assert_ptr_equal(p, q); /* 96 bytes: still interned */
    p = tstore_intern(&s, big, 97);
    q = tstore_intern(&s, big, 97);
    assert_ptr_not_equal(p, q);
    assert_int_equal(strlen(p), 97);
    assert_memory_equal(p, big, 97);
    p = tstore_copy(&s, huge, sizeof huge);
    assert_int_equal(strlen(p), sizeof huge);
    tstore_done(&s);
    cg_arena_free(&a);
}

/* Ids and strings over many pool chunks (a table id is chunk number + offset)
 * and several table growths keep their one copy. */
static void test_many_strings_across_chunks(void **st) {
    (void)st;
    enum { N = 200000 };
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    tstore s;
    tstore_init(&s, &a, 0);
    const char **first = calloc(N, sizeof *first);
    assert_non_null(first);
    char buf[64];
    for (int i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof buf, "storage:0x7f%010d", i);
        first[i] = tstore_intern(&s, buf, (size_t)n);
    }
    for (int i = N - 1; i >= 0; i--) {
        int n = snprintf(buf, sizeof buf, "storage:0x7f%010d", i);
        const char *again = tstore_intern(&s, buf, (size_t)n);
        assert_ptr_equal(again, first[i]);
        assert_string_equal(again, buf);
    }
    /* a copied id that was just stored is that copy; an interned one finds it */
    const char *id = tstore_copy(&s, "gradient-1", 10);
    assert_ptr_equal(tstore_copy(&s, "gradient-1", 10), id);
    assert_string_equal(tstore_intern(&s, "gradient-1", 10), "gradient-1");
    free(first);
    tstore_done(&s);
    cg_arena_free(&a);
}

/* The table stops at 524,288 distinct strings: the strings stored first stay
 * shared however many follow; later ones keep their bytes and are shared
 * while they are recent (the front). */
static void test_table_keeps_the_first_strings(void **st) {
    (void)st;
    enum { KEPT = 524288, N = KEPT + 100000 };
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    tstore s;
    tstore_init(&s, &a, 0);
    char buf[64];
    const char *early = tstore_intern(&s, "matmul", 6);
    for (int i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof buf, "TensorId(%d)", i);
        const char *p = tstore_intern(&s, buf, (size_t)n);
        assert_string_equal(p, buf);
        assert_ptr_equal(tstore_intern(&s, buf, (size_t)n), p); /* recent: shared */
    }
    assert_true(s.strings.count <= KEPT);
    assert_ptr_equal(tstore_intern(&s, "matmul", 6), early);
    assert_string_equal(tstore_intern(&s, "TensorId(7)", 11), "TensorId(7)");
    int n = snprintf(buf, sizeof buf, "TensorId(%d)", N - 1);
    assert_string_equal(tstore_intern(&s, buf, (size_t)n), buf);
    tstore_done(&s);
    cg_arena_free(&a);
}

static void test_equal_shapes_share_dims(void **st) {
    (void)st;
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    tstore s;
    tstore_init(&s, &a, 0);
    uint64_t d1[] = {16, 64}, d2[] = {16, 64}, d3[] = {16, 64, 1};
    uint64_t *p = tstore_dims(&s, d1, 2);
    assert_ptr_not_equal(p, d1);
    assert_ptr_equal(tstore_dims(&s, d2, 2), p);
    assert_ptr_not_equal(tstore_dims(&s, d3, 3), p);
    assert_ptr_not_equal(tstore_dims(&s, d1, 1), p);
    assert_int_equal(tstore_dims(&s, d3, 3)[2], 1);
    assert_null(tstore_dims(&s, d1, 0));
    uint64_t long_shape[17] = {0};
    assert_ptr_not_equal(tstore_dims(&s, long_shape, 17), tstore_dims(&s, long_shape, 17));
    tstore_done(&s);
    cg_arena_free(&a);
}

static const char trace_text[] =
    "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"r\",\"correlation_id\":\"c\","
    "\"entrypoint\":\"e\",\"phase\":\"train\",\"timestamp\":\"t\",\"capture_step\":1,\"warmup_steps\":0,"
    "\"device\":\"cpu\",\"measured_region_device_synchronized\":true,\"timing_mode\":\"host\","
    "\"capture_contract\":{\"measurement_scope\":\"profiled_work\",\"operations\":\"partial\","
    "\"logical_memory\":\"partial\",\"physical_memory\":\"partial\",\"device_timing\":\"partial\","
    "\"required_semantic_labels\":[]},\"tags\":{}}\n"
    "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"n\",\"start_ns\":0,\"span_kind\":\"module\","
    "\"step\":\"forward\"}\n"
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"matmul\",\"inputs\":[\"TensorId(1)\"],"
    "\"output\":\"TensorId(2)\",\"shape\":[16,64],\"dtype\":\"f32\",\"device\":\"cpu\",\"duration_ns\":5,"
    "\"timestamp_ns\":1,\"input_dense_bytes\":0}\n"
    "{\"kind\":\"op\",\"span_id\":\"s1\",\"op_name\":\"add\",\"inputs\":[],\"shape\":[16, 64],\"dtype\":\"f32\","
    "\"device\":\"cpu\",\"duration_ns\":5,\"timestamp_ns\":2,\"input_dense_bytes\":0,\"output_dense_bytes\":7}\n"
    "{\"kind\":\"tensor\",\"span_id\":\"s1\",\"tensor_id\":\"TensorId(2)\",\"shape\":[16,64],\"dtype\":\"f32\","
    "\"device\":\"cpu\",\"category\":\"gradient\"}\n"
    "{\"kind\":\"memory\",\"timestamp_ns\":3,\"storage_id\":\"st1\",\"tensor_id\":\"TensorId(2)\",\"span_id\":\"s1\","
    "\"device\":\"cpu\",\"bytes\":4096,\"action\":\"alloc\",\"dtype\":\"f32\",\"category\":\"activation\"}\n"
    "{\"kind\":\"memory\",\"timestamp_ns\":4,\"storage_id\":\"st1\",\"tensor_id\":\"TensorId(2)\",\"span_id\":\"s1\","
    "\"device\":\"cpu\",\"bytes\":4096,\"action\":\"free\",\"dtype\":\"f32\"}\n"
    "{\"kind\":\"gradient\",\"event_id\":\"g1\",\"root\":\"r\",\"key\":\"k\",\"state\":\"zero\"}\n"
    "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":10}\n"
    "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":20}\n";

/* Through the reader, on both paths: shared dims and ids, the byte-sized enums. */
static void test_read_trace_shares_and_packs(void **st) {
    (void)st;
    for (int general = 0; general < 2; general++) {
        cg_trace_limits lim;
        cg_trace_limits_default(&lim);
        lim.general_only = general;
        cg_error err;
        cg_err_clear(&err);
        cg_trace *t = cg_trace_read_mem(trace_text, sizeof trace_text - 1, "t.jsonl", &lim, &err);
        if (!t) fail_msg("%s", err.msg);
        assert_int_equal(t->n_ops, 2);
        assert_int_equal(t->ops[0].shape.n, 2);
        assert_int_equal(t->ops[0].shape.dims[1], 64);
        assert_ptr_equal(t->ops[0].shape.dims, t->ops[1].shape.dims);
        assert_ptr_equal(t->tensors[0].shape.dims, t->ops[0].shape.dims);
        assert_int_equal(t->memory[0].shape.n, 0);
        assert_null(t->memory[0].shape.dims);
        assert_ptr_equal(t->memory[1].storage_id, t->memory[0].storage_id);
        assert_ptr_equal(t->tensors[0].tensor_id, t->ops[0].output);
        assert_int_equal(t->spans[0].kind, CG_SPAN_MODULE);
        assert_int_equal(t->spans[0].step, CG_STEP_FORWARD);
        assert_int_equal(t->spans[0].line, 2);
        assert_true(t->spans[0].closed);
        assert_int_equal(t->tensors[0].category, CG_CAT_GRADIENT);
        assert_true(t->tensors[0].has_dense_bytes && t->tensors[0].dense_bytes_derived);
        assert_int_equal(t->tensors[0].dense_bytes, 4096);
        assert_int_equal(t->memory[0].category, CG_CAT_ACTIVATION);
        assert_int_equal(t->memory[1].category, CG_CAT_OTHER);
        assert_true(t->memory[1].is_free);
        assert_int_equal(t->gradients[0].state, CG_GRAD_ZERO);
        assert_int_equal(t->ops[1].output_dense_bytes, 7);
        assert_false(t->ops[1].output_dense_bytes_derived);
        cg_trace_free(t);
    }
}

/* The record layout on LP64: members by size, byte enums, a 12-byte shape. */
static void test_record_sizes(void **st) {
    (void)st;
    if (sizeof(void *) != 8) skip();
    assert_int_equal(sizeof(cg_shape), 12);
    assert_int_equal(sizeof(cg_span), 48);
    assert_int_equal(sizeof(cg_op), 104);
    assert_int_equal(sizeof(cg_tensor), 64);
    assert_int_equal(sizeof(cg_memory), 80);
    assert_int_equal(sizeof(cg_tensor_stats), 80);
    assert_int_equal(sizeof(cg_gradient), 40);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_strings_share_one_copy),
        cmocka_unit_test(test_long_strings_are_copied),
        cmocka_unit_test(test_many_strings_across_chunks),
        cmocka_unit_test(test_table_keeps_the_first_strings),
        cmocka_unit_test(test_equal_shapes_share_dims),
        cmocka_unit_test(test_read_trace_shares_and_packs),
        cmocka_unit_test(test_record_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
