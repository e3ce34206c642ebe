/* nsight.c — loading an Nsight directory into cg_nsight_evidence (status,
 * artifacts, reports, limits, coverage), shared helpers, and the
 * NsightEvidence JSON writer. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "nsight/nsight_internal.h"

/* ---- names ---- */

const char *cg_nsight_status_name(cg_nsight_status s) {
    switch (s) {
    case CG_NSIGHT_AVAILABLE: return "available";
    case CG_NSIGHT_UNAVAILABLE: return "unavailable";
    case CG_NSIGHT_FAILED: return "failed";
    }
    return "failed";
}

const char *cg_nsight_binding_name(cg_nsight_binding b) {
    switch (b) {
    case CG_NSIGHT_PARTIAL: return "partial";
    case CG_NSIGHT_BOUND: return "bound";
    case CG_NSIGHT_MISMATCH: return "mismatch";
    }
    return "mismatch";
}

const char *cg_nsight_corr_mode_name(cg_nsight_corr_mode m) {
    return m == CG_NSIGHT_CORR_NVTX_PROJECTED_RANGE ? "nvtx_projected_range" : "none";
}

static const char *const PATTERNS[CG_NSIGHT_REPORT_COUNT] = {
    "cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_mem_time_sum", "nvtx_gpu_proj_trace",
    "cuda_gpu_trace"};

const char *cg_nsight_report_pattern(cg_nsight_report r) {
    return (unsigned)r < CG_NSIGHT_REPORT_COUNT ? PATTERNS[r] : NULL;
}

void cg_nsight_limits_default(cg_nsight_limits *l) {
    l->max_csv_bytes = 256ull << 20;
    l->max_rows = 5000000;
    l->max_field_bytes = 1u << 20;
    l->max_columns = 1024;
    l->max_dir_entries = 65536;
    l->max_manifest_bytes = 16u << 20;
}

/* ---- helpers shared with the other files ---- */

void cg_nsi_diag(cg_arena *a, cg_nsight_evidence *ev, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char **items = (const char **)ev->diagnostics.items;
    size_t n = ev->diagnostics.n;
    CG_NSI_PUSH(a, items, n, ev->diag_cap, cg_arena_strdup(a, msg));
    ev->diagnostics.items = items;
    ev->diagnostics.n = n;
}

static int cmp_str_ptr(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

cg_strlist cg_nsi_sorted_set(cg_arena *a, const cg_strlist *in) {
    cg_strlist out = {NULL, 0};
    size_t n = in ? in->n : 0;
    const char **v = cg_arena_alloc(a, (n ? n : 1) * sizeof(char *));
    if (n) memcpy(v, in->items, n * sizeof(char *));
    qsort(v, n, sizeof *v, cmp_str_ptr);
    for (size_t i = 0; i < n; i++)
        if (out.n == 0 || strcmp(v[out.n - 1], v[i]) != 0) v[out.n++] = v[i];
    out.items = v;
    return out;
}

bool cg_nsi_set_contains(const cg_strlist *sorted, const char *s) {
    size_t lo = 0, hi = sorted->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sorted->items[mid], s);
        if (c == 0) return true;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

static void merge_sort(char *base, char *tmp, size_t n, size_t size,
                       int (*cmp)(const void *, const void *)) {
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(base, tmp, h, size, cmp);
    merge_sort(base + h * size, tmp, n - h, size, cmp);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        if (cmp(base + j * size, base + i * size) < 0) memcpy(tmp + (k++) * size, base + (j++) * size, size);
        else memcpy(tmp + (k++) * size, base + (i++) * size, size);
    }
    while (i < h) memcpy(tmp + (k++) * size, base + (i++) * size, size);
    while (j < n) memcpy(tmp + (k++) * size, base + (j++) * size, size);
    memcpy(base, tmp, n * size);
}

void cg_nsi_stable_sort(cg_arena *a, void *base, size_t n, size_t size,
                        int (*cmp)(const void *, const void *)) {
    if (n < 2) return;
    char *tmp = cg_arena_alloc(a, n * size);
    merge_sort(base, tmp, n, size, cmp);
}

/* ---- loading ---- */

