#include "cli_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/async_sink.h"
#include "base/buf.h"
#include "base/fs.h"
#include "base/writeback.h"

bool cli_is_flag(const char *arg, const char *flag, const char *alt) {
    return (flag && !strcmp(arg, flag)) || (alt && !strcmp(arg, alt));
}

/* clap's placeholder of a flag's value in messages ("--kind <KIND>"): the
 * crate's value_name where it sets one, else the upper-cased long name. */
static void flag_with_value(char *out, size_t size, const char *flag) {
    static const char *const names[][2] = {{"--output", "FILE"}, {"-o", "FILE"}, {"--label", "S"},
                                           {"--label-prefix", "S"}, {"--bundle", "DIR"},
                                           {"--nsight-dir", "DIR"}, {"--manifest", "FILE"},
                                           {"--baseline", "BUNDLE"}, {"--candidate", "BUNDLE"},
                                           {"--phase", "P"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(flag, names[i][0])) {
            snprintf(out, size, "%s <%s>", flag, names[i][1]);
            return;
        }
    size_t o = (size_t)snprintf(out, size, "%s <", flag);
    for (const char *c = flag + strspn(flag, "-"); *c && o + 2 < size; c++)
        out[o++] = *c >= 'a' && *c <= 'z' ? (char)(*c - 'a' + 'A') : *c == '-' ? '_' : *c;
    if (o + 2 <= size) {
        out[o++] = '>';
        out[o] = '\0';
    }
}

static int value_missing(const char *cmd, const char *flag) {
    char fv[128];
    flag_with_value(fv, sizeof fv, flag);
    return cli_usage_error(cmd, "The argument '%s' requires a value but none was supplied", fv);
}

int cli_take_value(int argc, char **argv, int *i, const char *flag, const char *alt, const char **value) {
    const char *a = argv[*i];
    size_t fl = strlen(flag);
    if (!strncmp(a, flag, fl) && a[fl] == '=') {
        *value = a + fl + 1;
        return 1;
    }
    if (!cli_is_flag(a, flag, alt)) return 0;
    if (*i + 1 >= argc) {
        value_missing(argv[0], flag);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

int cli_take_multi(int argc, char **argv, int *i, const char *flag, const char ***vals, int *n) {
    if (strcmp(argv[*i], flag) != 0) return 0;
    int start = *n;
    /* values run until the next argument that looks like a flag ('-' followed by
     * something), so `--candidate C -o F` stops before -o */
    while (*i + 1 < argc && !(argv[*i + 1][0] == '-' && argv[*i + 1][1] != '\0')) {
        const char **nv = realloc((void *)*vals, sizeof(char *) * (size_t)(*n + 1));
        if (!nv) return -1;
        *vals = nv;
        (*vals)[(*n)++] = argv[++*i];
    }
    if (*n == start) {
        value_missing(argv[0], flag);
        return -1;
    }
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    (void)cmd;
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n\nFor more information try '--help'\n", stderr);
    va_end(ap);
    return 2;
}

int cli_usage_unexpected(const char *cmd, const char *arg) {
    if (arg[0] == '-' && arg[1])
        return cli_usage_error(cmd, "Found argument '%s' which wasn't expected, or isn't valid in this context\n\n"
                                    "  If you tried to supply '%s' as a value rather than a flag, use '-- %s'",
                               arg, arg, arg);
    return cli_usage_error(cmd, "Found argument '%s' which wasn't expected, or isn't valid in this context", arg);
}

int cli_usage_missing(const char *cmd, const char *what) {
    return cli_usage_error(cmd, "The following required arguments were not provided:\n  %s", what);
}

/* What a Rust main returning anyhow's Err prints: "Error: " + the Debug chain. */
int cli_fail(const cg_error *err) {
    cg_buf b = CG_BUF_INIT;
    cg_buf_puts(&b, "Error: ");
    cg_err_write_chain(&b, err);
    cg_buf_putc(&b, '\n');
    fwrite(b.data, 1, b.len, stderr);
    cg_buf_free(&b);
    return 1;
}

int cli_failf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("Error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* A failed write to stdout: the io::Error alone, as `write_all(..)?` leaves it. */
static int stdout_fail(int e) {
    cg_error err;
    char text[256];
    cg_err_set(&err, cg_errcode_of_errno(e), "%s", cg_os_error_text(text, sizeof text, e));
    return cli_fail(&err);
}

/* The crate's write_output for a file: create_dir_all(parent) ("creating
 * PARENT"), then the file ("writing PATH"), each io::Error as its cause.
 * Returns the open descriptor, or -1 after printing the error. */
static int open_output(const char *out_path) {
    cg_error err;
    cg_err_clear(&err);
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", out_path);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        /* create_dir_all: an existing non-directory is EEXIST */
        if (cg_mkdir_p(parent, &err) != 0 || !cg_is_dir(parent)) {
            cg_err_os(&err, cg_is_dir(parent) || !cg_path_exists(parent) ? errno : EEXIST, "creating %s", parent);
            return cli_fail(&err), -1;
        }
    }
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) cg_err_os(&err, errno, "writing %s", out_path), cli_fail(&err);
    return fd;
}

static int write_fail(const char *out_path, int e) {
    cg_error err;
    cg_err_os(&err, e, "writing %s", out_path);
    return cli_fail(&err);
}

int cli_write_bytes(const char *out_path, const void *data, size_t len) {
    if (!out_path || !strcmp(out_path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) return stdout_fail(errno);
        return 0;
    }
    int fd = open_output(out_path);
    if (fd < 0) return 1;
    for (const char *p = data; len;) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            int e = errno;
            close(fd);
            return write_fail(out_path, e);
        }
        p += w;
        len -= (size_t)w;
    }
    return close(fd) != 0 ? write_fail(out_path, errno) : 0;
}

