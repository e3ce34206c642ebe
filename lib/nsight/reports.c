/* reports.c — header normalization, column aliases, the number rule and the
 * normalization of the five `nsys stats` reports, as parse_summary and
 * parse_timeline of the crate's src/nsight.rs (65b3678d) do them. A report
 * either parses completely or contributes no rows: the first failure, in row
 * order, aborts it with the crate's message, which the loader turns into one
 * diagnostic. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "nsight/nsight_internal.h"

char *cg_nsi_normalize_header(cg_arena *a, const char *h) {
    size_t b, e;
    cg_str_trim_span(h, strlen(h), &b, &e);
    char *out = cg_arena_alloc(a, e - b + 1);
    size_t n = 0;
    for (size_t i = b; i < e; i++) {
        unsigned char c = (unsigned char)h[i];
        if (c == '(' || c == ')' || c == '%') continue;
        if (c == ' ' || c == '-' || c == '/') c = '_';
        else if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
        out[n++] = (char)c;
    }
    size_t s = 0;
    while (s < n && out[s] == '_') s++;
    while (n > s && out[n - 1] == '_') n--;
    memmove(out, out + s, n - s);
    out[n - s] = '\0';
    return out;
}

/* Rust's f64::from_str grammar (decimal digits, optional fraction and
 * exponent, or inf/infinity/nan in any case, optional sign). */
static bool float_syntax(const char *s, bool *special) {
    *special = false;
    if (*s == '+' || *s == '-') s++;
    if (strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0 || strcasecmp(s, "nan") == 0) {
        *special = true;
        return true;
    }
    size_t digits = 0;
    while (isdigit((unsigned char)*s)) s++, digits++;
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s)) s++, digits++;
    }
    if (digits == 0) return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        size_t ed = 0;
        while (isdigit((unsigned char)*s)) s++, ed++;
        if (ed == 0) return false;
    }
    return *s == '\0';
}

/* u64::from_str: an optional '+', then decimal digits only, no overflow. */
static bool u64_syntax(const char *s, uint64_t *out) {
    const char *d = *s == '+' ? s + 1 : s;
    if (!*d) return false;
    for (const char *p = d; *p; p++)
        if (!isdigit((unsigned char)*p)) return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(d, &end, 10);
    if (errno != 0 || !end || *end) return false;
    *out = (uint64_t)v;
    return true;
}

static int number_error(cg_error *err, const char *what, const char *label, const char *cleaned) {
    cg_buf q = CG_BUF_INIT;
    cg_rust_debug_str(&q, cleaned);
    cg_buf_putc(&q, '\0');
    cg_err_set(err, CG_EPARSE, "%s %s value %s", what, label, q.data);
    cg_buf_free(&q);
    return -1;
}

int cg_nsi_parse_number(const char *raw, const char *label, bool *present, uint64_t *out, cg_error *err) {
    *present = false;
    *out = 0;
    if (!raw) return 0;
    /* trim, then drop thousands separators */
    size_t b, e;
    cg_str_trim_span(raw, strlen(raw), &b, &e);
    char stackbuf[128];
    char *buf = e - b < sizeof stackbuf ? stackbuf : malloc(e - b + 1);
    if (!buf) return cg_err_set(err, CG_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = b; i < e; i++)
        if (raw[i] != ',') buf[n++] = raw[i];
    buf[n] = '\0';
    int rc = 0;
    bool special;
    double v = 0.0;
    if (n == 0) {
        /* absent */
    } else if (u64_syntax(buf, out)) {
        *present = true;
    } else if (!float_syntax(buf, &special)) {
        rc = number_error(err, "invalid", label, buf);
    } else {
        const char *q = buf + (buf[0] == '+' || buf[0] == '-');
        if (special) v = (buf[0] == '-' ? -1.0 : 1.0) * ((q[0] == 'n' || q[0] == 'N') ? NAN : INFINITY);
        else v = strtod(buf, NULL);
        if (!isfinite(v)) rc = number_error(err, "non-finite", label, buf);
        else if (signbit(v)) rc = number_error(err, "negative", label, buf);
        else if (v >= 18446744073709551616.0) rc = number_error(err, "overflowing", label, buf);
        else {
            *present = true;
            *out = (uint64_t)v; /* truncated toward zero */
        }
    }
    if (buf != stackbuf) cg_free(buf);
    return rc;
}

/* ---- column lookup ---- */

/* Normalized header names of a report. */
typedef struct cols {
    char **norm;
    size_t n;
} cols;

static bool has_header(const cols *c, const char *const *aliases) {
    for (size_t k = 0; aliases[k]; k++)
        for (size_t i = 0; i < c->n; i++)
            if (strcmp(c->norm[i], aliases[k]) == 0) return true;
    return false;
}

/* The crate's `field`: the first alias whose (first) column the record has;
 * NULL when none. The value is returned as written (not trimmed). */
