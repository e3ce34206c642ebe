#!/usr/bin/env bash
# `make bench`: runs every benchmark. Each prints its figures as ratios to a stock
# tool measured in the same run (jq, wc, sha256sum, zstd). Timing is never asserted
# in tests; these numbers go to docs/benchmarks.md.
set -uo pipefail
BUILD="${1:-build}"
cd "$(dirname "$0")/.."
status=0
run() {
  echo
  echo "################ $1"
  shift
  "$@" || { echo "benchmark failed: $*" >&2; status=1; }
}
[ -x bench/trace_ingest/run.sh ] && run trace_ingest bash bench/trace_ingest/run.sh "$BUILD"
[ -f bench/bundle_verify.sh ] && run bundle_verify bash bench/bundle_verify.sh "$BUILD"
[ -f bench/compare/run.sh ] && run compare bash bench/compare/run.sh "$BUILD"
[ -f bench/ingest/run.sh ] && run ingest bash bench/ingest/run.sh "$BUILD"
[ -f bench/compare_http/run.sh ] && run compare_http bash bench/compare_http/run.sh "$BUILD"
[ -f bench/web_timeline/run.sh ] && run web_timeline bash bench/web_timeline/run.sh "$BUILD"
[ -f bench/scale/run.sh ] && run scale bash bench/scale/run.sh "$BUILD"
exit $status
