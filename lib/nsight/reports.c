/* reports.c — header normalization, column aliases, the number rule and the
 * normalization of the five `nsys stats` reports (§10). A report either parses
 * completely or contributes no rows: the first malformed value aborts it with
 * an error that the loader turns into one diagnostic. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nsight/nsight_internal.h"

char *cg_nsi_normalize_header(cg_arena *a, const char *h) {
    size_t len = strlen(h);
    size_t b = 0, e = len;
    while (b < e && isspace((unsigned char)h[b])) b++;
    while (e > b && isspace((unsigned char)h[e - 1])) e--;
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

int cg_nsi_parse_number(const char *raw, bool *present, uint64_t *out, cg_error *err) {
    *present = false;
    *out = 0;
    size_t len = strlen(raw);
    char stackbuf[128];
    char *buf = len < sizeof stackbuf ? stackbuf : malloc(len + 1);
    if (!buf) return cg_err_set(err, CG_ENOMEM, "out of memory");
    /* trim, then drop thousands separators */
    size_t b = 0, e = len, n = 0;
    while (b < e && isspace((unsigned char)raw[b])) b++;
    while (e > b && isspace((unsigned char)raw[e - 1])) e--;
    for (size_t i = b; i < e; i++)
        if (raw[i] != ',') buf[n++] = raw[i];
    buf[n] = '\0';
    int rc = 0;
    if (n == 0) goto out;
    /* integer (u64::from_str accepts an optional '+') */
    const char *d = buf[0] == '+' ? buf + 1 : buf;
    bool all_digits = *d != '\0';
    for (const char *p = d; *p; p++)
        if (!isdigit((unsigned char)*p)) {
            all_digits = false;
            break;
        }
    if (all_digits) {
        errno = 0;
        char *end = NULL;
        unsigned long long v = strtoull(d, &end, 10);
        if (errno == 0 && end && *end == '\0') {
            *present = true;
            *out = (uint64_t)v;
            goto out;
        }
    }
    bool special;
    if (!float_syntax(buf, &special)) {
        rc = cg_err_set(err, CG_EPARSE, "not a number");
        goto out;
    }
    double v;
    if (special) {
        const char *q = buf + (buf[0] == '+' || buf[0] == '-');
        v = (buf[0] == '-' ? -1.0 : 1.0) * ((q[0] == 'n' || q[0] == 'N') ? NAN : INFINITY);
    } else {
        v = strtod(buf, NULL);
    }
    if (!isfinite(v)) {
        rc = cg_err_set(err, CG_EPARSE, "not a finite number");
    } else if (v < 0.0) {
        rc = cg_err_set(err, CG_EPARSE, "negative number");
    } else if (v >= 18446744073709551616.0) {
        rc = cg_err_set(err, CG_EPARSE, "number out of range for u64");
    } else {
        *present = true;
        *out = (uint64_t)v; /* truncated toward zero */
    }
out:
    if (buf != stackbuf) free(buf);
    return rc;
}

/* ---- column lookup ---- */

typedef struct cols {
    char **norm; /* normalized header names */
    size_t n;
} cols;

static int col_find(const cols *c, const char *const *aliases) {
    for (size_t k = 0; aliases[k]; k++)
        for (size_t i = 0; i < c->n; i++)
            if (strcmp(c->norm[i], aliases[k]) == 0) return (int)i;
    return -1;
}

static void cols_init(cg_arena *a, const cg_nsi_csv *csv, cols *c) {
    c->n = csv->n_records ? csv->n_columns : 0;
    c->norm = cg_arena_alloc(a, (c->n ? c->n : 1) * sizeof(char *));
    for (size_t i = 0; i < c->n; i++) c->norm[i] = cg_nsi_normalize_header(a, csv->fields[0][i]);
}

