/* sha256_shani.c — SHA-256 compression with the x86 SHA extensions: the
 * standard SHA-NI round structure (sha256rnds2 two rounds at a time on the
 * ABEF/CDGH state halves, sha256msg1/msg2 for the message schedule). */
#include "base/sha256_shani.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

bool cg_sha256_shani_available(void) {
    static _Atomic int cached = -1; /* benign race: every thread computes the same answer */
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        unsigned a, b, c, d;
        bool ok = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) && (c & bit_SSE4_1);
        ok = ok && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)); /* SHA */
        v = ok;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v == 1;
}

__attribute__((target("sha,sse4.1,ssse3"))) void cg_sha256_shani_blocks(uint32_t state[8], const unsigned char *p,
                                                                         size_t nblocks) {
    const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i tmp = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i s1 = _mm_loadu_si128((const __m128i *)&state[4]);
    tmp = _mm_shuffle_epi32(tmp, 0xB1);     /* CDAB */
    s1 = _mm_shuffle_epi32(s1, 0x1B);       /* EFGH */
    __m128i s0 = _mm_alignr_epi8(tmp, s1, 8); /* ABEF */
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);    /* CDGH */
    for (; nblocks; nblocks--, p += 64) {
        __m128i abef = s0, cdgh = s1, m[4];
        for (int i = 0; i < 4; i++) m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), mask);
        /* unrolled: m[] stays in registers and the group conditions fold away
         * (a rolled loop keeps m[] on the stack, about 3x slower) */
#pragma GCC unroll 16
        for (int g = 0; g < 16; g++) { /* four rounds per group */
            __m128i w = m[g & 3];
            __m128i msg = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)&K[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
            if (g >= 3 && g <= 14) { /* W[16..63]: finish the schedule of the next group */
                __m128i t = _mm_alignr_epi8(w, m[(g + 3) & 3], 4);
                m[(g + 1) & 3] = _mm_sha256msg2_epu32(_mm_add_epi32(m[(g + 1) & 3], t), w);
            }
            msg = _mm_shuffle_epi32(msg, 0x0E);
            s0 = _mm_sha256rnds2_epu32(s0, s1, msg);
            if (g >= 1 && g <= 12) m[(g + 3) & 3] = _mm_sha256msg1_epu32(m[(g + 3) & 3], w);
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    tmp = _mm_shuffle_epi32(s0, 0x1B);      /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);       /* DCHG */
    s0 = _mm_blend_epi16(tmp, s1, 0xF0);    /* DCBA */
    s1 = _mm_alignr_epi8(s1, tmp, 8);       /* HGFE */
    _mm_storeu_si128((__m128i *)&state[0], s0);
    _mm_storeu_si128((__m128i *)&state[4], s1);
}

#else
bool cg_sha256_shani_available(void) { return false; }
void cg_sha256_shani_blocks(uint32_t state[8], const unsigned char *p, size_t nblocks) {
    (void)state;
    (void)p;
    (void)nblocks;
}
#endif
