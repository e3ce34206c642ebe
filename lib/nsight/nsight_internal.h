/* nsight_internal.h — shared by the files of lib/nsight only (not installed,
 * not part of the public API). Names use the cg_nsi_ prefix. Everything is
 * allocated in the caller's arena; errors are reported through cg_error. */
#ifndef CG_NSIGHT_INTERNAL_H
#define CG_NSIGHT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "base/error.h"
#include "nsight/nsight.h"

/* Appends val to an arena-backed array (doubling; old blocks stay in the arena). */
#define CG_NSI_PUSH(a, arr, n, cap, val)                                              \
    do {                                                                              \
        if ((n) == (cap)) {                                                           \
            size_t cg_nc_ = (cap) ? (cap) * 2 : 8;                                    \
            void *cg_p_ = cg_arena_alloc((a), cg_nc_ * sizeof(*(arr)));               \
            if (n) memcpy(cg_p_, (arr), (n) * sizeof(*(arr)));                        \
            (arr) = cg_p_;                                                            \
            (cap) = cg_nc_;                                                           \
        }                                                                             \
        (arr)[(n)++] = (val);                                                         \
    } while (0)

/* ---- csv.c: bounded RFC-4180 reader ----
 * Comma separator, "" escapes inside quoted fields, quoted fields may hold
 * commas and newlines, CRLF or LF record ends, a leading UTF-8 BOM is skipped,
 * empty lines are skipped. The input must be valid UTF-8 without NUL bytes.
 * Every record must have as many fields as the first (header) record.
 * Errors name the 1-based line and the limit that was exceeded. */
typedef struct cg_nsi_csv {
    char ***fields;   /* fields[r][c], NUL-terminated arena strings; r = 0 is the header */
    size_t *lines;    /* 1-based line where record r starts */
    size_t n_records; /* including the header */
    size_t n_columns; /* fields per record (header width); 0 when the input is empty */
} cg_nsi_csv;

int cg_nsi_csv_parse(cg_arena *a, const char *data, size_t len, const cg_nsight_limits *lim,
                     cg_nsi_csv *out, cg_error *err);

/* ---- reports.c: header normalization, numbers, the five reports ---- */
/* Header normalization of §10 (trim, lowercase, delete "(" ")" "%", space "-"
 * "/" to "_", trim "_"); result in the arena. */
char *cg_nsi_normalize_header(cg_arena *a, const char *h);
/* Number rule of §10. Returns 0 and sets *present (false for an empty value)
 * and *out, or -1 with a short reason in err (no context). */
int cg_nsi_parse_number(const char *raw, bool *present, uint64_t *out, cg_error *err);
/* Parses one report. Rows are appended to *rows (arena), *n / *cap updated
 * only on success. source_file is stored in every row. */
int cg_nsi_parse_summary(cg_arena *a, const cg_nsi_csv *csv, const char *source_file,
                         cg_nsight_summary_row **rows, size_t *n, size_t *cap, cg_error *err);
int cg_nsi_parse_timeline(cg_arena *a, const cg_nsi_csv *csv, bool nvtx, const char *source_file,
                          cg_nsight_timeline_row **rows, size_t *n, size_t *cap, cg_error *err);

/* ---- correlation.c ---- */
/* Fills ev->correlation from ev->nvtx_ranges / ev->gpu_timeline (full sets,
 * already sorted) and the resolved label lists. */
void cg_nsi_correlate(cg_arena *a, cg_nsight_evidence *ev, const cg_strlist *gpu_expected,
                      const cg_strlist *cpu_only);
/* Fills ev->phase_attribution. */
void cg_nsi_attribute(cg_arena *a, cg_nsight_evidence *ev);
/* Length of the union of [start, end) intervals clipped to [lo, hi).
 * iv is reordered in place. */
typedef struct cg_nsi_interval {
    uint64_t start, end;
} cg_nsi_interval;
uint64_t cg_nsi_union_clipped(cg_nsi_interval *iv, size_t n, uint64_t lo, uint64_t hi);

/* ---- provenance.c ---- */
typedef struct cg_nsi_dir_entry {
    const char *name;
    bool regular;
    bool retained;                 /* matched CSV or the raw report */
    const cg_nsight_artifact *art; /* hashed artifact of a retained file, else NULL */
} cg_nsi_dir_entry;

/* Reads capture-manifest.json (if any) of dir and runs every load-time check
 * (schema, raw report, label sets, artifacts, undeclared retained files).
 * Sets ev->provenance; an absent, unreadable or invalid manifest leaves the
 * binding partial with a diagnostic naming "<display>/capture-manifest.json". */
void cg_nsi_provenance_load(cg_arena *a, cg_nsight_evidence *ev, const char *dir, const char *display,
                            const cg_nsi_dir_entry *entries, size_t n_entries,
                            const cg_strlist *required, const cg_strlist *gpu_expected,
                            const cg_strlist *cpu_only, const cg_nsight_limits *lim);

/* Appends one provenance diagnostic. */
void cg_nsi_prov_diag(cg_arena *a, cg_nsight_provenance *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- small helpers (nsight.c) ---- */
/* "<display>/<name>", as a joined path displays. */
const char *cg_nsi_display_path(cg_arena *a, const char *display, const char *name);
/* An errno value as Rust displays an io::Error: "<strerror> (os error <n>)". */
const char *cg_nsi_os_error(cg_arena *a, int e);
void cg_nsi_diag(cg_arena *a, cg_nsight_evidence *ev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sorted (byte order), deduplicated copy of a string list. */
cg_strlist cg_nsi_sorted_set(cg_arena *a, const cg_strlist *in);
bool cg_nsi_set_contains(const cg_strlist *sorted, const char *s);
/* Stable merge sort using an arena scratch buffer. */
void cg_nsi_stable_sort(cg_arena *a, void *base, size_t n, size_t size,
                        int (*cmp)(const void *, const void *));

#endif
