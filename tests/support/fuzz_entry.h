/* fuzz_entry.h — shared entry points of the fuzz targets (tests/fuzz/).
 *
 * Each cg_fuzz_<target>(data, size) feeds one untrusted input to a parser of
 * libcandlegraph and checks the invariants every parser promises:
 *   - no crash, leak or undefined behaviour (checked by ASan/UBSan/LSan);
 *   - a rejection carries a known, non-OK error code from the documented set
 *     and a non-empty, NUL-terminated message;
 *   - an accepted input round-trips (write → parse → write is stable) and
 *     whatever is built on it (health, evidence, receipts) serializes;
 *   - the same input gives the same answer twice (same code, same message).
 * A violated invariant prints "fuzz invariant violated: ..." and aborts, which
 * libFuzzer and the regression runner (tests/unit/test_fuzz_regress.c) both
 * report as a failure. Every entry returns 0 and owns no state across calls
 * except a per-process scratch directory for targets that need files.
 *
 * The same functions back the libFuzzer binaries (tests/fuzz/fuzz_*.c) and the
 * deterministic replay of tests/fuzz/corpus and tests/fuzz/crashes in make test. */
#ifndef CG_TEST_FUZZ_ENTRY_H
#define CG_TEST_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

int cg_fuzz_json(const uint8_t *data, size_t size);
/* reader (memory and file paths must agree) + summary + health + evidence build */
int cg_fuzz_trace(const uint8_t *data, size_t size);
/* bundle.json: parse, path safety, sort/write round trip, cg_bundle_verify in a scratch bundle */
int cg_fuzz_bundle_manifest(const uint8_t *data, size_t size);
/* input = manifest bytes, one 0x00 byte, sidecar JSON; also parsed whole as public and private key PEM */
int cg_fuzz_signature(const uint8_t *data, size_t size);
/* tar / tar.zst bytes → cg_archive_unpack_fd into a scratch directory (tight limits) */
int cg_fuzz_archive(const uint8_t *data, size_t size);
/* campaign/1 manifest: parse, round trip, step order, status over missing states, filesystem status */
int cg_fuzz_campaign(const uint8_t *data, size_t size);

/* ---- helpers shared by the entries ---- */
void cg_fuzz_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));
#define CG_FUZZ_REQUIRE(cond, ...)                                                                            \
    do {                                                                                                      \
        if (!(cond)) cg_fuzz_fail(__FILE__, __LINE__, "`" #cond "`: " __VA_ARGS__);                           \
    } while (0)
/* A rejection: code must be one of `allowed` (terminated by CG_OK) and the message non-empty. */
void cg_fuzz_check_error(const cg_error *err, const char *what, const cg_errcode *allowed);
/* A per-process scratch directory (created on first use, removed at exit). */
const char *cg_fuzz_scratch_dir(void);

#endif