static const char *field(const cols *c, const cg_nsi_csv_record *rec, const char *const *aliases) {
    for (size_t k = 0; aliases[k]; k++)
        for (size_t i = 0; i < c->n; i++)
            if (strcmp(c->norm[i], aliases[k]) == 0) {
                if (i < rec->n) return rec->fields[i];
                break;
            }
    return NULL;
}

/* reader.headers(): the first record, which must be UTF-8. */
static int cols_init(cg_arena *a, const cg_nsi_csv *csv, cols *c, cg_error *err) {
    c->n = csv->n_records ? csv->records[0].n : 0;
    c->norm = cg_arena_alloc(a, (c->n ? c->n : 1) * sizeof(char *));
    if (csv->n_records && cg_nsi_csv_utf8(&csv->records[0], err) != 0) return -1;
    for (size_t i = 0; i < c->n; i++) c->norm[i] = cg_nsi_normalize_header(a, csv->records[0].fields[i]);
    return 0;
}

static const char *const A_NAME[] = {"name", "operation", "range", "kernel_name", NULL};
static const char *const A_TOTAL[] = {"total_time_ns", "total_ns", NULL};
static const char *const A_COUNT[] = {"instances", "num_calls", "operations", "count", NULL};
static const char *const A_AVG[] = {"avg_ns", "average_ns", NULL};
static const char *const A_MIN[] = {"min_ns", "minimum_ns", NULL};
static const char *const A_MAX[] = {"max_ns", "maximum_ns", NULL};
static const char *const A_CATEGORY[] = {"category", NULL};
static const char *const A_PROJ_START_ORIG[] = {"orig_start_ns", "orig_start", "start_ns", "start", NULL};
static const char *const A_PROJ_DUR_ORIG[] = {"orig_duration_ns", "orig_duration", "duration_ns",
                                              "duration", "dur_ns", NULL};
static const char *const A_PROJ_START[] = {"projected_start_ns", "projected_start", "proj_start_ns", NULL};
static const char *const A_PROJ_DUR[] = {"projected_duration_ns", "projected_duration", "proj_dur_ns",
                                         NULL};
static const char *const A_GPU_START[] = {"start_ns", "start", NULL};
static const char *const A_GPU_DUR[] = {"duration_ns", "duration", "dur_ns", NULL};
static const char *const A_DEVICE[] = {"device", "device_id", NULL};
static const char *const A_CONTEXT[] = {"context", "context_id", "ctx", NULL};
static const char *const A_STREAM[] = {"stream", "stream_id", "strm", NULL};
static const char *const A_CORR[] = {"correlation_id", "corrid", "corr_id", NULL};
static const char *const A_OPS[] = {"num_gpu_ops", "numgpuops", "gpu_operations", NULL};

/* The row's name, trimmed (NULL when blank: the row is skipped). */
static const char *row_name(cg_arena *a, const cols *c, const cg_nsi_csv_record *rec) {
    const char *s = field(c, rec, A_NAME);
    if (!s) return NULL;
    size_t b, e;
    cg_str_trim_span(s, strlen(s), &b, &e);
    return b == e ? NULL : cg_arena_strndup(a, s + b, e - b);
}

static const char *str_field(cg_arena *a, const cols *c, const cg_nsi_csv_record *rec, const char *const *aliases) {
    const char *s = field(c, rec, aliases);
    return s ? cg_arena_strdup(a, s) : NULL;
}

/* number(): absent or empty is 0. */
static int num(const cols *c, const cg_nsi_csv_record *rec, const char *const *aliases, const char *label,
               uint64_t *out, cg_error *err) {
    bool present;
    return cg_nsi_parse_number(field(c, rec, aliases), label, &present, out, err);
}

/* required_number(): absent or empty is an error. */
static int required(const cols *c, const cg_nsi_csv_record *rec, const char *const *aliases, const char *label,
                    uint64_t *out, cg_error *err) {
    bool present;
    if (cg_nsi_parse_number(field(c, rec, aliases), label, &present, out, err) != 0) return -1;
    if (!present) return cg_err_set(err, CG_EPARSE, "missing required %s value", label);
    return 0;
}

static int summary_row(cg_arena *a, const cols *c, const cg_nsi_csv_record *rec, cg_nsight_summary_row *row,
                       cg_error *err) {
    if (required(c, rec, A_TOTAL, "total_ns", &row->total_ns, err) != 0 ||
        num(c, rec, A_COUNT, "count", &row->count, err) != 0 ||
        num(c, rec, A_AVG, "average_ns", &row->average_ns, err) != 0 ||
        num(c, rec, A_MIN, "minimum_ns", &row->minimum_ns, err) != 0 ||
        num(c, rec, A_MAX, "maximum_ns", &row->maximum_ns, err) != 0)
        return -1;
    row->category = str_field(a, c, rec, A_CATEGORY);
    return 0;
}

