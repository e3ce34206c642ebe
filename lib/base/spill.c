/* spill.c — file-backed large blocks and the resident-set governor (see
 * spill.h). The registry is a small vector of the live blocks: a process
 * holds a few hundred at most (only blocks of min_bytes or more spill). */
#define _GNU_SOURCE
#include "base/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

typedef struct blk {
    uintptr_t addr;
    size_t len;
} blk;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static blk *live;           /* guarded by mu */
static size_t n_live, cap_live;
static _Atomic size_t live_count; /* n_live, read without the lock */
static _Atomic uint64_t live_bytes, made_total, trims_total, fallbacks;

static _Atomic bool enabled;
static char *spill_dir;     /* set once by cg_spill_enable */
static size_t spill_min, budget, page;
static int statm_fd = -1;
bool cg_spill_wanted(size_t bytes) {
    return atomic_load_explicit(&enabled, memory_order_acquire) && bytes >= spill_min;
}

/* ---- registry (mu held) ---- */

static bool reg_add(uintptr_t a, size_t len) {
    if (n_live == cap_live) {
        size_t c = cap_live ? cap_live * 2 : 64;
        blk *nv = realloc(live, c * sizeof *nv);
        if (!nv) return false;
        live = nv;
        cap_live = c;
    }
    live[n_live++] = (blk){a, len};
    atomic_store(&live_count, n_live);
    return true;
}

static ssize_t reg_find(uintptr_t a) {
    for (size_t i = 0; i < n_live; i++)
        if (live[i].addr == a) return (ssize_t)i;
    return -1;
}

static void reg_remove(size_t i) {
    live[i] = live[--n_live];
    atomic_store(&live_count, n_live);
}

/* ---- blocks ---- */

static int open_tmp(void) { return open(spill_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600); }

void *cg_spill_alloc(size_t bytes) {
    if (bytes > SIZE_MAX - page) return NULL;
    size_t len = (bytes + page - 1) / page * page;
    int fd = open_tmp();
    void *p = MAP_FAILED;
    /* the disk space is reserved now: a store into a sparse page of a full
     * disk would be SIGBUS, not an error */
    if (fd >= 0 && posix_fallocate(fd, 0, (off_t)len) == 0)
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0) close(fd); /* the mapping keeps the file */
    if (p == MAP_FAILED) {
        atomic_fetch_add(&fallbacks, 1);
        return NULL;
    }
    pthread_mutex_lock(&mu);
    bool ok = reg_add((uintptr_t)p, len);
    pthread_mutex_unlock(&mu);
    if (!ok) {
        munmap(p, len);
        atomic_fetch_add(&fallbacks, 1);
        return NULL;
    }
    atomic_fetch_add(&live_bytes, len);
    atomic_fetch_add(&made_total, 1);
    return p;
}

/* Only page-aligned pointers can be spilled blocks; glibc's own large blocks
 * sit 16 bytes into their pages, so the lock is rarely taken for others. */
static bool maybe_spilled(const void *p) {
    /* page is set before the first block exists: read it after live_count */
    return p && atomic_load_explicit(&live_count, memory_order_acquire) && ((uintptr_t)p & (page - 1)) == 0;
}

size_t cg_spill_size(const void *p) {
    if (!maybe_spilled(p)) return 0;
    pthread_mutex_lock(&mu);
    ssize_t i = reg_find((uintptr_t)p);
    size_t len = i < 0 ? 0 : live[i].len;
    pthread_mutex_unlock(&mu);
    return len;
}

bool cg_spill_release(void *p) {
    if (!maybe_spilled(p)) return false;
    pthread_mutex_lock(&mu);
    ssize_t i = reg_find((uintptr_t)p);
    size_t len = 0;
    if (i >= 0) {
        len = live[i].len;
        reg_remove((size_t)i);
        /* unmapped under the lock: a trim never advises a range that is
         * being reused by another mapping */
        munmap(p, len);
    }
    pthread_mutex_unlock(&mu);
    if (i < 0) return false;
    atomic_fetch_sub(&live_bytes, len);
    return true;
}

void cg_spill_trim(void) {
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n_live; i++) madvise((void *)live[i].addr, live[i].len, MADV_DONTNEED);
    pthread_mutex_unlock(&mu);
    atomic_fetch_add(&trims_total, 1);
}

void cg_spill_stats_get(cg_spill_stats *o) {
    o->live_blocks = atomic_load(&live_count);
    o->live_bytes = atomic_load(&live_bytes);
    o->blocks_total = atomic_load(&made_total);
    o->trims_total = atomic_load(&trims_total);
    o->fallbacks = atomic_load(&fallbacks);
}

/* ---- governor ---- */

/* The resident set in bytes from /proc/self/statm (0 when unknown). */
static size_t resident(void) {
    char b[128];
    ssize_t n = pread(statm_fd, b, sizeof b - 1, 0);
    if (n <= 0) return 0;
    b[n] = 0;
    char *e;
    strtoull(b, &e, 10); /* size */
    unsigned long long pages = strtoull(e, NULL, 10);
    return (size_t)pages * page;
}

static void *governor(void *arg) {
    (void)arg;
    const struct timespec tick = {0, 5 * 1000 * 1000};
    for (;;) {
        nanosleep(&tick, NULL);
        if (atomic_load(&live_count) && resident() > budget) cg_spill_trim();
    }
    return NULL;
}

static bool on_memory_fs(const char *dir) {
    struct statfs sf;
    if (statfs(dir, &sf) != 0) return false;
    return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
}

int cg_spill_enable(const char *dir, size_t min_bytes, size_t budget_bytes, cg_error *err) {
    if (atomic_load(&enabled)) return cg_err_set(err, CG_ESTATE, "spilling is already enabled");
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cg_err_set(err, CG_EINVAL, "spill directory %s is not a directory", dir);
    if (on_memory_fs(dir))
        return cg_err_set(err, CG_EINVAL, "spill directory %s is on tmpfs or ramfs: spilled blocks would stay in memory",
                          dir);
    page = (size_t)sysconf(_SC_PAGESIZE);
    int probe = -1;
    if (!(spill_dir = strdup(dir)) || (probe = open_tmp()) < 0) {
        int e = errno;
        free(spill_dir);
        spill_dir = NULL;
        return cg_err_set(err, CG_EIO, "spill directory %s cannot hold unnamed files: %s", dir, strerror(e));
    }
    close(probe);
    statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (statm_fd < 0) return cg_err_set(err, CG_EIO, "/proc/self/statm: %s", strerror(errno));
    spill_min = min_bytes ? min_bytes : 1;
    budget = budget_bytes;
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &at, governor, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0) return cg_err_set(err, CG_EIO, "spill governor thread: %s", strerror(rc));
    atomic_store_explicit(&enabled, true, memory_order_release);
    return 0;
}
