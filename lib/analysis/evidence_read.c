#include "analysis/evidence_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fs.h"

struct cg_evidence_file {
    const char *text;
    size_t len;
    void *map;    /* the mapping (len bytes), or NULL */
    char *heap;   /* the bytes read when the file could not be mapped */
    size_t page;
    cg_json_limits json; /* of the parse: items are re-read with them */
    size_t released;     /* the parse's release mark */
};

cg_evidence_file *cg_evidence_file_open(const char *path, bool bare, cg_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        char text[256];
        int e = errno;
        if (bare) cg_err_set(err, cg_errcode_of_errno(e), "%s", cg_os_error_text(text, sizeof text, e));
        else cg_err_set(err, CG_EIO, "open %s: %s", path, strerror(e));
        return NULL;
    }
    cg_evidence_file *f = cg_xzalloc(1, sizeof *f);
    long pg = sysconf(_SC_PAGESIZE);
    f->page = pg > 0 ? (size_t)pg : 4096;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            f->map = m;
            f->text = m;
            f->len = (size_t)st.st_size;
            (void)madvise(m, f->len, MADV_SEQUENTIAL);
        }
    }
    if (!f->map) {
        /* empty, special or unmappable: read it, with the readers' own errors */
        f->heap = bare ? cg_read_fd_io(fd, path, 0, &f->len, err) : cg_read_fd(fd, path, 0, &f->len, err);
        f->text = f->heap;
    }
    close(fd);
    if (!f->text) {
        cg_free(f);
        return NULL;
    }
    return f;
}

void cg_evidence_file_close(cg_evidence_file *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->len);
    cg_free(f->heap);
    cg_free(f);
}

const char *cg_evidence_file_text(const cg_evidence_file *f, size_t *len) {
    *len = f->len;
    return f->text;
}

void cg_evidence_read_limits_default(cg_evidence_read_limits *l) {
    cg_json_limits_default(&l->json);
    l->max_item_bytes = CG_EVIDENCE_READ_MAX_ITEM;
    l->max_tree_bytes = CG_EVIDENCE_READ_MAX_TREE;
}

/* Gives back the mapped pages of [*mark, to) once that span passes the
 * release step, or at once with force (the bytes stay readable: they fault
 * in again from the file). */
static void release(const cg_evidence_file *f, size_t *mark, size_t to, bool force) {
    if (!f->map || to <= *mark || (!force && to - *mark < CG_EVIDENCE_READ_RELEASE)) return;
    size_t from = (*mark + f->page - 1) / f->page * f->page, upto = to / f->page * f->page;
    if (upto > from) (void)madvise((char *)f->map + from, upto - from, MADV_DONTNEED);
    *mark = to;
}

/* ---- the lazy arrays ---- */

typedef struct lazy_src {
    const cg_evidence_file *f;
    size_t start, end; /* '[' .. past ']' */
    size_t n;          /* items */
    size_t next;       /* the item at pos */
    size_t pos;        /* where item `next` begins (before its separator) */
    size_t mark;       /* release mark of the walk */
} lazy_src;

/* Past the separator before the item at s->pos (',' or the opening '['). */
static void skip_separator(lazy_src *s) {
    const char *t = s->f->text;
    while (s->pos < s->end && (t[s->pos] == ' ' || t[s->pos] == '\t' || t[s->pos] == '\n' || t[s->pos] == '\r'))
        s->pos++;
    if (s->pos < s->end && (t[s->pos] == ',' || t[s->pos] == '[')) s->pos++;
}

static cg_jv *next_item(lazy_src *s, cg_arena *a) {
    skip_separator(s);
    cg_error e;
    cg_err_clear(&e);
    /* the text was checked whole when parsed: an item cannot fail unless the
     * file changed underneath, which the post-read digest check reports */
    cg_jv *v = cg_json_parse_at(a, s->f->text, s->end, &s->pos, &s->f->json, &e);
    s->next++;
    release(s->f, &s->mark, s->next == s->n ? s->end : s->pos, s->next == s->n); /* a finished walk keeps no pages */
    return v ? v : cg_jv_null(a);
}

/* Items come in order within a walk (a walk may skip ahead); going back
 * starts over from the first item. */
static cg_jv *lazy_item(cg_arena *a, void *ctx, size_t i) {
    lazy_src *s = ctx;
    if (i < s->next || i == 0) {
        s->next = 0;
        s->pos = s->start;
        s->mark = s->start;
    }
    if (i > s->next) {
        cg_arena skip;
        cg_arena_init(&skip, 0);
        while (s->next < i) {
            next_item(s, &skip);
            cg_arena_reset(&skip);
        }
        cg_arena_free(&skip);
    }
    return next_item(s, a);
}

/* ---- the parse ---- */

/* Routes (from the root) of the arrays cg_evidence_to_json_lazy streams. */
static const char *const lazy_routes[][5] = {
    {"graph", "spans"},
    {"graph", "edges"},
    {"graph", "tensors"},
    {"graph", "gradients"},
    {"tensor_stats"},
    {"timing", "device_spans"},
    {"timing", "device_clocks"},
    {"memory", "logical", "peak", "live_allocations"},
    {"memory", "logical", "timeline"},
    {"memory", "logical", "lifetimes"},
    {"memory", "physical", "timeline"},
};

static bool want_lazy(void *ctx, const char *const *path, size_t depth) {
    (void)ctx;
    for (size_t r = 0; r < sizeof lazy_routes / sizeof lazy_routes[0]; r++) {
        size_t k = 0;
        while (k < depth && lazy_routes[r][k] && path[k] && !strcmp(path[k], lazy_routes[r][k])) k++;
        if (k == depth && k < 5 && !lazy_routes[r][k]) return true;
    }
    return false;
}

static void progress(void *ctx, size_t done) {
    cg_evidence_file *f = ctx;
    release(f, &f->released, done, false);
}

static cg_jv *make_lazy(void *ctx, cg_arena *a, size_t start, size_t end, size_t n) {
    lazy_src *s = cg_arena_zalloc(a, sizeof *s);
    s->f = ctx;
    s->start = s->pos = s->mark = start;
    s->end = end;
    s->n = n;
    return cg_jv_lazy_arr(a, n, lazy_item, s);
}

cg_jv *cg_evidence_file_parse(cg_evidence_file *f, cg_arena *a, const cg_evidence_read_limits *lim, cg_error *err) {
    cg_evidence_read_limits def;
    if (!lim) {
        cg_evidence_read_limits_default(&def);
        lim = &def;
    }
    f->json = lim->json;
    f->released = 0;
    cg_json_hook hook = {want_lazy, progress, make_lazy, lim->max_item_bytes, lim->max_tree_bytes, f};
    cg_jv *v = cg_json_parse_hooked(a, f->text, f->len, &lim->json, &hook, err);
    if (f->map) (void)madvise(f->map, f->len, MADV_DONTNEED); /* the tree holds copies */
    return v;
}
