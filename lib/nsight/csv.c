/* csv.c — the CSV dialect the crate reads `nsys stats --format csv` reports
 * with (csv 1.1.6 / csv-core 0.1.6 defaults, flexible): see nsight_internal.h.
 * No input is malformed at this level: quotes only group, a stray character
 * after a closing quote continues the field, an unterminated quote runs to the
 * end of the input. UTF-8 is checked per record when the record is used
 * (cg_nsi_csv_utf8), as the csv crate's StringRecord does. Our limits
 * (max_field_bytes, max_columns, max_rows) are the only errors here. */
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "nsight/nsight_internal.h"

/* Where a field ends inside the state machine. */
typedef enum csv_state { START_RECORD, START_FIELD, IN_FIELD, IN_QUOTED, AFTER_QUOTE, AFTER_CR } csv_state;

typedef struct csv_reader {
    cg_arena *a;
    const cg_nsight_limits *lim;
    cg_nsi_csv *out;
    cg_buf field;
    const char **fields;
    size_t *lens;
    size_t n_fields, cap_fields, cap_lens, cap_records;
    uint64_t line, consumed;
    /* position of the record being read: where the previous one ended, as
     * the csv crate reports it (blank lines before a record do not move it) */
    cg_nsi_csv_pos pos;
    bool ended; /* a record ended at the current byte */
} csv_reader;

static int end_field(csv_reader *r, cg_error *err) {
    if (r->n_fields >= r->lim->max_columns)
        return cg_err_set(err, CG_ELIMIT, "line %llu: record exceeds limit max_columns (%zu)",
                          (unsigned long long)r->pos.line, r->lim->max_columns);
    char *f = cg_arena_strndup(r->a, r->field.len ? r->field.data : "", r->field.len);
    size_t n = r->n_fields;
    CG_NSI_PUSH(r->a, r->fields, n, r->cap_fields, f);
    n = r->n_fields;
    CG_NSI_PUSH(r->a, r->lens, n, r->cap_lens, r->field.len);
    r->n_fields = n;
    cg_buf_reset(&r->field);
    return 0;
}

static int end_record(csv_reader *r, cg_error *err) {
    if (end_field(r, err) != 0) return -1;
    cg_nsi_csv *o = r->out;
    if (o->n_records > 0 && (uint64_t)o->n_records > r->lim->max_rows)
        return cg_err_set(err, CG_ELIMIT, "line %llu: report exceeds limit max_rows (%llu rows)",
                          (unsigned long long)r->pos.line, (unsigned long long)r->lim->max_rows);
    cg_nsi_csv_record rec = {r->fields, r->lens, r->n_fields, r->pos};
    size_t n = o->n_records;
    CG_NSI_PUSH(r->a, o->records, n, r->cap_records, rec);
    o->n_records = n;
    r->fields = NULL;
    r->lens = NULL;
    r->n_fields = r->cap_fields = r->cap_lens = 0;
    r->ended = true;
    return 0;
}

static int put(csv_reader *r, char c, cg_error *err) {
    if (r->field.len >= r->lim->max_field_bytes)
        return cg_err_set(err, CG_ELIMIT, "line %llu: field exceeds limit max_field_bytes (%zu bytes)",
                          (unsigned long long)r->pos.line, r->lim->max_field_bytes);
    cg_buf_putc(&r->field, c);
    return 0;
}

/* One byte through csv-core's machine (quote '"', delimiter ',', any of \r
 * and \n ends a record, \r\n counts once, blank lines are skipped). */
static int step(csv_reader *r, csv_state *st, char c, cg_error *err) {
    bool term = c == '\r' || c == '\n';
    if (*st == AFTER_CR) {
        *st = START_RECORD;
        if (c == '\n') return 0;
    }
    if (*st == IN_QUOTED) {
        if (c != '"') return put(r, c, err);
        *st = AFTER_QUOTE;
        return 0;
    }
    if (*st == START_RECORD) {
        if (term) return 0;
        *st = START_FIELD;
    }
    if ((*st == START_FIELD || *st == AFTER_QUOTE) && c == '"') {
        bool escaped = *st == AFTER_QUOTE; /* "" inside quotes is one quote */
        *st = IN_QUOTED;
        return escaped ? put(r, '"', err) : 0;
    }
    if (c == ',') {
        *st = START_FIELD;
        return end_field(r, err);
    }
    if (term) {
        *st = c == '\r' ? AFTER_CR : START_RECORD;
        return end_record(r, err);
    }
    *st = IN_FIELD;
    return put(r, c, err);
}

int cg_nsi_csv_parse(cg_arena *a, const char *data, size_t len, const cg_nsight_limits *lim,
                     cg_nsi_csv *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    csv_reader r;
    memset(&r, 0, sizeof r);
    r.a = a;
    r.lim = lim;
    r.out = out;
    r.field = (cg_buf)CG_BUF_INIT;
    r.line = 1;
    r.pos = (cg_nsi_csv_pos){0, 1, 0};
    size_t i = 0;
    /* csv-core drops a UTF-8 byte-order mark before the first record; its
     * bytes still count in positions */
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) i = r.consumed = 3;
    csv_state st = START_RECORD;
    int rc = 0;
    for (; i < len && rc == 0; i++) {
        rc = step(&r, &st, data[i], err);
        r.consumed++;
        if (data[i] == '\n') r.line++;
        if (r.ended) {
            r.pos = (cg_nsi_csv_pos){(uint64_t)out->n_records, r.line, r.consumed};
            r.ended = false;
        }
    }
    if (rc == 0 && st != START_RECORD && st != AFTER_CR) rc = end_record(&r, err);
    cg_buf_free(&r.field);
    if (rc != 0) memset(out, 0, sizeof *out);
    return rc;
}

/* Offset of the first byte that is not part of well-formed UTF-8 (Rust's
 * Utf8Error::valid_up_to), or len. */
static size_t utf8_valid_up_to(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) need = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) need = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) need = 3, cp = c & 0x07;
        else return i;
        if (len - i <= need) return i;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((need == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return i;
        i += need + 1;
    }
    return len;
}

int cg_nsi_csv_utf8(const cg_nsi_csv_record *rec, cg_error *err) {
    for (size_t f = 0; f < rec->n; f++) {
        size_t ok = utf8_valid_up_to((const unsigned char *)rec->fields[f], rec->lens[f]);
        if (ok != rec->lens[f])
            return cg_err_set(err, CG_EPARSE,
                              "CSV parse error: record %llu (line %llu, field: %zu, byte: %llu): invalid utf-8: "
                              "invalid UTF-8 in field %zu near byte index %zu",
                              (unsigned long long)rec->pos.record, (unsigned long long)rec->pos.line, f,
                              (unsigned long long)rec->pos.byte, f, ok);
        if (memchr(rec->fields[f], '\0', rec->lens[f]))
            return cg_err_set(err, CG_EPARSE, "CSV record %llu (line %llu): NUL byte in field %zu",
                              (unsigned long long)rec->pos.record, (unsigned long long)rec->pos.line, f);
    }
    return 0;
}
