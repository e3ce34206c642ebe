/* base/sha256: the SHA-NI path (used when the CPU has the SHA extensions) must
 * give libsodium's digests for every length and every way of splitting the
 * input across cg_sha256_update calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "base/sha256_shani.h"

static uint64_t rng = 0x853c49e6748fea9bULL;
static uint64_t rnd(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void test_known_vectors(void **st) {
    (void)st;
    char hex[65];
    cg_sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    cg_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    cg_sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    printf("SHA-NI %s on this machine\n", cg_sha256_shani_available() ? "is used" : "is not available");
}

static void test_matches_libsodium(void **st) {
    (void)st;
    assert_true(sodium_init() >= 0);
    enum { MAX = 5000 };
    unsigned char *data = malloc(MAX);
    assert_non_null(data);
    for (size_t i = 0; i < MAX; i++) data[i] = (unsigned char)rnd();
    for (size_t len = 0; len < MAX; len += (len < 300 ? 1 : 1 + rnd() % 97)) {
        unsigned char want[32], got[32], split[32];
        crypto_hash_sha256(want, data, len);
        cg_sha256_buf(data, len, got);
        assert_memory_equal(got, want, 32);
        cg_sha256 h;
        cg_sha256_init(&h);
        for (size_t off = 0; off < len;) {
            size_t n = (size_t)(rnd() % 130);
            if (n > len - off) n = len - off;
            cg_sha256_update(&h, data + off, n);
            off += n;
        }
        cg_sha256_final(&h, split);
        assert_memory_equal(split, want, 32);
    }
    free(data);
}

static void test_large_input(void **st) {
    (void)st;
    size_t len = (3u << 20) + 17;
    unsigned char *data = malloc(len);
    assert_non_null(data);
    for (size_t i = 0; i < len; i++) data[i] = (unsigned char)(i * 131 + (i >> 9));
    unsigned char want[32], got[32];
    crypto_hash_sha256(want, data, len);
    cg_sha256_buf(data, len, got);
    assert_memory_equal(got, want, 32);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors),
        cmocka_unit_test(test_matches_libsodium),
        cmocka_unit_test(test_large_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
