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

typedef struct report_file {
    const char *name;
    cg_nsight_report kind;
    bool parsed;
    uint64_t total_rows;
} report_file;

typedef struct loader {
    cg_arena *a;
    cg_nsight_evidence *ev;
    const cg_nsight_limits *lim;
    const char *dir;
    const char *load_error; /* first loading error (=> status failed) */
    size_t cap_rows[CG_NSIGHT_REPORT_COUNT];
} loader;

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
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

static void load_error(loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void load_error(loader *L, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!L->load_error) L->load_error = cg_arena_strdup(L->a, msg);
    cg_nsi_diag(L->a, L->ev, "%s", msg);
}

/* Reads, hashes and parses one matched CSV. Returns the artifact (always,
 * unless the file could not be read at all). */
static bool load_report(loader *L, const char *name, cg_nsight_report kind, cg_nsight_artifact *art,
                        report_file *rf) {
    cg_arena *a = L->a;
    char *path = cg_path_join(L->dir, name);
    cg_error err;
    art->path = name;
    struct stat st;
    if (lstat(path, &st) != 0) {
        load_error(L, "%s: %s", name, strerror(errno));
        free(path);
        return false;
    }
    if ((uint64_t)st.st_size > L->lim->max_csv_bytes) {
        uint64_t size;
        if (cg_sha256_file(path, true, art->sha256, &size, &err) != 0) {
            load_error(L, "%s: %s", name, err.msg);
            free(path);
            return false;
        }
        art->size_bytes = size;
        cg_nsi_diag(a, L->ev, "%s: file size %llu exceeds limit max_csv_bytes (%llu bytes)", name,
                    (unsigned long long)size, (unsigned long long)L->lim->max_csv_bytes);
        free(path);
        return true;
    }
    size_t len = 0;
    char *data = cg_read_file(path, (size_t)L->lim->max_csv_bytes, &len, &err);
    free(path);
    if (!data) {
        if (err.code == CG_ELIMIT) /* grew after lstat */
            cg_nsi_diag(a, L->ev, "%s: file exceeds limit max_csv_bytes (%llu bytes)", name,
                        (unsigned long long)L->lim->max_csv_bytes);
        else load_error(L, "%s: %s", name, err.msg);
        return false;
    }
    art->size_bytes = len;
    cg_sha256_hex(data, len, art->sha256);
    cg_nsi_csv csv;
    int rc = cg_nsi_csv_parse(a, data, len, L->lim, &csv, &err);
    free(data);
    if (rc == 0) {
        cg_nsight_evidence *ev = L->ev;
        size_t before;
        if (kind == CG_NSIGHT_NVTX || kind == CG_NSIGHT_GPU_TRACE) {
            cg_nsight_timeline_table *t = kind == CG_NSIGHT_NVTX ? &ev->nvtx_ranges : &ev->gpu_timeline;
            before = t->n;
            rc = cg_nsi_parse_timeline(a, &csv, kind == CG_NSIGHT_NVTX, name, &t->rows, &t->n,
                                       &L->cap_rows[kind], &err);
            if (rc == 0) rf->total_rows = t->n - before;
        } else {
            cg_nsight_summary_table *t = summary_table(ev, kind);
            before = t->n;
            rc = cg_nsi_parse_summary(a, &csv, name, &t->rows, &t->n, &L->cap_rows[kind], &err);
            if (rc == 0) rf->total_rows = t->n - before;
        }
    }
    if (rc != 0) cg_nsi_diag(a, L->ev, "%s: %s", name, err.msg);
    else rf->parsed = true;
    return true;
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

static const char *status_reason(loader *L) {
    char *path = cg_path_join(L->dir, CG_NSIGHT_STATUS_FILE);
    cg_error err;
    size_t len = 0;
    char *text = cg_read_file(path, L->lim->max_manifest_bytes, &len, &err);
    free(path);
    if (!text) {
        cg_nsi_diag(L->a, L->ev, CG_NSIGHT_STATUS_FILE ": %s", err.msg);
        return NULL;
    }
    const char *reason = NULL;
    for (char *line = text; line && *line && !reason;) {
        char *nl = memchr(line, '\n', len - (size_t)(line - text));
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if (n > 0 && line[n - 1] == '\r') n--;
        if (n >= 7 && memcmp(line, "reason=", 7) == 0) {
            const char *v = line + 7;
            size_t vn = n - 7;
            while (vn && (*v == ' ' || *v == '\t')) v++, vn--;
            while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t')) vn--;
            /* (inferred) an empty reason= line does not count; NUL/non-UTF-8
             * bytes are kept out of JSON by stopping at NUL */
            if (vn && memchr(v, '\0', vn) == NULL) {
                char *r = cg_arena_strndup(L->a, v, vn);
                if (valid_utf8_cstr(r)) reason = r;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return reason;
}

static int cmp_summary(const void *x, const void *y) {
    const cg_nsight_summary_row *a = x, *b = y;
    if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns ? -1 : 1;
    return 0;
}

static int cmp_timeline(const void *x, const void *y) {
    const cg_nsight_timeline_row *a = x, *b = y;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int cmp_entry(const void *x, const void *y) {
    return strcmp(((const cg_nsi_dir_entry *)x)->name, ((const cg_nsi_dir_entry *)y)->name);
}

static int cmp_limit(const void *x, const void *y) {
    return strcmp(((const cg_nsight_report_limit *)x)->file, ((const cg_nsight_report_limit *)y)->file);
}

static uint64_t displayed_from(const char *file, const cg_nsight_summary_table *s,
                               const cg_nsight_timeline_table *t) {
    uint64_t n = 0;
    if (s)
        for (size_t i = 0; i < s->displayed; i++) n += strcmp(s->rows[i].source_file, file) == 0;
    if (t)
        for (size_t i = 0; i < t->displayed; i++) n += strcmp(t->rows[i].source_file, file) == 0;
    return n;
}

cg_nsight_evidence *cg_nsight_load(cg_arena *a, const char *dir, const cg_strlist *required,
                                   const cg_strlist *gpu_expected, const cg_strlist *cpu_only) {
    return cg_nsight_load_ex(a, dir, required, gpu_expected, cpu_only, NULL);
}

cg_nsight_evidence *cg_nsight_load_ex(cg_arena *a, const char *dir, const cg_strlist *required,
                                      const cg_strlist *gpu_expected, const cg_strlist *cpu_only,
                                      const cg_nsight_limits *lim_in) {
    cg_nsight_limits lim;
    if (lim_in) lim = *lim_in;
    else cg_nsight_limits_default(&lim);
    cg_nsight_evidence *ev = cg_arena_zalloc(a, sizeof *ev);
    ev->arena = a;
    cg_strlist none = {NULL, 0};
    const cg_strlist *req = required ? required : &none;
    const cg_strlist *gpu = gpu_expected ? gpu_expected : &none;
    const cg_strlist *cpu = cpu_only ? cpu_only : &none;
    /* legacy partition: no GPU/CPU split declared => every required label is GPU-expected */
    if (gpu->n == 0 && cpu->n == 0) gpu = req;

    loader L;
    memset(&L, 0, sizeof L);
    L.a = a;
    L.ev = ev;
    L.lim = &lim;
    L.dir = dir;
    ev->provenance.binding = CG_NSIGHT_PARTIAL;

    if (!dir) {
        ev->status = CG_NSIGHT_UNAVAILABLE;
        ev->reason = "Nsight capture was not requested";
        ev->provenance.reason = "Nsight capture was not requested";
        cg_nsi_correlate(a, ev, gpu, cpu);
        return ev;
    }

    /* enumerate the flat directory */
    cg_nsi_dir_entry *entries = NULL;
    size_t n_entries = 0, cap_entries = 0;
    DIR *d = opendir(dir);
    if (!d) {
        load_error(&L, "failed to read Nsight directory %s: %s", dir, strerror(errno));
    } else {
        struct dirent *de;
        errno = 0;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            if (n_entries >= lim.max_dir_entries) {
                load_error(&L, "Nsight directory %s exceeds limit max_dir_entries (%zu entries)", dir,
                           lim.max_dir_entries);
                break;
            }
            cg_nsi_dir_entry e;
            memset(&e, 0, sizeof e);
            e.name = cg_arena_strdup(a, de->d_name);
            CG_NSI_PUSH(a, entries, n_entries, cap_entries, e);
            errno = 0;
        }
        if (!L.load_error && errno != 0)
            load_error(&L, "failed to read Nsight directory %s: %s", dir, strerror(errno));
        closedir(d);
    }
    if (L.load_error) {
        n_entries = 0;
    }
    if (n_entries) qsort(entries, n_entries, sizeof *entries, cmp_entry);

    report_file *rfiles = cg_arena_zalloc(a, (n_entries ? n_entries : 1) * sizeof *rfiles);
    size_t n_rfiles = 0;
    ev->source_csv = cg_arena_zalloc(a, (n_entries ? n_entries : 1) * sizeof *ev->source_csv);
    bool has_status = false;
    for (size_t i = 0; i < n_entries; i++) {
        cg_nsi_dir_entry *e = &entries[i];
        char *path = cg_path_join(dir, e->name);
        struct stat st;
        int src = lstat(path, &st);
        int serr = errno;
        free(path);
        if (src != 0) {
            load_error(&L, "%s: %s", e->name, strerror(serr));
            continue;
        }
        int kind = match_report(e->name);
        bool raw = ends_with(e->name, ".nsys-rep") && !ev->raw_report;
        if (!valid_utf8_cstr(e->name)) {
            /* (inferred) a file name that is not UTF-8 cannot appear in JSON */
            cg_nsi_diag(a, ev, "a file name that is not valid UTF-8 was ignored");
            continue;
        }
        e->regular = S_ISREG(st.st_mode);
        if (!e->regular) {
            if (kind >= 0 || raw || strcmp(e->name, CG_NSIGHT_MANIFEST_FILE) == 0 ||
                strcmp(e->name, CG_NSIGHT_STATUS_FILE) == 0)
                cg_nsi_diag(a, ev, "%s: not a regular file; ignored", e->name);
            continue;
        }
        if (strcmp(e->name, CG_NSIGHT_STATUS_FILE) == 0) has_status = true;
        if (raw) {
            char *rp = cg_path_join(dir, e->name);
            cg_error err;
            cg_nsight_artifact *art = cg_arena_zalloc(a, sizeof *art);
            art->path = e->name;
            if (cg_sha256_file(rp, true, art->sha256, &art->size_bytes, &err) != 0) {
                load_error(&L, "%s: %s", e->name, err.msg);
            } else {
                ev->raw_report = art;
                e->retained = true;
                e->art = art;
            }
            free(rp);
            continue;
        }
        if (kind < 0) continue;
        cg_nsight_artifact *art = &ev->source_csv[ev->n_source_csv];
        report_file *rf = &rfiles[n_rfiles];
        rf->name = e->name;
        rf->kind = (cg_nsight_report)kind;
        if (load_report(&L, e->name, (cg_nsight_report)kind, art, rf)) {
            ev->n_source_csv++;
            n_rfiles++;
            e->retained = true;
            e->art = art;
        }
    }

    /* sort (stable) and apply display caps; correlation uses the full sets */
    cg_nsight_summary_table *sums[3] = {&ev->kernels, &ev->runtime_calls, &ev->memory_operations};
    for (int k = 0; k < 3; k++) {
        cg_nsi_stable_sort(a, sums[k]->rows, sums[k]->n, sizeof *sums[k]->rows, cmp_summary);
        sums[k]->displayed =
            sums[k]->n < CG_NSIGHT_SUMMARY_DISPLAY_ROWS ? sums[k]->n : CG_NSIGHT_SUMMARY_DISPLAY_ROWS;
    }
    cg_nsight_timeline_table *tls[2] = {&ev->nvtx_ranges, &ev->gpu_timeline};
    for (int k = 0; k < 2; k++) {
        cg_nsi_stable_sort(a, tls[k]->rows, tls[k]->n, sizeof *tls[k]->rows, cmp_timeline);
        tls[k]->displayed =
            tls[k]->n < CG_NSIGHT_TIMELINE_DISPLAY_ROWS ? tls[k]->n : CG_NSIGHT_TIMELINE_DISPLAY_ROWS;
    }

    /* limits[file] for every parsed report */
    ev->limits = cg_arena_zalloc(a, (n_rfiles ? n_rfiles : 1) * sizeof *ev->limits);
    for (size_t i = 0; i < n_rfiles; i++) {
        if (!rfiles[i].parsed) continue;
        cg_nsight_report_limit *l = &ev->limits[ev->n_limits++];
        l->file = rfiles[i].name;
        l->total_rows = rfiles[i].total_rows;
        cg_nsight_report k = rfiles[i].kind;
        if (k == CG_NSIGHT_NVTX || k == CG_NSIGHT_GPU_TRACE)
            l->displayed_rows = displayed_from(l->file, NULL, k == CG_NSIGHT_NVTX ? &ev->nvtx_ranges
                                                                                    : &ev->gpu_timeline);
        else l->displayed_rows = displayed_from(l->file, summary_table(ev, k), NULL);
        l->truncated = l->displayed_rows < l->total_rows;
    }
    qsort(ev->limits, ev->n_limits, sizeof *ev->limits, cmp_limit);

    cg_nsi_provenance_load(a, ev, dir, entries, n_entries, req, gpu, cpu, &lim);
    cg_nsi_correlate(a, ev, gpu, cpu);
    cg_nsi_attribute(a, ev);

    ev->coverage[CG_NSIGHT_KERNELS] = ev->kernels.n > 0;
    ev->coverage[CG_NSIGHT_RUNTIME] = ev->runtime_calls.n > 0;
    ev->coverage[CG_NSIGHT_MEMORY] = ev->memory_operations.n > 0;
    ev->coverage[CG_NSIGHT_NVTX] = ev->nvtx_ranges.n > 0;
    ev->coverage[CG_NSIGHT_GPU_TRACE] = ev->gpu_timeline.n > 0;
    bool any_rows = ev->kernels.n || ev->runtime_calls.n || ev->memory_operations.n ||
                    ev->nvtx_ranges.n || ev->gpu_timeline.n;

    if (L.load_error) {
        ev->status = CG_NSIGHT_FAILED;
        ev->reason = L.load_error;
    } else if (any_rows) {
        ev->status = CG_NSIGHT_AVAILABLE;
        ev->reason = NULL;
    } else {
        ev->status = CG_NSIGHT_UNAVAILABLE;
        const char *r = has_status ? status_reason(&L) : NULL;
        if (r) ev->reason = r;
        else if (n_rfiles == 0) ev->reason = "No supported nsys stats CSV reports were found";
        /* (inferred) supported reports that yield no rows (all malformed or
         * empty): still unavailable, with a reason saying so */
        else ev->reason = "Supported nsys stats CSV reports contained no usable rows";
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
        if (r->has_projected) {
            cg_jv_obj_put(a, o, "projected_start_ns", cg_jv_u64(a, r->projected_start_ns));
            cg_jv_obj_put(a, o, "projected_duration_ns", cg_jv_u64(a, r->projected_duration_ns));
        }
        if (r->has_gpu_operations) cg_jv_obj_put(a, o, "gpu_operations", cg_jv_u64(a, r->gpu_operations));
        cg_jv_arr_push(a, arr, o);
    }
    return arr;
}

cg_jv *cg_nsight_provenance_to_json(cg_arena *a, const cg_nsight_provenance *p) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "binding", cg_jv_str(a, cg_nsight_binding_name(p->binding)));
    cg_jv_obj_put(a, o, "reason", cg_jv_str(a, p->reason ? p->reason : ""));
    if (p->manifest_file) cg_jv_obj_put(a, o, "manifest", artifact_json(a, p->manifest_file));
    if (p->capture) cg_jv_obj_put(a, o, "capture", cg_jv_clone(a, p->capture));
    cg_jv_obj_put(a, o, "issues", strlist_json(a, &p->issues));
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
    cg_jv_obj_put(a, jl, "cpu_only", strlist_json(a, &l->cpu_only));
    cg_jv_obj_put(a, jl, "observed", strlist_json(a, &l->observed));
    cg_jv_obj_put(a, jl, "matched", strlist_json(a, &l->matched));
    cg_jv_obj_put(a, jl, "missing_expected", strlist_json(a, &l->missing_expected));
    cg_jv_obj_put(a, jl, "unexpected_observed", strlist_json(a, &l->unexpected_observed));
    cg_jv_obj_put(a, jl, "unexpected_cpu_only", strlist_json(a, &l->unexpected_cpu_only));
    cg_jv *dups = cg_jv_arr(a);
    for (size_t i = 0; i < l->n_duplicates; i++) {
        cg_jv *d = cg_jv_obj(a);
        cg_jv_obj_put(a, d, "semantic_key", cg_jv_str(a, l->duplicates[i].semantic_key));
        cg_jv_obj_put(a, d, "occurrences", cg_jv_u64(a, l->duplicates[i].occurrences));
        cg_jv_arr_push(a, dups, d);
    }
    cg_jv_obj_put(a, jl, "duplicates", dups);
    cg_jv_obj_put(a, o, "ledger", jl);
    cg_jv_obj_put(a, o, "reason", cg_jv_str(a, c->reason ? c->reason : ""));
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