typedef struct loader {
    cg_arena *a;
    cg_nsight_evidence *ev;
    const cg_nsight_limits *lim;
    const char *dir, *display;
    const char *load_error; /* first loading error (=> status failed) */
    size_t cap_rows[CG_NSIGHT_REPORT_COUNT];
} loader;

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && memcmp(s + n - m, suffix, m) == 0;
}

static int match_report(const char *name) {
    if (!ends_with(name, ".csv")) return -1;
    for (int k = 0; k < CG_NSIGHT_REPORT_COUNT; k++)
        if (strstr(name, PATTERNS[k])) return k;
    return -1;
}

static cg_nsight_summary_table *summary_table(cg_nsight_evidence *ev, cg_nsight_report k) {
    return k == CG_NSIGHT_KERNELS ? &ev->kernels
           : k == CG_NSIGHT_RUNTIME ? &ev->runtime_calls
                                     : &ev->memory_operations;
}

/* "<display>/<name>", the way a joined path displays. */
const char *cg_nsi_display_path(cg_arena *a, const char *display, const char *name) {
    size_t n = strlen(display);
    return cg_arena_printf(a, "%s%s%s", display, n && display[n - 1] == '/' ? "" : "/", name);
}

/* An io::Error as Rust displays it. */
const char *cg_nsi_os_error(cg_arena *a, int e) {
    char text[256];
    return cg_arena_strdup(a, cg_os_error_text(text, sizeof text, e));
}

static void load_error(loader *L, const char *msg) {
    if (!L->load_error) L->load_error = cg_arena_strdup(L->a, msg);
}

static int cmp_summary(const void *x, const void *y) {
    const cg_nsight_summary_row *a = x, *b = y;
    if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns ? -1 : 1;
    return 0;
}

static int cmp_start(const void *x, const void *y) {
    const cg_nsight_timeline_row *a = x, *b = y;
    return a->start_ns != b->start_ns ? (a->start_ns < b->start_ns ? -1 : 1) : 0;
}

static int cmp_timeline(const void *x, const void *y) {
    const cg_nsight_timeline_row *a = x, *b = y;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void add_limit(cg_arena *a, cg_nsight_evidence *ev, size_t *cap, const char *file, uint64_t total,
                      uint64_t display_cap) {
    cg_nsight_report_limit l = {file, total, total < display_cap ? total : display_cap, total > display_cap};
    CG_NSI_PUSH(a, ev->limits, ev->n_limits, *cap, l);
}

/* Parses one matched CSV into its table. Each file's rows are sorted on their
 * own (summaries by total descending, cut to 100; timelines by start) and
 * appended, as the crate extends its lists file by file. */
static int parse_report(loader *L, const char *data, size_t len, cg_nsight_report kind, const char *name,
                        uint64_t *total, cg_error *err) {
    cg_arena *a = L->a;
    cg_nsight_evidence *ev = L->ev;
    cg_nsi_csv csv;
    if (cg_nsi_csv_parse(a, data, len, L->lim, &csv, err) != 0) return -1;
    if (kind == CG_NSIGHT_NVTX || kind == CG_NSIGHT_GPU_TRACE) {
        cg_nsight_timeline_table *t = kind == CG_NSIGHT_NVTX ? &ev->nvtx_ranges : &ev->gpu_timeline;
        size_t before = t->n;
        if (cg_nsi_parse_timeline(a, &csv, kind == CG_NSIGHT_NVTX, name, &t->rows, &t->n, &L->cap_rows[kind], err))
            return -1;
        cg_nsi_stable_sort(a, t->rows + before, t->n - before, sizeof *t->rows, cmp_start);
        *total = t->n - before;
        return 0;
    }
    cg_nsight_summary_table *t = summary_table(ev, kind);
    size_t before = t->n;
    if (cg_nsi_parse_summary(a, &csv, name, &t->rows, &t->n, &L->cap_rows[kind], err) != 0) return -1;
    cg_nsi_stable_sort(a, t->rows + before, t->n - before, sizeof *t->rows, cmp_summary);
    *total = t->n - before;
    if (*total > CG_NSIGHT_SUMMARY_DISPLAY_ROWS) t->n = before + CG_NSIGHT_SUMMARY_DISPLAY_ROWS;
    t->displayed = t->n;
    return 0;
}

/* Reads, hashes and parses one matched CSV. A report that does not parse is a
 * diagnostic; one that does is retained (source_csv, limits, coverage). */
static void load_report(loader *L, const char *name, cg_nsight_report kind, size_t *limit_cap) {
    cg_arena *a = L->a;
    cg_nsight_evidence *ev = L->ev;
    char *path = cg_path_join(L->dir, name);
    const char *shown = cg_nsi_display_path(a, L->display, name);
    cg_error err;
    size_t len = 0;
    char *data = cg_read_file(path, (size_t)L->lim->max_csv_bytes, &len, &err);
    cg_free(path);
    if (!data) {
        if (err.code == CG_ELIMIT)
            cg_nsi_diag(a, ev, "%s: file exceeds limit max_csv_bytes (%llu bytes)", shown,
                        (unsigned long long)L->lim->max_csv_bytes);
        else cg_nsi_diag(a, ev, "%s: %s", shown, err.msg);
        return;
    }
    uint64_t total = 0;
    int rc = parse_report(L, data, len, kind, name, &total, &err);
    if (rc != 0) {
        cg_free(data);
        cg_nsi_diag(a, ev, "%s: %s", shown, err.msg);
        return;
    }
    cg_nsight_artifact *art = &ev->source_csv[ev->n_source_csv++];
    art->path = name;
    art->size_bytes = len;
    cg_sha256_hex(data, len, art->sha256);
    cg_free(data);
    ev->coverage[kind] = true;
    bool timeline = kind == CG_NSIGHT_NVTX || kind == CG_NSIGHT_GPU_TRACE;
    add_limit(a, ev, limit_cap, name, total, timeline ? CG_NSIGHT_TIMELINE_DISPLAY_ROWS : CG_NSIGHT_SUMMARY_DISPLAY_ROWS);
}

static bool valid_utf8_cstr(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t need = (*p >= 0xC2 && *p <= 0xDF) ? 1 : (*p >= 0xE0 && *p <= 0xEF) ? 2
                      : (*p >= 0xF0 && *p <= 0xF4)                           ? 3
                                                                              : 0;
        if (!need) return false;
        for (size_t k = 1; k <= need; k++)
            if ((p[k] & 0xC0) != 0x80) return false;
        p += need + 1;
    }
    return true;
}

