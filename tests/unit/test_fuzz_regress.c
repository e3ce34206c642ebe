/* Deterministic fuzz regression (part of make test, ASan+UBSan in test-asan).
 *
 * For every fuzz target (tests/fuzz/fuzz_<target>.c) this replays each file of
 * tests/fuzz/corpus/<target>/ and tests/fuzz/crashes/<target>/ through the same
 * entry point libFuzzer uses (cg_fuzz_<target>, tests/support/fuzz_entry_*.c),
 * then a fixed number of deterministic mutants of the seeds (xorshift64 PRNG
 * with a fixed seed: bit flips, truncation, splicing two seeds, duplicated and
 * swapped lines, huge numbers, deep nesting, deleted ranges, JSON
 * metacharacters, long strings). The entry points abort on a crash or a
 * violated invariant; the SIGABRT handler names the input and writes a failing
 * mutant to $CG_BINARY_DIR/fuzz-regress-<target>.bin so it can be replayed
 * with the libFuzzer binary and kept under tests/fuzz/crashes/<target>/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"
#include "fuzz_entry.h"

typedef int (*fuzz_fn)(const uint8_t *, size_t);

typedef struct target {
    const char *name;
    fuzz_fn fn;
    unsigned mutants; /* deterministic mutants per run */
} target;

static const target targets[] = {
    {"json", cg_fuzz_json, 8000},
    {"trace", cg_fuzz_trace, 4000},
    {"bundle_manifest", cg_fuzz_bundle_manifest, 3000},
    {"signature", cg_fuzz_signature, 2000},
    {"archive", cg_fuzz_archive, 1500},
    {"campaign", cg_fuzz_campaign, 2000},
};

/* ---- failure reporting ----
 * Before each input its name is written (one pwrite, fixed 512-byte record) to
 * $CG_BINARY_DIR/fuzz-regress-<target>.name, removed when the target passes:
 * a sanitizer report may end the process with _exit (UBSan does), so the file,
 * not a handler, is what survives. On SIGABRT the handler also prints the name
 * and writes the input to fuzz-regress-<target>.bin. Mutants are deterministic:
 * CG_FUZZ_REGRESS_SAVE=<n> writes mutant #n of every target to that .bin file
 * without running anything else, to replay it with tests/fuzz binaries.
 * Soak runs: CG_FUZZ_REGRESS_SCALE=<k> runs k times the mutants (other seeds of
 * the same generator) and CG_FUZZ_REGRESS_ONLY=<target> skips the others. */
static char current_name[512];
static const uint8_t *current_data;
static size_t current_size;
static char dump_path[1024], name_path[1100];
static int name_fd = -1;

static void save(const char *path, const void *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const char *p = data;
    while (size) {
        ssize_t w = write(fd, p, size);
        if (w <= 0) break;
        p += w;
        size -= (size_t)w;
    }
    close(fd);
}

static void on_abort(int sig) {
    (void)sig;
    static const char pre[] = "\nfuzz regression failed on input: ";
    ssize_t w = write(2, pre, sizeof pre - 1);
    w = write(2, current_name, strlen(current_name));
    if (current_data) {
        save(dump_path, current_data, current_size);
        static const char saved[] = "\n  input saved to ";
        w = write(2, saved, sizeof saved - 1);
        w = write(2, dump_path, strlen(dump_path));
    }
    w = write(2, "\n", 1);
    (void)w;
    signal(SIGABRT, SIG_DFL);
    raise(SIGABRT);
}

static void run_one(const target *t, const char *name, const uint8_t *data, size_t size) {
    memset(current_name, ' ', sizeof current_name);
    int n = snprintf(current_name, sizeof current_name - 1, "%s: %s", t->name, name);
    if (name_fd >= 0) {
        current_name[n] = '\n';
        ssize_t w = pwrite(name_fd, current_name, sizeof current_name - 1, 0);
        (void)w;
    }
    current_name[n] = '\0';
    current_data = data;
    current_size = size;
    t->fn(data, size);
    current_data = NULL;
}

/* ---- seeds ---- */
typedef struct seed {
    char *name;
    uint8_t *data;
    size_t len;
} seed;

typedef struct seeds {
    seed *v;
    size_t n, cap;
} seeds;

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Loads every regular file of dir (sorted by name) into s; a missing dir adds nothing. */
static void load_dir(seeds *s, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    if (n > 1) qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        char *p = cg_path_join(dir, names[i]);
        if (cg_is_regular_nofollow(p)) {
            cg_error err;
            size_t len = 0;
            char *data = cg_read_file(p, 0, &len, &err);
            if (!data) fail_msg("%s: %s", p, err.msg);
            if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 64;
                s->v = realloc(s->v, s->cap * sizeof *s->v);
                assert_non_null(s->v);
            }
            s->v[s->n++] = (seed){p, (uint8_t *)data, len};
            p = NULL;
        }
        free(p);
        free(names[i]);
    }
    free(names);
}

