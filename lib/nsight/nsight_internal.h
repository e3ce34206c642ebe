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
#include "base/buf.h"
#include "base/error.h"
#include "base/rustfmt.h"
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

/* ---- csv.c: the csv crate's reader (csv 1.1.6 defaults, flexible) ----
 * Comma delimiter; a field starting with '"' is quoted ("" inside is one '"',
 * a character after the closing quote continues the field, an unterminated
 * quote runs to the end); each \r or \n ends a record (\r\n once); blank
 * lines are skipped; a leading UTF-8 BOM is dropped; records may have any
 * number of fields. Bytes are kept as read (no UTF-8 check: cg_nsi_csv_utf8).
 * Errors only for our limits (max_field_bytes, max_columns, max_rows). */
typedef struct cg_nsi_csv_pos {
    uint64_t record, line, byte; /* csv::Position of the record (record 0 = header) */
} cg_nsi_csv_pos;
typedef struct cg_nsi_csv_record {
    const char **fields; /* NUL-terminated arena copies */
    const size_t *lens;  /* byte length of each field */
    size_t n;
    cg_nsi_csv_pos pos;
} cg_nsi_csv_record;
typedef struct cg_nsi_csv {
    cg_nsi_csv_record *records; /* records[0] is the header row */
    size_t n_records;           /* including the header; 0 for an empty input */
} cg_nsi_csv;

int cg_nsi_csv_parse(cg_arena *a, const char *data, size_t len, const cg_nsight_limits *lim,
                     cg_nsi_csv *out, cg_error *err);
/* The csv crate's StringRecord check: "CSV parse error: record R (line L,
 * field: F, byte: B): invalid utf-8: invalid UTF-8 in field F near byte index
 * K". A NUL byte (valid UTF-8, but our strings end at NUL) is also refused. */
int cg_nsi_csv_utf8(const cg_nsi_csv_record *rec, cg_error *err);

/* ---- reports.c: header normalization, numbers, the five reports ---- */
/* normalized_headers: trim, ASCII-lowercase, delete "(" ")" "%", space "-"
 * "/" to "_", trim "_"; result in the arena. */
char *cg_nsi_normalize_header(cg_arena *a, const char *h);
/* optional_number(raw, label): trim, drop ',', empty = absent; else u64, or
 * an f64 that is finite, not negative (-0 included) and below 2^64
 * (truncated). Returns 0 and sets *present / *out (raw NULL = absent), or -1
 * with the crate's message: "invalid|non-finite|negative|overflowing <label>
 * value <cleaned:?>". */
int cg_nsi_parse_number(const char *raw, const char *label, bool *present, uint64_t *out, cg_error *err);
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
/* str::trim and `{:?}` of a str: cg_str_trim_span, cg_rust_debug_str (base/rustfmt.h) */
/* Sorted (byte order), deduplicated copy of a string list. */
cg_strlist cg_nsi_sorted_set(cg_arena *a, const cg_strlist *in);
bool cg_nsi_set_contains(const cg_strlist *sorted, const char *s);
/* Stable merge sort using an arena scratch buffer. */
void cg_nsi_stable_sort(cg_arena *a, void *base, size_t n, size_t size,
                        int (*cmp)(const void *, const void *));

#endif
