/* sha256.h — SHA-256 (libsodium) with lowercase-hex rendering. */
#ifndef CG_BASE_SHA256_H
#define CG_BASE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct cg_sha256 {
    _Alignas(64) unsigned char state[128]; /* crypto_hash_sha256_state (opaque, 104 bytes) */
} cg_sha256;

void cg_sha256_init(cg_sha256 *h);
void cg_sha256_update(cg_sha256 *h, const void *p, size_t n);
void cg_sha256_final(cg_sha256 *h, unsigned char out[32]);
void cg_sha256_buf(const void *p, size_t n, unsigned char out[32]);
/* hex must hold 65 bytes; writes 64 lowercase hex digits + NUL. */
void cg_hex(const unsigned char *bytes, size_t n, char *hex);
void cg_sha256_hex(const void *p, size_t n, char hex[65]);
/* Streams a file in 64 KiB chunks; *size receives the byte count. Does not follow
 * symlinks when nofollow is true (O_NOFOLLOW). */
int cg_sha256_file(const char *path, bool nofollow, char hex[65], uint64_t *size, cg_error *err);
/* true iff s is exactly 64 ASCII hex digits (either case). */
bool cg_is_sha256_hex(const char *s);

#endif