static void seeds_free(seeds *s) {
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].data);
    }
    free(s->v);
}

static char *fuzz_dir(const char *kind, const char *target_name) {
    const char *src = getenv("CG_SOURCE_DIR");
    char *base = cg_path_join(src ? src : "..", "tests/fuzz");
    char *k = cg_path_join(base, kind);
    char *d = cg_path_join(k, target_name);
    free(base);
    free(k);
    return d;
}

/* ---- deterministic mutations ---- */
static uint64_t rng;
static uint64_t rnd(void) {
    uint64_t x = rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng = x;
}
static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static void insert(cg_buf *b, size_t pos, const char *s, size_t n) {
    cg_buf_reserve(b, n + 1);
    memmove(b->data + pos + n, b->data + pos, b->len - pos);
    memcpy(b->data + pos, s, n);
    b->len += n;
}

static void erase(cg_buf *b, size_t pos, size_t n) {
    memmove(b->data + pos, b->data + pos + n, b->len - pos - n);
    b->len -= n;
}

/* [start, end) of the line containing pos (end includes the '\n' if any). */
static void line_at(const cg_buf *b, size_t pos, size_t *start, size_t *end) {
    size_t s = pos, e = pos;
    while (s > 0 && b->data[s - 1] != '\n') s--;
    while (e < b->len && b->data[e] != '\n') e++;
    if (e < b->len) e++;
    *start = s;
    *end = e;
}

static const char *const huge[] = {"18446744073709551615", "18446744073709551616", "-9223372036854775808",
                                   "-9223372036854775809", "1e999", "-1e999", "99999999999999999999999999",
                                   "4294967296", "0", "-1", "1.7976931348623157e308", "5e-324", "-0.0"};
static const char *const tokens[] = {"\"", "\\", "\\u0000", "\\ud800", "{", "}", "[", "]", ",", ":", "null",
                                     "true", "\n", "\r\n", "\xff", "\xc3", "-", "0", " ", "\"kind\":\"span_start\"",
                                     "\"\":", "/..", "../", "\x00"};

static void mutate(cg_buf *b, const seeds *s) {
    const seed *src = &s->v[below(s->n)];
    cg_buf_reset(b);
    cg_buf_append(b, (const char *)src->data, src->len);
    unsigned rounds = 1 + (unsigned)below(4);
    for (unsigned r = 0; r < rounds; r++) {
        size_t len = b->len, pos = below(len + 1);
        switch (below(11)) {
        case 0: /* bit flips */
            for (unsigned k = 0, n = 1 + (unsigned)below(4); k < n && len; k++)
                b->data[below(len)] ^= (char)(1u << below(8));
            break;
        case 1: /* truncation */
            b->len = pos;
            break;
        case 2: { /* splice: head of this, tail of another seed */
            const seed *o = &s->v[below(s->n)];
            size_t from = below(o->len + 1);
            b->len = pos;
            cg_buf_append(b, (const char *)o->data + from, o->len - from);
            break;
        }
        case 3: { /* duplicate a line (up to 3 copies) */
            size_t ls, le;
            if (!len) break;
            line_at(b, below(len), &ls, &le);
            size_t n = le - ls;
            if (!n || n > 65536) break;
            char *copy = malloc(n);
            memcpy(copy, b->data + ls, n);
            for (unsigned k = 0, c = 1 + (unsigned)below(3); k < c; k++) insert(b, le, copy, n);
            free(copy);
            break;
        }
        case 4: { /* huge / boundary number: replace a digit run, or insert */
            const char *h = huge[below(sizeof huge / sizeof huge[0])];
            size_t p = pos;
            while (p < len && !(b->data[p] >= '0' && b->data[p] <= '9')) p++;
            if (p < len) {
                size_t e = p;
                while (e < len && b->data[e] >= '0' && b->data[e] <= '9') e++;
                erase(b, p, e - p);
                insert(b, p, h, strlen(h));
            } else {
                insert(b, pos, h, strlen(h));
            }
            break;
        }
        case 5: { /* deep nesting: wrap a value position in many brackets */
            size_t depth = 1 + below(200);
            char open = below(2) ? '[' : '{';
            cg_buf nest = CG_BUF_INIT;
            for (size_t k = 0; k < depth; k++) {
                if (open == '{') cg_buf_append(&nest, "{\"a\":", 5);
                else cg_buf_putc(&nest, '[');
            }
            cg_buf_append(&nest, "1", 1);
            for (size_t k = 0; k < depth; k++) cg_buf_putc(&nest, open == '{' ? '}' : ']');
            insert(b, pos, nest.data, nest.len);
            cg_buf_free(&nest);
            break;
        }
        case 6: { /* delete a range */
            size_t n = below(len - pos + 1);
            if (n > 64) n = 1 + below(64);
            if (pos + n > len) n = len - pos;
            erase(b, pos, n);
            break;
        }
        case 7: { /* JSON / path metacharacters */
            const char *t = tokens[below(sizeof tokens / sizeof tokens[0])];
            size_t n = t[0] ? strlen(t) : 1;
            insert(b, pos, t, n);
            break;
        }
        case 8: { /* swap two lines */
            if (!len) break;
            size_t as, ae, bs, be;
            line_at(b, below(len), &as, &ae);
            line_at(b, below(len), &bs, &be);
            if (as == bs) break;
            if (as > bs) {
                size_t t0 = as, t1 = ae;
                as = bs; ae = be; bs = t0; be = t1;
            }
            if (ae > bs) break;
            cg_buf tmp = CG_BUF_INIT;
            cg_buf_append(&tmp, b->data, as);
            cg_buf_append(&tmp, b->data + bs, be - bs);
            cg_buf_append(&tmp, b->data + ae, bs - ae);
            cg_buf_append(&tmp, b->data + as, ae - as);
            cg_buf_append(&tmp, b->data + be, len - be);
            cg_buf_reset(b);
            cg_buf_append(b, tmp.data, tmp.len);
            cg_buf_free(&tmp);
            break;
        }
        case 9: { /* long string content */
            size_t n = 1 + below(5000);
            char *s2 = malloc(n);
            memset(s2, "aZ/.\\"[below(5)], n);
            insert(b, pos, s2, n);
            free(s2);
            break;
        }
        default: { /* overwrite a byte with a random one */
            if (len) b->data[below(len)] = (char)rnd();
            break;
        }
        }
    }
}

