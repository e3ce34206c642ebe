/* test_server_cache.c — unit tests of server/srv_cache.c, the bounded,
 * de-duplicating index cache of the Timeline and view indexes: hits build
 * nothing, the least recently used entry nobody holds is evicted (by slots and
 * by bytes), held entries are never evicted, a fresh entry with every slot held
 * is served uncached and freed by its last release, a duplicate insertion keeps
 * the cached entry, and clear frees only unheld entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "srv_cache.h"
#include "base/alloc.h"

typedef struct entry {
    srv_cache_item item;
    int tag;
} entry;

static int n_built, n_freed;
static uint64_t next_bytes;

static void free_entry(srv_cache_item *it) {
    n_freed++;
    cg_free(it);
}

static srv_cache_item *build(void *ctx, const char *id) {
    entry *e = calloc(1, sizeof *e);
    assert_non_null(e);
    snprintf(e->item.id, sizeof e->item.id, "%s", id);
    e->item.bytes = next_bytes;
    e->tag = ctx ? *(int *)ctx : 0;
    n_built++;
    return &e->item;
}

static srv_cache_item *fail_build(void *ctx, const char *id) {
    (void)ctx;
    (void)id;
    return NULL;
}

static void reset(srv_cache *c, size_t slots, uint64_t max_bytes) {
    n_built = n_freed = 0;
    next_bytes = 0;
    srv_cache_init(c, slots, max_bytes, free_entry);
}

static void test_hit_and_lru(void **state) {
    (void)state;
    srv_cache c;
    reset(&c, 2, UINT64_MAX);
    srv_cache_item *a = srv_cache_acquire(&c, "a", build, NULL);
    srv_cache_release(&c, a);
    assert_ptr_equal(srv_cache_acquire(&c, "a", build, NULL), a); /* a hit builds nothing */
    assert_int_equal(n_built, 1);
    srv_cache_release(&c, a);
    srv_cache_release(&c, srv_cache_acquire(&c, "b", build, NULL));
    srv_cache_release(&c, srv_cache_get(&c, "a")); /* a is now the most recent */
    srv_cache_release(&c, srv_cache_acquire(&c, "c", build, NULL));
    assert_int_equal(n_freed, 1); /* b, the least recently used, went */
    assert_null(srv_cache_get(&c, "b"));
    srv_cache_item *hit = srv_cache_get(&c, "a");
    assert_ptr_equal(hit, a);
    srv_cache_release(&c, hit);
    assert_null(srv_cache_acquire(&c, "d", fail_build, NULL));
    srv_cache_destroy(&c);
    assert_int_equal(n_freed, 3);
}

static void test_held_never_evicted(void **state) {
    (void)state;
    srv_cache c;
    reset(&c, 1, UINT64_MAX);
    srv_cache_item *a = srv_cache_acquire(&c, "a", build, NULL);
    srv_cache_item *b = srv_cache_acquire(&c, "b", build, NULL); /* the only slot is held: uncached */
    assert_true(b->uncached);
    assert_ptr_equal(srv_cache_get(&c, "a"), a);
    srv_cache_release(&c, a);
    assert_null(srv_cache_get(&c, "b"));
    srv_cache_release(&c, b);
    assert_int_equal(n_freed, 1); /* b, by its last release */
    srv_cache_release(&c, a);
    srv_cache_clear(&c);
    assert_int_equal(n_freed, 2);
    assert_null(srv_cache_get(&c, "a"));
    srv_cache_destroy(&c);
}

static void test_byte_bound(void **state) {
    (void)state;
    srv_cache c;
    reset(&c, 4, 100);
    next_bytes = 60;
    srv_cache_release(&c, srv_cache_acquire(&c, "a", build, NULL));
    srv_cache_release(&c, srv_cache_acquire(&c, "b", build, NULL)); /* 120 > 100: a goes */
    assert_int_equal(n_freed, 1);
    assert_null(srv_cache_get(&c, "a"));
    srv_cache_item *b = srv_cache_get(&c, "b");
    assert_non_null(b);
    srv_cache_release(&c, b);
    srv_cache_destroy(&c);
}

/* clear frees only the entries nobody holds; a held entry stays served. */
static void test_clear_keeps_held(void **state) {
    (void)state;
    srv_cache c;
    reset(&c, 2, UINT64_MAX);
    int one = 1;
    srv_cache_item *a = srv_cache_acquire(&c, "a", build, &one);
    srv_cache_release(&c, srv_cache_acquire(&c, "b", build, NULL));
    srv_cache_clear(&c); /* b goes, a is held */
    assert_int_equal(n_freed, 1);
    assert_int_equal(((entry *)srv_cache_acquire(&c, "a", build, NULL))->tag, 1);
    srv_cache_release(&c, a);
    srv_cache_release(&c, a);
    srv_cache_destroy(&c);
    assert_int_equal(n_freed, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_and_lru),
        cmocka_unit_test(test_held_never_evicted),
        cmocka_unit_test(test_byte_bound),
        cmocka_unit_test(test_clear_keeps_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