/* status.txt: the rest of its first line that starts with "reason=" (taken as
 * written, an empty rest included); NULL when the file is absent, unreadable,
 * not UTF-8 or has no such line. */
static const char *status_reason(loader *L) {
    char *path = cg_path_join(L->dir, CG_NSIGHT_STATUS_FILE);
    cg_error err;
    size_t len = 0;
    char *text = cg_read_file(path, L->lim->max_manifest_bytes, &len, &err);
    cg_free(path);
    if (!text) return NULL;
    const char *reason = NULL;
    if (memchr(text, '\0', len) == NULL && valid_utf8_cstr(text)) {
        for (char *line = text; line && !reason;) {
            char *nl = memchr(line, '\n', len - (size_t)(line - text));
            size_t n = nl ? (size_t)(nl - line) : strlen(line);
            if (n > 0 && line[n - 1] == '\r') n--;
            if (n >= 7 && memcmp(line, "reason=", 7) == 0) reason = cg_arena_strndup(L->a, line + 7, n - 7);
            line = nl && nl[1] ? nl + 1 : NULL;
        }
    }
    cg_free(text);
    return reason;
}

static int cmp_entry(const void *x, const void *y) {
    return strcmp(((const cg_nsi_dir_entry *)x)->name, ((const cg_nsi_dir_entry *)y)->name);
}

cg_nsight_evidence *cg_nsight_load(cg_arena *a, const char *dir, const cg_strlist *required,
                                   const cg_strlist *gpu_expected, const cg_strlist *cpu_only) {
    return cg_nsight_load_as(a, dir, NULL, required, gpu_expected, cpu_only, NULL);
}

cg_nsight_evidence *cg_nsight_load_ex(cg_arena *a, const char *dir, const cg_strlist *required,
                                      const cg_strlist *gpu_expected, const cg_strlist *cpu_only,
                                      const cg_nsight_limits *lim) {
    return cg_nsight_load_as(a, dir, NULL, required, gpu_expected, cpu_only, lim);
}

