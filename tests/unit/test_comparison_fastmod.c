/* Unit tests for lib/comparison/fastmod.h: the reciprocal remainder equals `%`
 * for every numerator class the bootstrap can produce (any 64-bit state) and
 * divisors from 1 up to and beyond 2^32. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "comparison/fastmod.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) { /* splitmix64: independent of the PRNG under test */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void check_divisor(uint64_t d) {
    cg_fastmod f = cg_fastmod_init(d);
    uint64_t edges[] = {0, 1, 2, 3, d - 1, d, d + 1, 2 * d - 1, 2 * d, UINT64_MAX, UINT64_MAX - 1,
                        UINT64_MAX - d, UINT64_MAX / d * d, UINT64_MAX / d * d - 1, 1ULL << 63,
                        (1ULL << 63) - 1, 1ULL << 32, (1ULL << 32) - 1};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        uint64_t a = edges[i];
        if (cg_fastmod_u64(&f, a) != a % d) fail_msg("d=%llu a=%llu", (unsigned long long)d, (unsigned long long)a);
    }
    for (int p = 0; p < 64; p++) {
        uint64_t a = 1ULL << p;
        assert_true(cg_fastmod_u64(&f, a) == a % d);
        assert_true(cg_fastmod_u64(&f, a - 1) == (a - 1) % d);
        assert_true(cg_fastmod_u64(&f, a + 1) == (a + 1) % d);
    }
    for (int i = 0; i < 2000; i++) {
        uint64_t a = rnd();
        if (cg_fastmod_u64(&f, a) != a % d) fail_msg("d=%llu a=%llu", (unsigned long long)d, (unsigned long long)a);
        uint64_t small = a >> (a & 63); /* numerators of every magnitude */
        assert_true(cg_fastmod_u64(&f, small) == small % d);
    }
}

static void test_small_divisors(void **st) {
    (void)st;
    for (uint64_t d = 1; d <= 1000; d++) check_divisor(d);
}

static void test_powers_of_two_and_neighbours(void **st) {
    (void)st;
    for (int p = 0; p < 64; p++) {
        uint64_t d = 1ULL << p;
        check_divisor(d);
        if (d > 1) check_divisor(d - 1);
        check_divisor(d + 1);
    }
    check_divisor(UINT64_MAX);
    check_divisor(UINT64_MAX - 1);
}

static void test_random_divisors_up_to_2_32(void **st) {
    (void)st;
    for (int i = 0; i < 3000; i++) {
        uint64_t d = (rnd() >> (32 + (i % 32))) + 1; /* 1 .. 2^32, all magnitudes */
        check_divisor(d);
    }
    check_divisor(1ULL << 32);
    check_divisor((1ULL << 32) - 1);
    check_divisor((1ULL << 32) + 1);
}

static void test_random_divisors_full_range(void **st) {
    (void)st;
    for (int i = 0; i < 500; i++) {
        uint64_t d = rnd() >> (i % 64);
        if (d == 0) d = 1;
        check_divisor(d);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_divisors),
        cmocka_unit_test(test_powers_of_two_and_neighbours),
        cmocka_unit_test(test_random_divisors_up_to_2_32),
        cmocka_unit_test(test_random_divisors_full_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