/* ---- tests ---- */
static void replay_target(void **state) {
    const target *t = *state;
    const char *only = getenv("CG_FUZZ_REGRESS_ONLY");
    if (only && strcmp(only, t->name) != 0) skip();
    const char *scale_env = getenv("CG_FUZZ_REGRESS_SCALE");
    unsigned long scale = scale_env ? strtoul(scale_env, NULL, 10) : 1;
    if (scale < 1) scale = 1;
    unsigned long n_mutants = (unsigned long)t->mutants * scale;
    seeds s = {0};
    char *corpus = fuzz_dir("corpus", t->name);
    char *crashes = fuzz_dir("crashes", t->name);
    load_dir(&s, corpus);
    size_t n_corpus = s.n;
    load_dir(&s, crashes);
    assert_true(n_corpus > 0); /* every target has seeds */
    const char *bin = getenv("CG_BINARY_DIR");
    snprintf(dump_path, sizeof dump_path, "%s/fuzz-regress-%s.bin", bin ? bin : ".", t->name);
    snprintf(name_path, sizeof name_path, "%s.name", dump_path);
    name_fd = open(name_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    for (size_t i = 0; i < s.n; i++) run_one(t, s.v[i].name, s.v[i].data, s.v[i].len);
    /* the empty input and a lone byte are inputs too */
    run_one(t, "(empty)", (const uint8_t *)"", 0);
    run_one(t, "(one NUL byte)", (const uint8_t *)"\0", 1);

    rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)strlen(t->name) * 0x100000001B3ull;
    cg_buf m = CG_BUF_INIT;
    const char *save_env = getenv("CG_FUZZ_REGRESS_SAVE");
    long save_index = save_env ? strtol(save_env, NULL, 10) : -1;
    for (unsigned long i = 0; i < n_mutants; i++) {
        mutate(&m, &s);
        if (save_index >= 0) {
            if ((unsigned long)save_index == i) save(dump_path, m.data ? m.data : "", m.len);
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "mutant #%lu", i);
        run_one(t, name, (const uint8_t *)(m.data ? m.data : ""), m.len);
    }
    cg_buf_free(&m);
    close(name_fd);
    name_fd = -1;
    unlink(name_path);
    print_message("%s: replayed %zu corpus and %zu crash files, %lu mutants\n", t->name, n_corpus, s.n - n_corpus,
                  n_mutants);
    seeds_free(&s);
    free(corpus);
    free(crashes);
}

int main(void) {
    signal(SIGABRT, on_abort);
    struct CMUnitTest tests[sizeof targets / sizeof targets[0]];
    static char names[sizeof targets / sizeof targets[0]][64];
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        snprintf(names[i], sizeof names[i], "fuzz_regress_%s", targets[i].name);
        tests[i] = (struct CMUnitTest){names[i], replay_target, NULL, NULL, (void *)&targets[i]};
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
