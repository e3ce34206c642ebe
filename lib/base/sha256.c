#include "base/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

#include "base/sha256_shani.h"

_Static_assert(sizeof(crypto_hash_sha256_state) <= sizeof(((cg_sha256 *)0)->state), "sha256 state size");

/* With the x86 SHA extensions the libsodium state struct (public layout:
 * state[8], count in bits, buf[64]) is driven here around the SHA-NI block
 * function (base/sha256_shani.c); otherwise libsodium does everything. The
 * choice is fixed per process, so a state never mixes the two. */
static void ni_update(crypto_hash_sha256_state *st, const unsigned char *p, size_t n) {
    size_t r = (size_t)((st->count >> 3) & 63);
    st->count += (uint64_t)n << 3;
    if (r) {
        size_t take = 64 - r < n ? 64 - r : n;
        memcpy(st->buf + r, p, take);
        p += take;
        n -= take;
        if (r + take < 64) return;
        cg_sha256_shani_blocks(st->state, st->buf, 1);
    }
    if (n >= 64) {
        cg_sha256_shani_blocks(st->state, p, n / 64);
        p += n & ~(size_t)63;
        n &= 63;
    }
    if (n) memcpy(st->buf, p, n);
}

static void ni_final(crypto_hash_sha256_state *st, unsigned char out[32]) {
    uint64_t bits = st->count;
    size_t r = (size_t)((bits >> 3) & 63);
    st->buf[r++] = 0x80;
    if (r > 56) {
        memset(st->buf + r, 0, 64 - r);
        cg_sha256_shani_blocks(st->state, st->buf, 1);
        r = 0;
    }
    memset(st->buf + r, 0, 56 - r);
    for (int i = 0; i < 8; i++) st->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    cg_sha256_shani_blocks(st->state, st->buf, 1);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(st->state[i] >> 24);
        out[4 * i + 1] = (unsigned char)(st->state[i] >> 16);
        out[4 * i + 2] = (unsigned char)(st->state[i] >> 8);
        out[4 * i + 3] = (unsigned char)st->state[i];
    }
    sodium_memzero(st, sizeof *st);
}

void cg_sha256_init(cg_sha256 *h) { crypto_hash_sha256_init((crypto_hash_sha256_state *)h->state); }
void cg_sha256_update(cg_sha256 *h, const void *p, size_t n) {
    if (cg_sha256_shani_available())
        ni_update((crypto_hash_sha256_state *)h->state, p, n);
    else
        crypto_hash_sha256_update((crypto_hash_sha256_state *)h->state, p, n);
}
void cg_sha256_final(cg_sha256 *h, unsigned char out[32]) {
    if (cg_sha256_shani_available())
        ni_final((crypto_hash_sha256_state *)h->state, out);
    else
        crypto_hash_sha256_final((crypto_hash_sha256_state *)h->state, out);
}
void cg_sha256_buf(const void *p, size_t n, unsigned char out[32]) {
    if (!cg_sha256_shani_available()) {
        crypto_hash_sha256(out, p, n);
        return;
    }
    cg_sha256 h;
    cg_sha256_init(&h);
    cg_sha256_update(&h, p, n);
    cg_sha256_final(&h, out);
}

void cg_hex(const unsigned char *bytes, size_t n, char *hex) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 15];
    }
    hex[2 * n] = '\0';
}

void cg_sha256_hex(const void *p, size_t n, char hex[65]) {
    unsigned char d[32];
    cg_sha256_buf(p, n, d);
    cg_hex(d, 32, hex);
}

int cg_sha256_file(const char *path, bool nofollow, char hex[65], uint64_t *size, cg_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0) return cg_err_set(err, CG_EIO, "open %s: %s", path, strerror(errno));
    cg_sha256 h;
    cg_sha256_init(&h);
    static _Thread_local unsigned char buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            return cg_err_set(err, CG_EIO, "read %s: %s", path, strerror(e));
        }
        if (r == 0) break;
        cg_sha256_update(&h, buf, (size_t)r);
        total += (uint64_t)r;
    }
    close(fd);
    unsigned char d[32];
    cg_sha256_final(&h, d);
    cg_hex(d, 32, hex);
    if (size) *size = total;
    return 0;
}

bool cg_is_sha256_hex(const char *s) {
    if (!s) return false;
    size_t i = 0;
    for (; s[i]; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
        if (i >= 64) return false;
    }
    return i == 64;
}