static int missing_column(cg_error *err, const char *family, const char *const *aliases) {
    char list[256];
    size_t off = 0;
    list[0] = '\0';
    for (size_t k = 0; aliases[k] && off < sizeof list; k++) {
        int w = snprintf(list + off, sizeof list - off, "%s%s", k ? ", " : "", aliases[k]);
        if (w < 0) break;
        off += (size_t)w;
    }
    return cg_err_set(err, CG_EPARSE, "missing required column %s (one of: %s)", family, list);
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

/* Parses column `col` of record r as a number; col < 0 => absent. */
static int num_at(const cg_nsi_csv *csv, const cols *c, size_t r, int col, bool *present,
                  uint64_t *out, cg_error *err) {
    *present = false;
    *out = 0;
    if (col < 0) return 0;
    const char *raw = csv->fields[r][col];
    if (cg_nsi_parse_number(raw, present, out, err) != 0)
        return cg_err_context(err, "line %zu: column %s: value \"%s\"", csv->lines[r], c->norm[col],
                              raw);
    return 0;
}

/* Trimmed field as an arena string; NULL when absent or empty after trimming. */
static const char *str_at(cg_arena *a, const cg_nsi_csv *csv, size_t r, int col) {
    if (col < 0) return NULL;
    const char *s = csv->fields[r][col];
    size_t len = strlen(s), b = 0, e = len;
    while (b < e && isspace((unsigned char)s[b])) b++;
    while (e > b && isspace((unsigned char)s[e - 1])) e--;
    if (b == e) return NULL;
    return cg_arena_strndup(a, s + b, e - b);
}

int cg_nsi_parse_summary(cg_arena *a, const cg_nsi_csv *csv, const char *source_file,
                         cg_nsight_summary_row **rows, size_t *n, size_t *cap, cg_error *err) {
    cols c;
    cols_init(a, csv, &c);
    int ci_name = col_find(&c, A_NAME), ci_total = col_find(&c, A_TOTAL);
    if (ci_name < 0) return missing_column(err, "name", A_NAME);
    if (ci_total < 0) return missing_column(err, "total", A_TOTAL);
    int ci_count = col_find(&c, A_COUNT), ci_avg = col_find(&c, A_AVG), ci_min = col_find(&c, A_MIN),
        ci_max = col_find(&c, A_MAX), ci_cat = col_find(&c, A_CATEGORY);
    size_t ln = *n, lcap = *cap;
    cg_nsight_summary_row *lr = *rows;
    for (size_t r = 1; r < csv->n_records; r++) {
        const char *name = str_at(a, csv, r, ci_name);
        if (!name) continue; /* rows with an empty name are skipped */
        cg_nsight_summary_row row;
        memset(&row, 0, sizeof row);
        row.name = name;
        row.source_file = source_file;
        bool p;
        if (num_at(csv, &c, r, ci_total, &p, &row.total_ns, err) != 0) return -1;
        if (!p)
            return cg_err_set(err, CG_EPARSE, "line %zu: missing required value in column %s",
                              csv->lines[r], c.norm[ci_total]);
        if (num_at(csv, &c, r, ci_count, &p, &row.count, err) != 0) return -1;
        if (num_at(csv, &c, r, ci_avg, &p, &row.average_ns, err) != 0) return -1;
        if (num_at(csv, &c, r, ci_min, &p, &row.minimum_ns, err) != 0) return -1;
        if (num_at(csv, &c, r, ci_max, &p, &row.maximum_ns, err) != 0) return -1;
        row.category = str_at(a, csv, r, ci_cat);
        CG_NSI_PUSH(a, lr, ln, lcap, row);
    }
    *rows = lr;
    *n = ln;
    *cap = lcap;
    return 0;
}

int cg_nsi_parse_timeline(cg_arena *a, const cg_nsi_csv *csv, bool nvtx, const char *source_file,
                          cg_nsight_timeline_row **rows, size_t *n, size_t *cap, cg_error *err) {
    cols c;
    cols_init(a, csv, &c);
    int ci_name = col_find(&c, A_NAME);
    if (ci_name < 0) return missing_column(err, "name", A_NAME);
    const char *const *a_start = nvtx ? A_PROJ_START_ORIG : A_GPU_START;
    const char *const *a_dur = nvtx ? A_PROJ_DUR_ORIG : A_GPU_DUR;
    int ci_start = col_find(&c, a_start), ci_dur = col_find(&c, a_dur);
    /* (inferred) the start and duration headers are required for both
     * timelines: every row needs them, so a report without them has no rows. */
    if (ci_start < 0) return missing_column(err, "start", a_start);
    if (ci_dur < 0) return missing_column(err, "duration", a_dur);
    int ci_pstart = -1, ci_pdur = -1, ci_ops = -1;
    if (nvtx) {
        ci_pstart = col_find(&c, A_PROJ_START);
        ci_pdur = col_find(&c, A_PROJ_DUR);
        if (ci_pstart < 0) return missing_column(err, "projected start", A_PROJ_START);
        if (ci_pdur < 0) return missing_column(err, "projected duration", A_PROJ_DUR);
        ci_ops = col_find(&c, A_OPS);
    }
    int ci_dev = col_find(&c, A_DEVICE), ci_ctx = col_find(&c, A_CONTEXT),
        ci_strm = col_find(&c, A_STREAM), ci_corr = col_find(&c, A_CORR);
    size_t ln = *n, lcap = *cap;
    cg_nsight_timeline_row *lr = *rows;
    for (size_t r = 1; r < csv->n_records; r++) {
        const char *name = str_at(a, csv, r, ci_name);
        if (!name) continue;
        cg_nsight_timeline_row row;
        memset(&row, 0, sizeof row);
        row.name = name;
        row.is_nvtx = nvtx;
        row.source_file = source_file;
        bool has_start, has_dur, has_ps = false, has_pd = false;
        /* every numeric value of a kept-name row is validated before the row
         * filters below, so a malformed value always fails the report */
        if (num_at(csv, &c, r, ci_start, &has_start, &row.start_ns, err) != 0) return -1;
        if (num_at(csv, &c, r, ci_dur, &has_dur, &row.duration_ns, err) != 0) return -1;
        if (nvtx) {
            if (num_at(csv, &c, r, ci_pstart, &has_ps, &row.projected_start_ns, err) != 0) return -1;
            if (num_at(csv, &c, r, ci_pdur, &has_pd, &row.projected_duration_ns, err) != 0) return -1;
            if (num_at(csv, &c, r, ci_ops, &row.has_gpu_operations, &row.gpu_operations, err) != 0)
                return -1;
        }
        /* (inferred) rows failing a row requirement are skipped, not errors:
         * start present and duration > 0; for projected ranges also a
         * projected start and a projected duration > 0. */
        if (!has_start || !has_dur || row.duration_ns == 0) continue;
        if (nvtx) {
            if (!has_ps || !has_pd || row.projected_duration_ns == 0) continue;
            row.has_projected = true;
            row.semantic_key = name;
        }
        row.device = str_at(a, csv, r, ci_dev);
        row.context = str_at(a, csv, r, ci_ctx);
        row.stream = str_at(a, csv, r, ci_strm);
        row.correlation_id = str_at(a, csv, r, ci_corr);
        CG_NSI_PUSH(a, lr, ln, lcap, row);
    }
    *rows = lr;
    *n = ln;
    *cap = lcap;
    return 0;
}
