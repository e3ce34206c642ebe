/* rustfmt.h — Rust's own text rules that the crate's messages and checks rely
 * on, one copy for every area: `{:?}` of a str and `str::trim` / blankness
 * (Unicode White_Space, char::is_whitespace).
 *
 * Nothing here allocates except through the cg_buf it is given; inputs are
 * NUL-terminated strings or byte spans; invalid UTF-8 counts as content. */
#ifndef CG_BASE_RUSTFMT_H
#define CG_BASE_RUSTFMT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

/* Rust's `{:?}` of a str appended to b: double quotes; \" \\ \n \r \t
 * escaped; other C0 controls, DEL and C1 controls (U+0080..U+009F) as
 * \u{hex}; everything else as is. */
void cg_rust_debug_str(cg_buf *b, const char *s);
/* Rust's str::trim on n bytes: [*start, *end) without leading and trailing
 * Unicode White_Space. */
void cg_str_trim_span(const char *s, size_t n, size_t *start, size_t *end);
/* true when s is NULL or empty after str::trim. */
bool cg_str_blank(const char *s);

#endif