int cg_nsi_parse_summary(cg_arena *a, const cg_nsi_csv *csv, const char *source_file,
                         cg_nsight_summary_row **rows, size_t *n, size_t *cap, cg_error *err) {
    cols c;
    if (cols_init(a, csv, &c, err) != 0) return -1;
    if (!has_header(&c, A_NAME)) return cg_err_set(err, CG_EPARSE, "missing operation/name column");
    if (!has_header(&c, A_TOTAL)) return cg_err_set(err, CG_EPARSE, "missing total-time nanoseconds column");
    size_t ln = *n, lcap = *cap;
    cg_nsight_summary_row *lr = *rows;
    for (size_t r = 1; r < csv->n_records; r++) {
        const cg_nsi_csv_record *rec = &csv->records[r];
        if (cg_nsi_csv_utf8(rec, err) != 0) return -1;
        const char *name = row_name(a, &c, rec);
        if (!name) continue; /* rows with a blank name are skipped */
        cg_nsight_summary_row row;
        memset(&row, 0, sizeof row);
        row.name = name;
        row.source_file = source_file;
        if (summary_row(a, &c, rec, &row, err) != 0) return -1;
        CG_NSI_PUSH(a, lr, ln, lcap, row);
    }
    *rows = lr;
    *n = ln;
    *cap = lcap;
    return 0;
}

/* The header checks of parse_timeline, in the crate's order. */
static int timeline_headers(const cols *c, bool nvtx, cg_error *err) {
    if (!has_header(c, A_NAME)) return cg_err_set(err, CG_EPARSE, "missing operation/name column");
    if (!has_header(c, nvtx ? A_PROJ_START_ORIG : A_GPU_START) || !has_header(c, nvtx ? A_PROJ_DUR_ORIG : A_GPU_DUR))
        return cg_err_set(err, CG_EPARSE, "missing start/duration nanoseconds columns");
    if (nvtx && (!has_header(c, A_PROJ_START) || !has_header(c, A_PROJ_DUR)))
        return cg_err_set(err, CG_EPARSE, "missing projected start/duration nanoseconds columns");
    return 0;
}

/* One timeline row after its name: times (a zero duration fails the report),
 * projected times (required and positive for NVTX ranges), keys as written,
 * the GPU operation count. */
static int timeline_row(cg_arena *a, const cols *c, const cg_nsi_csv_record *rec, bool nvtx,
                        cg_nsight_timeline_row *row, cg_error *err) {
    if (required(c, rec, nvtx ? A_PROJ_START_ORIG : A_GPU_START, "start_ns", &row->start_ns, err) != 0 ||
        required(c, rec, nvtx ? A_PROJ_DUR_ORIG : A_GPU_DUR, "duration_ns", &row->duration_ns, err) != 0)
        return -1;
    if (row->duration_ns == 0) return cg_err_set(err, CG_EPARSE, "timeline row `%s` has zero duration", row->name);
    if (cg_nsi_parse_number(field(c, rec, A_PROJ_START), "projected_start_ns", &row->has_projected_start,
                            &row->projected_start_ns, err) != 0 ||
        cg_nsi_parse_number(field(c, rec, A_PROJ_DUR), "projected_duration_ns", &row->has_projected_duration,
                            &row->projected_duration_ns, err) != 0)
        return -1;
    if (nvtx && (!row->has_projected_start || !row->has_projected_duration || row->projected_duration_ns == 0))
        return cg_err_set(err, CG_EPARSE, "projected timeline row `%s` has invalid projected timing", row->name);
    row->semantic_key = nvtx ? row->name : NULL;
    row->device = str_field(a, c, rec, A_DEVICE);
    row->context = str_field(a, c, rec, A_CONTEXT);
    row->stream = str_field(a, c, rec, A_STREAM);
    row->correlation_id = str_field(a, c, rec, A_CORR);
    return cg_nsi_parse_number(field(c, rec, A_OPS), "gpu_operations", &row->has_gpu_operations,
                               &row->gpu_operations, err);
}

int cg_nsi_parse_timeline(cg_arena *a, const cg_nsi_csv *csv, bool nvtx, const char *source_file,
                          cg_nsight_timeline_row **rows, size_t *n, size_t *cap, cg_error *err) {
    cols c;
    if (cols_init(a, csv, &c, err) != 0 || timeline_headers(&c, nvtx, err) != 0) return -1;
    size_t ln = *n, lcap = *cap;
    cg_nsight_timeline_row *lr = *rows;
    for (size_t r = 1; r < csv->n_records; r++) {
        const cg_nsi_csv_record *rec = &csv->records[r];
        if (cg_nsi_csv_utf8(rec, err) != 0) return -1;
        const char *name = row_name(a, &c, rec);
        if (!name) continue;
        cg_nsight_timeline_row row;
        memset(&row, 0, sizeof row);
        row.name = name;
        row.is_nvtx = nvtx;
        row.source_file = source_file;
        if (timeline_row(a, &c, rec, nvtx, &row, err) != 0) return -1;
        CG_NSI_PUSH(a, lr, ln, lcap, row);
    }
    *rows = lr;
    *n = ln;
    *cap = lcap;
    return 0;
}