/* NsightEvidence::unavailable(reason): no artifacts, no rows, provenance
 * without a manifest, the empty correlation. */
static cg_nsight_evidence *unavailable(cg_arena *a, cg_nsight_status status, const char *reason) {
    cg_nsight_evidence *ev = cg_arena_zalloc(a, sizeof *ev);
    ev->arena = a;
    ev->status = status;
    ev->reason = reason;
    ev->provenance.binding = CG_NSIGHT_PARTIAL;
    cg_nsi_prov_diag(a, &ev->provenance, "%s", "No capture manifest was loaded");
    cg_nsi_correlate(a, ev, NULL, NULL);
    return ev;
}

/* Lists the flat directory (sorted by name); a failure is a load error. */
static cg_nsi_dir_entry *list_dir(loader *L, size_t *n_out) {
    cg_arena *a = L->a;
    cg_nsi_dir_entry *entries = NULL;
    size_t n = 0, cap = 0;
    struct stat st;
    bool is_dir = stat(L->dir, &st) == 0 && S_ISDIR(st.st_mode);
    DIR *d = is_dir ? opendir(L->dir) : NULL;
    if (!d) {
        load_error(L, is_dir ? cg_nsi_os_error(a, errno)
                             : cg_arena_printf(a, "Nsight report directory does not exist: %s", L->display));
        return NULL;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (n >= L->lim->max_dir_entries) {
            load_error(L, cg_arena_printf(a, "Nsight directory %s exceeds limit max_dir_entries (%zu entries)",
                                          L->display, L->lim->max_dir_entries));
            break;
        }
        cg_nsi_dir_entry e;
        memset(&e, 0, sizeof e);
        e.name = cg_arena_strdup(a, de->d_name);
        char *path = cg_path_join(L->dir, e.name);
        e.regular = stat(path, &st) == 0 && S_ISREG(st.st_mode) && valid_utf8_cstr(e.name);
        cg_free(path);
        CG_NSI_PUSH(a, entries, n, cap, e);
    }
    closedir(d);
    if (n) qsort(entries, n, sizeof *entries, cmp_entry);
    *n_out = n;
    return entries;
}

/* Hashes the first *.nsys-rep (by name) as the raw report. */
static void load_raw_report(loader *L, cg_nsi_dir_entry *entries, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!entries[i].regular || !ends_with(entries[i].name, ".nsys-rep")) continue;
        char *rp = cg_path_join(L->dir, entries[i].name);
        cg_error err;
        cg_nsight_artifact *art = cg_arena_zalloc(L->a, sizeof *art);
        art->path = entries[i].name;
        if (cg_sha256_file(rp, false, art->sha256, &art->size_bytes, &err) != 0) load_error(L, err.msg);
        else {
            L->ev->raw_report = art;
            entries[i].retained = true;
            entries[i].art = art;
        }
        cg_free(rp);
        return;
    }
}

