#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) in
# their own build directory and runs each one for SECONDS (default 60), one at
# a time with one job. Not part of `make test` (tests/unit/test_fuzz_regress.c
# replays the corpus and crash reproducers there). See docs/reliability.md.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]      TARGET = json trace bundle_manifest ...
#
# A dictionary tests/fuzz/<target>.dict is used when present.
# Environment: CG_FUZZ_BUILD (default build-fuzz), CC (default clang),
# CG_FUZZ_ARGS (extra libFuzzer flags). The working corpus grows in
# $CG_FUZZ_BUILD/corpus/<target> (seeded from tests/fuzz/corpus/<target>);
# crashes, leaks and timeouts land in $CG_FUZZ_BUILD/artifacts/<target>/.
# Exit status: 0 when every target ran clean, 1 when any target found a problem.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
build=${CG_FUZZ_BUILD:-$root/build-fuzz}
cc=${CC:-clang}
case $secs in ''|*[!0-9]*) echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2 ;; esac

cmake -S "$root/tests/fuzz" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j "${CG_FUZZ_BUILD_JOBS:-2}" >/dev/null

if [ $# -eq 0 ]; then
  set --
  for f in "$root"/tests/fuzz/fuzz_*.c; do t=$(basename "$f" .c); set -- "$@" "${t#fuzz_}"; done
fi

status=0
for t in "$@"; do
  bin=$build/fuzz_$t
  [ -x "$bin" ] || { echo "no such fuzz target: $t" >&2; status=1; continue; }
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t"
  dict=()
  [ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
  echo "== fuzz_$t for ${secs}s"
  # OSS-Fuzz limits: 25 s per input, 2560 MiB RSS. Leak detection stays on.
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$bin" "$build/corpus/$t" "$root/tests/fuzz/corpus/$t" \
      -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$t/" "${dict[@]}" ${CG_FUZZ_ARGS:-} 2>"$build/fuzz_$t.log"; then
    status=1
    echo "fuzz_$t FOUND A PROBLEM (log: $build/fuzz_$t.log, artifacts: $build/artifacts/$t/)"
    grep -E "ERROR|runtime error|invariant violated" "$build/fuzz_$t.log" | head -5 || true
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ +DONE" "$build/fuzz_$t.log" | tail -3 || true
done
exit $status
