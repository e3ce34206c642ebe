#!/usr/bin/env bash
# Source rules of docs/STYLE (the brief's "clean C") that a compiler does not
# enforce, checked over lib/, server/ and agent/ (comments and strings included:
# a false match is renamed, not excused):
#   - no banned calls: sprintf, vsprintf, strcpy, strcat, atoi, gets
#   - no bare free(): every block is released with cg_free (base/alloc.h),
#     because a spilled block (base/spill.h) passed to free() is a crash;
#     only the allocator itself (lib/base/alloc.c, spill.c) and the example
#     programs users copy (agent/examples/) call free
set -euo pipefail
SRC="${CG_SOURCE_DIR:?}"
cd "$SRC"
fails=0
files=$(git ls-files 'lib/*.[ch]' 'server/*.[ch]' 'agent/*.[ch]' 2>/dev/null || find lib server agent -name '*.[ch]')
banned=$(grep -nE '(^|[^A-Za-z0-9_])(v?sprintf|strcpy|strcat|atoi|gets)[[:space:]]*\(' $files || true)
if [ -n "$banned" ]; then echo "FAIL: banned calls:" >&2; echo "$banned" >&2; fails=1; fi
bare=$(grep -nE '(^|[^A-Za-z0-9_>.])free\(' $(printf '%s\n' $files | grep -vE '^(lib/base/alloc\.c|lib/base/spill\.[ch]|agent/examples/)') || true)
if [ -n "$bare" ]; then echo "FAIL: free() outside the allocator (use cg_free):" >&2; echo "$bare" >&2; fails=1; fi
n=$(printf '%s\n' $files | wc -l)
[ $fails -eq 0 ] && echo "source rules: $n files, no banned call, no bare free()"
exit $fails
