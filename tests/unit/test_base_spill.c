/* base/spill: large blocks of the cg_* allocators live in unnamed files of
 * the spill directory once spilling is on, keep their contents through the
 * governor's trims (the budget here is one byte, so it trims every 5 ms while
 * any block lives), grow and shrink like realloc, fall back to the heap when
 * no file can be made, and are released by cg_free. Spilling is process-wide
 * and turned on once, so the cases run in this order in one process. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/fs.h"
#include "base/spill.h"

#define MIN_SPILL ((size_t)64 << 10)

static char dir[4096];

static uint64_t live_blocks(void) {
    cg_spill_stats s;
    cg_spill_stats_get(&s);
    return s.live_blocks;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 2654435761u + seed) >> 7);
}

static int same(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)((i * 2654435761u + seed) >> 7)) return 0;
    return 1;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void test_refuses_bad_dirs(void **st) {
    (void)st;
    cg_error err = {0};
    assert_int_equal(cg_spill_enable("/nonexistent/spill", MIN_SPILL, 1, &err), -1);
    assert_int_equal(err.code, CG_EINVAL);
    assert_non_null(strstr(err.msg, "is not a directory"));
    struct statfs sf;
    if (statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC) {
        cg_error e2 = {0};
        assert_int_equal(cg_spill_enable("/dev/shm", MIN_SPILL, 1, &e2), -1);
        assert_int_equal(e2.code, CG_EINVAL);
        assert_non_null(strstr(e2.msg, "tmpfs"));
    }
    /* nothing spills before spilling is on */
    void *p = cg_xalloc(MIN_SPILL * 4, 1);
    assert_int_equal(cg_spill_size(p), 0);
    cg_free(p);
}

static void test_enable(void **st) {
    (void)st;
    cg_error err = {0};
    assert_int_equal(cg_spill_enable(dir, MIN_SPILL, 1, &err), 0);
    cg_error again = {0};
    assert_int_equal(cg_spill_enable(dir, MIN_SPILL, 1, &again), -1);
    assert_int_equal(again.code, CG_ESTATE);
}

static void test_small_stays_on_heap(void **st) {
    (void)st;
    void *p = cg_xalloc(MIN_SPILL - 1, 1);
    assert_int_equal(cg_spill_size(p), 0);
    cg_free(p);
    /* a page-aligned heap block is not mistaken for a spilled one */
    void *q = NULL;
    assert_int_equal(posix_memalign(&q, 4096, 4096), 0);
    assert_int_equal(cg_spill_size(q), 0);
    cg_free(q);
}

static void test_large_spills_and_keeps_contents(void **st) {
    (void)st;
    uint64_t before = live_blocks();
    unsigned char *z = cg_xzalloc(MIN_SPILL * 3 + 5, 1);
    assert_true(cg_spill_size(z) >= MIN_SPILL * 3 + 5);
    assert_int_equal((uintptr_t)z % 4096, 0);
    for (size_t i = 0; i < MIN_SPILL * 3 + 5; i++) assert_int_equal(z[i], 0);
    fill(z, MIN_SPILL * 3 + 5, 7);
    cg_spill_trim();
    sleep_ms(30); /* the governor trims too */
    assert_true(same(z, MIN_SPILL * 3 + 5, 7));
    assert_int_equal(live_blocks(), before + 1);
    cg_free(z);
    assert_int_equal(live_blocks(), before);
    cg_spill_stats s;
    cg_spill_stats_get(&s);
    assert_true(s.trims_total > 0);
    assert_true(s.blocks_total > 0);
}

