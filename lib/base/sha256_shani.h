/* sha256_shani.h — SHA-256 block compression with the x86 SHA extensions
 * (SHA-NI), used by base/sha256.c when the CPU has them; same digests as
 * libsodium (tests/unit/test_base_sha256_shani.c compares them).
 * No allocation; never fails. */
#ifndef CG_BASE_SHA256_SHANI_H
#define CG_BASE_SHA256_SHANI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* true when this CPU (and build: x86-64) has SHA, SSSE3 and SSE4.1; cached. */
bool cg_sha256_shani_available(void);
/* Runs nblocks 64-byte blocks through the compression function; state is the
 * eight working words H0..H7 (host order). Only call when available. */
void cg_sha256_shani_blocks(uint32_t state[8], const unsigned char *p, size_t nblocks);

#endif
