/* fuzz_entry_common.c — helpers shared by the fuzz entry points (fuzz_entry.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "fuzz_entry.h"

void cg_fuzz_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz invariant violated (%s:%d): ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void cg_fuzz_check_error(const cg_error *err, const char *what, const cg_errcode *allowed) {
    size_t n = strnlen(err->msg, sizeof err->msg);
    CG_FUZZ_REQUIRE(n < sizeof err->msg, "%s: error message is not NUL-terminated", what);
    CG_FUZZ_REQUIRE(n > 0, "%s: rejection without a message (code %d)", what, (int)err->code);
    for (const cg_errcode *c = allowed; *c != CG_OK; c++)
        if (*c == err->code) return;
    cg_fuzz_fail(__FILE__, __LINE__, "%s: unexpected error code %d for: %s", what, (int)err->code, err->msg);
}

static char scratch[64];

static void scratch_cleanup(void) {
    if (scratch[0]) cg_rm_rf(scratch);
}

const char *cg_fuzz_scratch_dir(void) {
    if (scratch[0]) return scratch;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(scratch, sizeof scratch, "%s/cg-fuzz-XXXXXX", base);
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        abort();
    }
    atexit(scratch_cleanup);
    return scratch;
}