cg_nsight_evidence *cg_nsight_load_as(cg_arena *a, const char *dir, const char *display_dir,
                                      const cg_strlist *required, const cg_strlist *gpu_expected,
                                      const cg_strlist *cpu_only, const cg_nsight_limits *lim_in) {
    cg_nsight_limits lim;
    if (lim_in) lim = *lim_in;
    else cg_nsight_limits_default(&lim);
    if (!dir) return unavailable(a, CG_NSIGHT_UNAVAILABLE, "Nsight capture was not requested");
    cg_strlist none = {NULL, 0};
    const cg_strlist *req = required ? required : &none;
    const cg_strlist *gpu = gpu_expected ? gpu_expected : &none;
    const cg_strlist *cpu = cpu_only ? cpu_only : &none;
    /* legacy partition: no GPU/CPU split declared => every required label is GPU-expected */
    if (gpu->n == 0 && cpu->n == 0) gpu = req;

    cg_nsight_evidence *ev = cg_arena_zalloc(a, sizeof *ev);
    ev->arena = a;
    loader L;
    memset(&L, 0, sizeof L);
    L.a = a;
    L.ev = ev;
    L.lim = &lim;
    L.dir = dir;
    L.display = display_dir ? display_dir : dir;

    size_t n_entries = 0, limit_cap = 0;
    cg_nsi_dir_entry *entries = list_dir(&L, &n_entries);
    if (!L.load_error) load_raw_report(&L, entries, n_entries);
    if (L.load_error) return unavailable(a, CG_NSIGHT_FAILED, L.load_error);
    ev->source_csv = cg_arena_zalloc(a, (n_entries ? n_entries : 1) * sizeof *ev->source_csv);
    for (size_t i = 0; i < n_entries; i++) {
        int kind = match_report(entries[i].name);
        if (!entries[i].regular || kind < 0) continue;
        size_t before = ev->n_source_csv;
        load_report(&L, entries[i].name, (cg_nsight_report)kind, &limit_cap);
        if (ev->n_source_csv > before) {
            entries[i].retained = true;
            entries[i].art = &ev->source_csv[before];
        }
    }

    /* correlation and attribution see every row, in file order; the display
     * order and cap come after */
    cg_nsi_stable_sort(a, ev->gpu_timeline.rows, ev->gpu_timeline.n, sizeof *ev->gpu_timeline.rows, cmp_start);
    cg_nsi_correlate(a, ev, gpu, cpu);
    cg_nsi_attribute(a, ev);
    cg_nsight_timeline_table *tls[2] = {&ev->nvtx_ranges, &ev->gpu_timeline};
    for (int k = 0; k < 2; k++) {
        cg_nsi_stable_sort(a, tls[k]->rows, tls[k]->n, sizeof *tls[k]->rows, cmp_timeline);
        tls[k]->displayed =
            tls[k]->n < CG_NSIGHT_TIMELINE_DISPLAY_ROWS ? tls[k]->n : CG_NSIGHT_TIMELINE_DISPLAY_ROWS;
    }
    cg_nsi_provenance_load(a, ev, dir, L.display, entries, n_entries, req, gpu, cpu, &lim);

    size_t useful = ev->kernels.displayed + ev->runtime_calls.displayed + ev->memory_operations.displayed +
                    ev->nvtx_ranges.displayed + ev->gpu_timeline.displayed;
    if (useful) {
        ev->status = CG_NSIGHT_AVAILABLE;
    } else {
        ev->status = CG_NSIGHT_UNAVAILABLE;
        ev->reason = status_reason(&L);
        if (!ev->reason) ev->reason = "No supported nsys stats CSV reports were found";
    }
    return ev;
}

/* ---- JSON ---- */

static cg_jv *strlist_json(cg_arena *a, const cg_strlist *l) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < l->n; i++) cg_jv_arr_push(a, arr, cg_jv_str(a, l->items[i]));
    return arr;
}

static cg_jv *artifact_json(cg_arena *a, const cg_nsight_artifact *art) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "path", cg_jv_str(a, art->path));
    cg_jv_obj_put(a, o, "size_bytes", cg_jv_u64(a, art->size_bytes));
    cg_jv_obj_put(a, o, "sha256", cg_jv_str(a, art->sha256));
    return o;
}

static cg_jv *summary_json(cg_arena *a, const cg_nsight_summary_table *t) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < t->displayed; i++) {
        const cg_nsight_summary_row *r = &t->rows[i];
        cg_jv *o = cg_jv_obj(a);
        cg_jv_obj_put(a, o, "name", cg_jv_str(a, r->name));
        cg_jv_obj_put(a, o, "total_ns", cg_jv_u64(a, r->total_ns));
        cg_jv_obj_put(a, o, "count", cg_jv_u64(a, r->count));
        cg_jv_obj_put(a, o, "average_ns", cg_jv_u64(a, r->average_ns));
        cg_jv_obj_put(a, o, "minimum_ns", cg_jv_u64(a, r->minimum_ns));
        cg_jv_obj_put(a, o, "maximum_ns", cg_jv_u64(a, r->maximum_ns));
        if (r->category) cg_jv_obj_put(a, o, "category", cg_jv_str(a, r->category));
        cg_jv_arr_push(a, arr, o);
    }
    return arr;
}

