/* csv.c — bounded RFC-4180 reader for `nsys stats --format csv` output.
 * See nsight_internal.h for the accepted dialect. Limits: max_field_bytes per
 * field, max_columns per record, max_rows data records (the header is not
 * counted). The whole input is validated as UTF-8 first (the upstream reader
 * works on UTF-8 string records). */
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "nsight/nsight_internal.h"

/* Returns the offset of the first invalid UTF-8 sequence or NUL byte, or len. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len, bool *nul) {
    size_t i = 0;
    *nul = false;
    while (i < len) {
        unsigned char c = s[i];
        if (c == 0) {
            *nul = true;
            return i;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return i;
        }
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

static size_t line_of(const char *data, size_t off) {
    size_t line = 1;
    for (size_t i = 0; i < off; i++)
        if (data[i] == '\n') line++;
    return line;
}

int cg_nsi_csv_parse(cg_arena *a, const char *data, size_t len, const cg_nsight_limits *lim,
                     cg_nsi_csv *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    bool nul;
    size_t bad = utf8_invalid_at((const unsigned char *)data, len, &nul);
    if (bad != len)
        return cg_err_set(err, CG_EPARSE, "line %zu: %s", line_of(data, bad),
                          nul ? "NUL byte in CSV input" : "invalid UTF-8 in CSV input");

    size_t i = 0;
    if (len >= 3 && (unsigned char)data[0] == 0xEF && (unsigned char)data[1] == 0xBB &&
        (unsigned char)data[2] == 0xBF)
        i = 3;

    size_t line = 1, cap_records = 0, cap_lines = 0;
    cg_buf field = CG_BUF_INIT;
    char **rec = NULL;
    size_t rec_n = 0, rec_cap = 0;
    int rc = 0;

    while (i < len) {
        /* empty line: skip */
        if (data[i] == '\n') {
            i++;
            line++;
            continue;
        }
        if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') {
            i += 2;
            line++;
            continue;
        }
        size_t rec_line = line;
        rec = NULL;
        rec_n = rec_cap = 0;
        bool end_of_record = false;
        while (!end_of_record) {
            cg_buf_reset(&field);
            bool quoted = false;
            if (i < len && data[i] == '"') {
                quoted = true;
                size_t qline = line;
                i++;
                for (;;) {
                    if (i >= len) {
                        rc = cg_err_set(err, CG_EPARSE, "line %zu: unterminated quoted field", qline);
                        goto done;
                    }
                    char c = data[i];
                    if (c == '"') {
                        if (i + 1 < len && data[i + 1] == '"') {
                            cg_buf_putc(&field, '"');
                            i += 2;
                        } else {
                            i++;
                            break;
                        }
                    } else {
                        if (c == '\n') line++;
                        cg_buf_putc(&field, c);
                        i++;
                    }
                    if (field.len > lim->max_field_bytes) {
                        rc = cg_err_set(err, CG_ELIMIT,
                                        "line %zu: field exceeds limit max_field_bytes (%zu bytes)",
                                        qline, lim->max_field_bytes);
                        goto done;
                    }
                }
            } else {
                size_t start = i;
                while (i < len && data[i] != ',' && data[i] != '\n' &&
                       !(data[i] == '\r' && i + 1 < len && data[i + 1] == '\n'))
                    i++;
                if (i - start > lim->max_field_bytes) {
                    rc = cg_err_set(err, CG_ELIMIT,
                                    "line %zu: field exceeds limit max_field_bytes (%zu bytes)", line,
                                    lim->max_field_bytes);
                    goto done;
                }
                cg_buf_append(&field, data + start, i - start);
            }
            /* after a field: ',' | record end | EOF */
            if (i >= len) {
                end_of_record = true;
            } else if (data[i] == ',') {
                i++;
            } else if (data[i] == '\n') {
                i++;
                line++;
                end_of_record = true;
            } else if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') {
                i += 2;
                line++;
                end_of_record = true;
            } else {
                /* only reachable after a closing quote */
                (void)quoted;
                rc = cg_err_set(err, CG_EPARSE, "line %zu: unexpected character after closing quote",
                                line);
                goto done;
            }
            if (rec_n >= lim->max_columns) {
                rc = cg_err_set(err, CG_ELIMIT, "line %zu: record exceeds limit max_columns (%zu)",
                                rec_line, lim->max_columns);
                goto done;
            }
            char *f = cg_arena_strndup(a, field.len ? field.data : "", field.len);
            CG_NSI_PUSH(a, rec, rec_n, rec_cap, f);
        }
        if (out->n_records == 0) {
            out->n_columns = rec_n;
        } else {
            if (rec_n != out->n_columns) {
                rc = cg_err_set(err, CG_EPARSE, "line %zu: record has %zu fields but the header has %zu",
                                rec_line, rec_n, out->n_columns);
                goto done;
            }
            if ((uint64_t)out->n_records > lim->max_rows) {
                rc = cg_err_set(err, CG_ELIMIT, "line %zu: report exceeds limit max_rows (%llu rows)",
                                rec_line, (unsigned long long)lim->max_rows);
                goto done;
            }
        }
        size_t nr = out->n_records, nl = out->n_records;
        CG_NSI_PUSH(a, out->fields, nr, cap_records, rec);
        CG_NSI_PUSH(a, out->lines, nl, cap_lines, rec_line);
        out->n_records = nr;
    }
done:
    cg_buf_free(&field);
    if (rc != 0) memset(out, 0, sizeof *out);
    return rc;
}
