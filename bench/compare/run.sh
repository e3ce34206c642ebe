#!/usr/bin/env bash
# bench/compare: one 20-vs-20 comparison/6 from published bundles vs from the
# cohort sample table (stored rows). Usage: bench/compare/run.sh [BUILD_DIR] [bench_compare flags…]
# Needs the bench_compare target (wired from bench/CMakeLists.txt; see README.md).
set -euo pipefail
BUILD="${1:-build}"
shift || true
BIN="$BUILD/bench/compare/bench_compare"
[ -x "$BIN" ] || BIN="$BUILD/bench/bench_compare"
[ -x "$BIN" ] || { echo "bench_compare not built (cmake --build $BUILD --target bench_compare)" >&2; exit 1; }
"$BIN" "$@"