static cg_jv *timeline_json(cg_arena *a, const cg_nsight_timeline_table *t) {
    cg_jv *arr = cg_jv_arr(a);
    for (size_t i = 0; i < t->displayed; i++) {
        const cg_nsight_timeline_row *r = &t->rows[i];
        cg_jv *o = cg_jv_obj(a);
        cg_jv_obj_put(a, o, "name", cg_jv_str(a, r->name));
        cg_jv_obj_put(a, o, "kind", cg_jv_str(a, r->is_nvtx ? "nvtx_range" : "gpu_operation"));
        if (r->device) cg_jv_obj_put(a, o, "device", cg_jv_str(a, r->device));
        if (r->context) cg_jv_obj_put(a, o, "context", cg_jv_str(a, r->context));
        if (r->stream) cg_jv_obj_put(a, o, "stream", cg_jv_str(a, r->stream));
        if (r->correlation_id) cg_jv_obj_put(a, o, "correlation_id", cg_jv_str(a, r->correlation_id));
        if (r->semantic_key) cg_jv_obj_put(a, o, "semantic_key", cg_jv_str(a, r->semantic_key));
        cg_jv_obj_put(a, o, "start_ns", cg_jv_u64(a, r->start_ns));
        cg_jv_obj_put(a, o, "duration_ns", cg_jv_u64(a, r->duration_ns));
        if (r->has_projected_start) cg_jv_obj_put(a, o, "projected_start_ns", cg_jv_u64(a, r->projected_start_ns));
        if (r->has_projected_duration)
            cg_jv_obj_put(a, o, "projected_duration_ns", cg_jv_u64(a, r->projected_duration_ns));
        if (r->has_gpu_operations) cg_jv_obj_put(a, o, "gpu_operations", cg_jv_u64(a, r->gpu_operations));
        cg_jv_arr_push(a, arr, o);
    }
    return arr;
}

cg_jv *cg_nsight_provenance_to_json(cg_arena *a, const cg_nsight_provenance *p) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "binding", cg_jv_str(a, cg_nsight_binding_name(p->binding)));
    if (p->manifest) cg_jv_obj_put(a, o, "manifest", cg_jv_clone(a, p->manifest));
    cg_jv_obj_put(a, o, "diagnostics", strlist_json(a, &p->diagnostics));
    return o;
}

cg_jv *cg_nsight_correlation_to_json(cg_arena *a, const cg_nsight_correlation *c) {
    cg_jv *o = cg_jv_obj(a);
    const cg_nsight_ledger *l = &c->ledger;
    cg_jv_obj_put(a, o, "mode", cg_jv_str(a, cg_nsight_corr_mode_name(c->mode)));
    cg_jv_obj_put(a, o, "clock_aligned", cg_jv_bool(a, false));
    cg_jv_obj_put(a, o, "complete", cg_jv_bool(a, c->complete));
    cg_jv *jl = cg_jv_obj(a);
    cg_jv_obj_put(a, jl, "expected", strlist_json(a, &l->expected));
    if (l->cpu_only.n) cg_jv_obj_put(a, jl, "cpu_only", strlist_json(a, &l->cpu_only));
    cg_jv_obj_put(a, jl, "observed", strlist_json(a, &l->observed));
    cg_jv_obj_put(a, jl, "matched", strlist_json(a, &l->matched));
    cg_jv_obj_put(a, jl, "missing_expected", strlist_json(a, &l->missing_expected));
    cg_jv_obj_put(a, jl, "unexpected_observed", strlist_json(a, &l->unexpected_observed));
    if (l->unexpected_cpu_only.n) cg_jv_obj_put(a, jl, "unexpected_cpu_only", strlist_json(a, &l->unexpected_cpu_only));
    cg_jv *dups = cg_jv_arr(a);
    for (size_t i = 0; i < l->n_duplicates; i++) {
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "semantic_key", cg_jv_str(a, l->duplicates[i].semantic_key));
        cg_jv_obj_put(a, d, "occurrences", cg_jv_u64(a, l->duplicates[i].occurrences));
        cg_jv_arr_push(a, dups, d);
    }
    cg_jv_obj_put(a, jl, "duplicates", dups);
    cg_jv_obj_put(a, o, "ledger", jl);
    if (c->reason) cg_jv_obj_put(a, o, "reason", cg_jv_str(a, c->reason));
    return o;
}

