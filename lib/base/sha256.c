#include "base/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(crypto_hash_sha256_state) <= sizeof(((cg_sha256 *)0)->state), "sha256 state size");

void cg_sha256_init(cg_sha256 *h) { crypto_hash_sha256_init((crypto_hash_sha256_state *)h->state); }
void cg_sha256_update(cg_sha256 *h, const void *p, size_t n) {
    crypto_hash_sha256_update((crypto_hash_sha256_state *)h->state, p, n);
}
void cg_sha256_final(cg_sha256 *h, unsigned char out[32]) {
    crypto_hash_sha256_final((crypto_hash_sha256_state *)h->state, out);
}
void cg_sha256_buf(const void *p, size_t n, unsigned char out[32]) { crypto_hash_sha256(out, p, n); }

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
