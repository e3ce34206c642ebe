#!/usr/bin/env bash
# bench/compare_http — GET /compare for N vs N bundles (default 10 vs 10) at
# concurrency 8 against a real candle-graph-server + PostgreSQL (the test
# harness's private cluster), for traces of RECORDS_SMALL (10k) and RECORDS_BIG
# (1M) records: requests/s and p50/p99 latency per size, and the p99 ratio
# big/small (target ≈ 1: the server compares stored cohort rows and never
# reads a trace, so the cost does not depend on the trace size).
#
# Traces: bench/trace_ingest's gen_trace with a comparison identity and
# production_equivalent scope (prep.sh), so the comparisons are eligible and run
# the full bootstrap; bundles hold trace.jsonl only (semantic status
# not_rederivable) to keep the 1M-record setup to minutes. Setup (generation,
# upload, ingest) is untimed; the server's own answer is checked to be 200 and
# byte-identical to `candle-graph compare` on the same bundles before timing.
#
# usage: bench/compare_http/run.sh [BUILD]   env: N RECORDS_SMALL RECORDS_BIG CONC SECS
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
N=${N:-10}; RECORDS_SMALL=${RECORDS_SMALL:-10000}; RECORDS_BIG=${RECORDS_BIG:-1000000}; CONC=${CONC:-8}; SECS=${SECS:-10}
export CG_BINARY_DIR=$BUILD CG_SOURCE_DIR=.
. tests/support/server_lib.sh
LOAD=$BUILD/bench/compare_http/bench_compare_http_load
GEN=$BUILD/bench/trace_ingest/bench_gen_trace
for x in "$LOAD" "$GEN" "$CLI"; do [ -x "$x" ] || die "missing $x (build bench_compare_http_load, bench_gen_trace, candle-graph)"; done
srv_setup
TOKEN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "bootstrap failed"
srv_start bench --require-signature no --max-body-bytes $((4 << 30)) --max-decoded-bytes $((4 << 30))

# setup SIZE: N baseline + N candidate bundles of SIZE records, uploaded; sets Q (query).
setup() {
  local size=$1 i a="" b="" d=$T/set$1
  mkdir -p "$d"
  for side in a b; do
    for i in $(seq 1 "$N"); do
      local name=$side$i
      [ "$side" = b ] && j=$((i * 1000 + 5000)) || j=$((i * 1000))
      mkdir -p "$d/$name"
      bash bench/compare_http/prep.sh "$GEN" "$size" "bench-$size-$name" "impl-$side" "p$i" "$j" "$d/$name/trace.jsonl" \
        || die "prep $name"
      manifest "$d/$name" "bench-$size-$name"
      pack "$d/$name" "$d/$name.tar.zst" z
      URL=$URL http POST /bundles -H "$(auth "$TOKEN")" -H 'Content-Type: application/zstd' --data-binary @"$d/$name.tar.zst"
      [ "$CODE" = 201 ] || die "upload $name ($size records): $CODE $(head -c 300 "$T/body")"
      rm -f "$d/$name.tar.zst"
      local id; id=$(sha256sum "$d/$name/bundle.json" | cut -d' ' -f1)
      if [ "$side" = a ]; then a=$a${a:+,}$id; else b=$b${b:+,}$id; fi
    done
  done
  Q="/compare?a=$a&b=$b"
  http GET "$Q" -H "$(auth "$TOKEN")"
  [ "$CODE" = 200 ] || die "GET /compare ($size): $CODE"
  "$CLI" compare $(for i in $(seq 1 "$N"); do echo --baseline "$d/a$i"; done) \
    $(for i in $(seq 1 "$N"); do echo --candidate "$d/b$i"; done) >"$T/cli.json" 2>/dev/null
  cmp -s "$T/cli.json" "$T/body" || die "server comparison differs from the CLI's ($size records)"
  note "setup $size: verdict $(jq -r .verdict "$T/body"), answer $(wc -c <"$T/body") bytes, identical to the CLI"
  rm -rf "$d"
}

measure() { # SIZE CONCURRENCY → JSON line
  "$LOAD" "$URL$Q" "$TOKEN" 1 2 >/dev/null # warm-up
  local r; r=$("$LOAD" "$URL$Q" "$TOKEN" "$2" "$SECS")
  printf '{"records":%s,"cohorts":"%s vs %s","concurrency":%s,%s\n' "$1" "$N" "$N" "$2" "${r#\{}"
}

# concurrency 1 first (the per-request cost), then CONC (the figure asked for)
setup "$RECORDS_SMALL"; measure "$RECORDS_SMALL" 1; SMALL=$(measure "$RECORDS_SMALL" "$CONC"); echo "$SMALL"
setup "$RECORDS_BIG"; measure "$RECORDS_BIG" 1; BIG=$(measure "$RECORDS_BIG" "$CONC"); echo "$BIG"
jq -n --argjson s "$SMALL" --argjson b "$BIG" \
  '{p99_ratio_big_over_small: (($b.p99_ms / $s.p99_ms) * 100 | round / 100), rps_small: $s.rps, rps_big: $b.rps, p99_ms_small: $s.p99_ms, p99_ms_big: $b.p99_ms}' -c
[ "$(jq -r '.failures + .other_status' <<<"$SMALL")" = 0 ] && [ "$(jq -r '.failures + .other_status' <<<"$BIG")" = 0 ] \
  || die "non-2xx answers during the run"