cg_jv *cg_nsight_to_json(cg_arena *a, const cg_nsight_evidence *ev) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "status", cg_jv_str(a, cg_nsight_status_name(ev->status)));
    if (ev->reason) cg_jv_obj_put(a, o, "reason", cg_jv_str(a, ev->reason));
    if (ev->raw_report) cg_jv_obj_put(a, o, "raw_report", artifact_json(a, ev->raw_report));
    cg_jv *src = cg_jv_arr(a);
    for (size_t i = 0; i < ev->n_source_csv; i++) cg_jv_arr_push(a, src, artifact_json(a, &ev->source_csv[i]));
    cg_jv_obj_put(a, o, "source_csv", src);
    cg_jv_obj_put(a, o, "provenance", cg_nsight_provenance_to_json(a, &ev->provenance));
    cg_jv *cov = cg_jv_obj(a);
    cg_jv_obj_put(a, cov, "kernel_summary", cg_jv_bool(a, ev->coverage[CG_NSIGHT_KERNELS]));
    cg_jv_obj_put(a, cov, "runtime_summary", cg_jv_bool(a, ev->coverage[CG_NSIGHT_RUNTIME]));
    cg_jv_obj_put(a, cov, "memory_summary", cg_jv_bool(a, ev->coverage[CG_NSIGHT_MEMORY]));
    cg_jv_obj_put(a, cov, "nvtx_projection", cg_jv_bool(a, ev->coverage[CG_NSIGHT_NVTX]));
    cg_jv_obj_put(a, cov, "gpu_timeline", cg_jv_bool(a, ev->coverage[CG_NSIGHT_GPU_TRACE]));
    cg_jv_obj_put(a, o, "coverage", cov);
    cg_jv_obj_put(a, o, "correlation", cg_nsight_correlation_to_json(a, &ev->correlation));
    cg_jv_obj_put(a, o, "diagnostics", strlist_json(a, &ev->diagnostics));
    cg_jv *lim = cg_jv_obj(a);
    for (size_t i = 0; i < ev->n_limits; i++) {
        const cg_nsight_report_limit *l = &ev->limits[i];
        cg_jv *e = cg_jv_obj(a);
        cg_jv_obj_put(a, e, "total_rows", cg_jv_u64(a, l->total_rows));
        cg_jv_obj_put(a, e, "displayed_rows", cg_jv_u64(a, l->displayed_rows));
        cg_jv_obj_put(a, e, "truncated", cg_jv_bool(a, l->truncated));
        cg_jv_obj_put(a, lim, l->file, e);
    }
    cg_jv_obj_put(a, o, "limits", lim);
    cg_jv_obj_put(a, o, "kernels", summary_json(a, &ev->kernels));
    cg_jv_obj_put(a, o, "runtime_calls", summary_json(a, &ev->runtime_calls));
    cg_jv_obj_put(a, o, "memory_operations", summary_json(a, &ev->memory_operations));
    cg_jv_obj_put(a, o, "nvtx_ranges", timeline_json(a, &ev->nvtx_ranges));
    cg_jv_obj_put(a, o, "gpu_timeline", timeline_json(a, &ev->gpu_timeline));
    cg_jv *pa = cg_jv_arr(a);
    for (size_t i = 0; i < ev->n_phase_attribution; i++) {
        const cg_nsight_phase_attribution *p = &ev->phase_attribution[i];
        cg_jv *e = cg_jv_obj(a);
        cg_jv_obj_put(a, e, "semantic_key", cg_jv_str(a, p->semantic_key));
        cg_jv_obj_put(a, e, "clock_aligned", cg_jv_bool(a, false));
        cg_jv_obj_put(a, e, "projected_start_ns", cg_jv_u64(a, p->projected_start_ns));
        cg_jv_obj_put(a, e, "projected_duration_ns", cg_jv_u64(a, p->projected_duration_ns));
        cg_jv_obj_put(a, e, "gpu_busy_ns", cg_jv_u64(a, p->gpu_busy_ns));
        cg_jv_obj_put(a, e, "gpu_operation_count", cg_jv_u64(a, p->gpu_operation_count));
        cg_jv_obj_put(a, e, "join_keys", strlist_json(a, &p->join_keys));
        cg_jv_arr_push(a, pa, e);
    }
    cg_jv_obj_put(a, o, "phase_attribution", pa);
    return o;
}