int cli_write_stream(const char *out_path, cli_producer produce, void *arg) {
    cg_error err;
    cg_err_clear(&err);
    bool to_stdout = !out_path || !strcmp(out_path, "-");
    if (to_stdout && fflush(stdout) != 0) return stdout_fail(errno);
    /* a file output streams to disk as it grows and leaves the page cache
     * behind it (base/writeback.h): a multi-gigabyte output is not read back */
    int fd = to_stdout ? STDOUT_FILENO : open_output(out_path);
    if (fd < 0) return 1;
    cg_wb_sink_ctx o;
    cg_wb_sink_init(&o, fd, to_stdout ? CG_WRITEBACK_OFF : CG_WRITEBACK_DROP_BEHIND);
    cg_async_sink *as = cg_async_sink_start(cg_wb_sink, &o); /* writes beside the production */
    int rc = produce(as ? cg_async_sink_put : cg_wb_sink, as ? (void *)as : &o, arg, &err);
    if (as && cg_async_sink_finish(as) != 0 && rc == 0) rc = -1;
    if (rc != 0 && o.out.err_no) rc = to_stdout ? stdout_fail(o.out.err_no) : write_fail(out_path, o.out.err_no);
    else if (rc != 0) rc = cli_fail(&err);
    if (!to_stdout && close(fd) != 0 && rc == 0) rc = write_fail(out_path, errno);
    return rc;
}

static int produce_json(cg_json_sink sink, void *sink_ctx, void *arg, cg_error *err) {
    (void)err;
    return cg_json_write_sink(arg, true, true, sink, sink_ctx);
}

/* Streams pretty JSON + "\n" through a bounded buffer (lazy arrays are produced
 * item by item), so memory does not grow with the document. */
int cli_write_json(const char *out_path, const cg_jv *v) {
    return cli_write_stream(out_path, produce_json, (void *)v);
}

cg_jv *cli_tool_json(cg_arena *a) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "package", cg_jv_str_nocopy(a, "candle-graph"));
    cg_jv_obj_put(a, o, "version", cg_jv_str_nocopy(a, CG_VERSION));
    return o;
}

/* byte order of two keys (short: compared in line, no memcmp call) */
static int member_cmp(const cg_jmember *x, const cg_jmember *y) {
    const unsigned char *p = (const unsigned char *)x->key, *q = (const unsigned char *)y->key;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    for (size_t i = 0; i < n; i++)
        if (p[i] != q[i]) return p[i] < q[i] ? -1 : 1;
    return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

static cg_jv *sorted_copy(cg_arena *a, const cg_jv *v);

/* Item i of a lazy array (ctx: the source lazy value), keys sorted. */
static cg_jv *sorted_item(cg_arena *a, void *ctx, size_t i) {
    const cg_jv *src = ctx;
    return sorted_copy(a, src->u.lazy.item(a, src->u.lazy.ctx, i));
}

/* v's members by key (a stable insertion sort: envelopes' objects are small),
 * each value sorted; v itself when nothing moved or changed */
static cg_jv *sorted_obj(cg_arena *a, const cg_jv *v) {
    size_t n = v->u.obj.n;
    const cg_jmember *src = v->u.obj.m;
    cg_jmember *m = NULL;
    for (size_t i = 0; i < n; i++) {
        cg_jv *val = sorted_copy(a, src[i].val);
        if (!m && (val != src[i].val || (i > 0 && member_cmp(&src[i - 1], &src[i]) > 0))) {
            m = cg_arena_alloc(a, sizeof *m * n);
            memcpy(m, src, sizeof *m * i);
        }
        if (!m) continue;
        cg_jmember x = {src[i].key, src[i].key_len, val};
        size_t j = i;
        for (; j > 0 && member_cmp(&m[j - 1], &x) > 0; j--) m[j] = m[j - 1];
        m[j] = x;
    }
    if (!m) return (cg_jv *)v;
    cg_jv *o = cg_jv_obj(a);
    o->u.obj.m = m;
    o->u.obj.n = o->u.obj.cap = n;
    return o;
}

static cg_jv *sorted_copy(cg_arena *a, const cg_jv *v) {
    if (v->type == CG_JLAZY) return cg_jv_lazy_arr(a, v->u.lazy.n, sorted_item, (void *)v);
    if (v->type == CG_JOBJ) return sorted_obj(a, v);
    if (v->type != CG_JARR) return (cg_jv *)v;
    cg_jv *o = NULL;
    for (size_t i = 0; i < v->u.arr.n; i++) {
        cg_jv *x = sorted_copy(a, v->u.arr.items[i]);
        if (!o && x != v->u.arr.items[i]) {
            o = cg_jv_arr(a);
            for (size_t k = 0; k < i; k++) cg_jv_arr_push(a, o, v->u.arr.items[k]);
        }
        if (o) cg_jv_arr_push(a, o, x);
    }
    return o ? o : (cg_jv *)v;
}

cg_jv *cli_jv_sorted(cg_arena *a, cg_jv *v) {
    if (!v) return cg_jv_null(a);
    return sorted_copy(a, v);
}
