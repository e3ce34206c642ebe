/* fault.c — CG_FAULT rules (see fault.h): parsed once by a constructor, then
 * one atomic counter per operation. Inert (one relaxed load) when unarmed. */
#define _GNU_SOURCE /* renameat2 */
#include "base/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RULES 8

typedef struct rule {
    cg_fault_op op;
    uint64_t nth;
    int err;
    bool persist;
} rule;

static rule rules[MAX_RULES];
static size_t n_rules;
static atomic_bool armed;
static _Atomic uint64_t calls[CG_FAULT_NOPS];
static _Thread_local bool thread_enabled;

static const char *const op_names[CG_FAULT_NOPS] = {"write", "fsync", "rename", "pq", "alloc"};

static const struct { const char *name; int value; } err_names[] = {
    {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS}, {"ENOMEM", ENOMEM}, {"ECONNRESET", ECONNRESET},
    {"lost", ECONNRESET}, {"ECONNABORTED", ECONNABORTED}, {"lost-after", ECONNABORTED},
};

static bool parse_op(const char *s, size_t n, cg_fault_op *op) {
    for (int i = 0; i < CG_FAULT_NOPS; i++)
        if (strlen(op_names[i]) == n && strncmp(s, op_names[i], n) == 0) {
            *op = (cg_fault_op)i;
            return true;
        }
    return false;
}

static bool parse_err(const char *s, size_t n, int *e) {
    for (size_t i = 0; i < sizeof err_names / sizeof err_names[0]; i++)
        if (strlen(err_names[i].name) == n && strncmp(s, err_names[i].name, n) == 0) {
            *e = err_names[i].value;
            return true;
        }
    return false;
}

/* One rule "op:N:ERR[:persist]" in s[0..n). */
static bool parse_rule(const char *s, size_t n, rule *out) {
    const char *end = s + n, *c1 = memchr(s, ':', n);
    if (!c1 || !parse_op(s, (size_t)(c1 - s), &out->op)) return false;
    const char *p = c1 + 1;
    uint64_t v = 0;
    if (p >= end || *p < '0' || *p > '9') return false;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v == 0 || p >= end || *p != ':') return false;
    out->nth = v;
    const char *e = p + 1, *c3 = memchr(e, ':', (size_t)(end - e));
    if (!parse_err(e, (size_t)((c3 ? c3 : end) - e), &out->err)) return false;
    out->persist = false;
    if (!c3) return true;
    out->persist = (size_t)(end - c3 - 1) == 7 && strncmp(c3 + 1, "persist", 7) == 0;
    return out->persist;
}

static bool parse_spec(const char *spec) {
    size_t k = 0;
    const char *p = spec;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (k == MAX_RULES || !parse_rule(p, len, &rules[k]) || (comma && !comma[1])) return false;
        k++;
        p += len + (comma ? 1 : 0);
    }
    n_rules = k;
    return k > 0;
}

__attribute__((constructor)) static void fault_init(void) {
    const char *spec = getenv("CG_FAULT");
    if (!spec || !*spec) return;
    if (!parse_spec(spec)) {
        n_rules = 0;
        fprintf(stderr, "{\"msg\":\"ignoring invalid CG_FAULT (want op:N:ERR[:persist],…)\"}\n");
        return;
    }
    atomic_store(&armed, true);
    fprintf(stderr, "{\"msg\":\"fault injection armed\",\"rules\":%zu}\n", n_rules);
}

void cg_fault_thread_enable(void) { thread_enabled = true; }

bool cg_fault_armed(void) { return atomic_load_explicit(&armed, memory_order_relaxed); }

uint64_t cg_fault_calls(cg_fault_op op) { return op < CG_FAULT_NOPS ? atomic_load(&calls[op]) : 0; }

int cg_fault_hit(cg_fault_op op) {
    if (!atomic_load_explicit(&armed, memory_order_relaxed) || op >= CG_FAULT_NOPS) return 0;
    if (!thread_enabled) return 0;
    uint64_t nth = atomic_fetch_add(&calls[op], 1) + 1;
    for (size_t i = 0; i < n_rules; i++) {
        const rule *r = &rules[i];
        if (r->op != op || nth < r->nth || (!r->persist && nth != r->nth)) continue;
        fprintf(stderr, "{\"msg\":\"fault injected\",\"op\":\"%s\",\"call\":%llu,\"errno\":%d}\n", op_names[op],
                (unsigned long long)nth, r->err);
        return r->err;
    }
    return 0;
}

ssize_t cg_fault_write(int fd, const void *buf, size_t n) {
    int e = cg_fault_hit(CG_FAULT_WRITE);
    if (e) {
        errno = e;
        return -1;
    }
    return write(fd, buf, n);
}

int cg_fault_fsync(int fd) {
    int e = cg_fault_hit(CG_FAULT_FSYNC);
    if (e) {
        errno = e;
        return -1;
    }
    return fsync(fd);
}

int cg_fault_rename(const char *from, const char *to) {
    int e = cg_fault_hit(CG_FAULT_RENAME);
    if (e) {
        errno = e;
        return -1;
    }
    return rename(from, to);
}

int cg_fault_renameat2(int olddirfd, const char *from, int newdirfd, const char *to, unsigned flags) {
    int e = cg_fault_hit(CG_FAULT_RENAME);
    if (e) {
        errno = e;
        return -1;
    }
    return renameat2(olddirfd, from, newdirfd, to, flags);
}
