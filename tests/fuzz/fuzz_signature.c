/* fuzz_signature.c — libFuzzer target; the body is cg_fuzz_signature (tests/support/fuzz_entry_signature.c),
 * shared with the deterministic replay in tests/unit/test_fuzz_regress.c. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return cg_fuzz_signature(data, size); }
