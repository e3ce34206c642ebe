/* cli_http.h — one bounded HTTP GET against candle-graph-server with a bearer
 * token (the read side of `candle-graph gate`). The body is kept whole up to
 * CLI_HTTP_BODY_MAX (a larger answer fails). Ownership: *body is malloc'd and
 * NUL-terminated; the caller frees it. Errors: -1 with err for no answer
 * (connection, timeout) or a missing libcurl; any HTTP status is a successful
 * call. Query values must already be URL-encoded (cli_http_escape). */
#ifndef CG_CLI_HTTP_H
#define CG_CLI_HTTP_H

#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"

#define CLI_HTTP_BODY_MAX ((size_t)64 << 20)

int cli_http_get(const char *url, const char *token, long *status, char **body, size_t *len, cg_error *err);
/* Appends s percent-encoded (RFC 3986 unreserved characters kept). */
void cli_http_escape(cg_buf *out, const char *s);

#endif