static void test_realloc_moves_between_heap_and_files(void **st) {
    (void)st;
    uint64_t before = live_blocks();
    unsigned char *p = cg_xalloc(1000, 1);
    fill(p, 1000, 3);
    p = cg_xrealloc(p, MIN_SPILL * 2, 1); /* heap → file */
    assert_true(cg_spill_size(p) >= MIN_SPILL * 2);
    assert_true(same(p, 1000, 3));
    fill(p, MIN_SPILL * 2, 4);
    cg_spill_trim();
    p = cg_xrealloc(p, MIN_SPILL * 9, 1); /* file → larger file */
    assert_true(cg_spill_size(p) >= MIN_SPILL * 9);
    assert_true(same(p, MIN_SPILL * 2, 4));
    unsigned char *q = cg_xrealloc(p, 10, 1); /* shrinking keeps the block */
    assert_ptr_equal(q, p);
    assert_true(same(q, 10, 4));
    size_t cap = 0;
    unsigned char *g = cg_xgrow(NULL, &cap, MIN_SPILL, 1);
    assert_true(cg_spill_size(g) >= MIN_SPILL);
    assert_int_equal(live_blocks(), before + 2);
    cg_free(q);
    cg_free(g);
    assert_int_equal(live_blocks(), before);
}

static void test_arena_blocks_grow_and_spill(void **st) {
    (void)st;
    uint64_t before = live_blocks();
    cg_arena a;
    cg_arena_init(&a, 4096);
    enum { N = 20000 };
    unsigned char **v = cg_xalloc(N, sizeof *v);
    for (unsigned i = 0; i < N; i++) {
        v[i] = cg_arena_alloc(&a, 200);
        fill(v[i], 200, i);
    }
    /* 4 MB handed out from 4 KiB blocks: the later blocks grew past the spill size */
    assert_true(live_blocks() > before);
    cg_spill_trim();
    for (unsigned i = 0; i < N; i++) assert_true(same(v[i], 200, i));
    cg_arena_free(&a);
    cg_free(v);
    assert_int_equal(live_blocks(), before);
}

/* Two threads grow and check arrays while the governor trims every 5 ms. */
static void *churn(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    size_t n = MIN_SPILL;
    unsigned char *p = cg_xalloc(n, 1);
    fill(p, n, seed);
    for (int round = 0; round < 6; round++) {
        size_t m = n * 2;
        p = cg_xrealloc(p, m, 1);
        if (!same(p, n, seed)) return (void *)1;
        fill(p, m, seed);
        n = m;
        sleep_ms(6);
        if (!same(p, n, seed)) return (void *)1;
    }
    cg_free(p);
    return NULL;
}

static void test_contents_survive_concurrent_trims(void **st) {
    (void)st;
    uint64_t before = live_blocks();
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, churn, (void *)(i + 11)), 0);
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
    assert_int_equal(live_blocks(), before);
}

static void test_falls_back_to_heap(void **st) {
    (void)st;
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    cg_spill_stats s0, s1;
    cg_spill_stats_get(&s0);
    struct rlimit low = {3, old.rlim_max}; /* no descriptor left for a spill file */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    unsigned char *p = cg_xalloc(MIN_SPILL * 2, 1);
    setrlimit(RLIMIT_NOFILE, &old);
    assert_int_equal(cg_spill_size(p), 0);
    fill(p, MIN_SPILL * 2, 9);
    assert_true(same(p, MIN_SPILL * 2, 9));
    cg_spill_stats_get(&s1);
    assert_int_equal(s1.fallbacks, s0.fallbacks + 1);
    cg_free(p);
}

int main(void) {
    const char *bin = getenv("CG_BINARY_DIR");
    /* on the build's disk, not /tmp (which may be tmpfs, where nothing spills) */
    snprintf(dir, sizeof dir, "%s/spill-test.XXXXXX", bin ? bin : ".");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refuses_bad_dirs),
        cmocka_unit_test(test_enable),
        cmocka_unit_test(test_small_stays_on_heap),
        cmocka_unit_test(test_large_spills_and_keeps_contents),
        cmocka_unit_test(test_realloc_moves_between_heap_and_files),
        cmocka_unit_test(test_arena_blocks_grow_and_spill),
        cmocka_unit_test(test_contents_survive_concurrent_trims),
        cmocka_unit_test(test_falls_back_to_heap),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cg_rm_rf(dir);
    return rc;
}
