#!/usr/bin/env bash
# bench/compare_http — GET /compare for N vs N bundles (default 10 vs 10) at
# concurrency 8 against a real candle-graph-server + PostgreSQL (the test
# harness's private cluster), for traces of RECORDS_SMALL (10k) and RECORDS_BIG
# (1M) records: requests/s and p50/p99 latency per size, and the p99 ratio
# big/small (target ≈ 1: the server compares stored cohort rows and never
# reads a trace, so the cost does not depend on the trace size). Two figures per
# size: "computed" (every request computes its comparison: requests rotate over
# 400 distinct cohort orders, more than the answer cache holds) and "cached"
# (one URL: after the first request the answer comes from the cache).
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
  AIDS=(); BIDS=()
  mkdir -p "$d"
  for side in a b; do
    for i in $(seq 1 "$N"); do
      local name=$side$i
      [ "$side" = b ] && j=$((i * 1000 + 5000)) || j=$((i * 1000))
      mkdir -p "$d/$name"
      bash bench/compare_http/prep.sh "$GEN" "$size" "bench-$size-$name" "impl-$side" "p$i" "$j" "$d/$name/trace.jsonl" \
        || die "prep $name"
      # ingest requires evidence.json; a non-evidence/4 schema keeps the bundle
      # not_rederivable (no rederivation of a 1M-record packet during setup)
      printf '{"schema":"candle-graph/bench-not-rederivable"}\n' >"$d/$name/evidence.json"
      manifest "$d/$name" "bench-$size-$name"
      pack "$d/$name" "$d/$name.tar.zst" z
      URL=$URL http POST /bundles -H "$(auth "$TOKEN")" -H 'Content-Type: application/zstd' --data-binary @"$d/$name.tar.zst"
      [ "$CODE" = 201 ] || die "upload $name ($size records): $CODE $(head -c 300 "$T/body")"
      rm -f "$d/$name.tar.zst"
      local id; id=$(sha256sum "$d/$name/bundle.json" | cut -d' ' -f1)
      if [ "$side" = a ]; then a=$a${a:+,}$id; AIDS+=("$id"); else b=$b${b:+,}$id; BIDS+=("$id"); fi
    done
  done
  Q="/compare?a=$a&b=$b"
  echo "$URL$Q" >"$T/url_$size"
  http GET "$Q" -H "$(auth "$TOKEN")"
  [ "$CODE" = 200 ] || die "GET /compare ($size): $CODE"
  "$CLI" compare $(for i in $(seq 1 "$N"); do echo --baseline "$d/a$i"; done) \
    $(for i in $(seq 1 "$N"); do echo --candidate "$d/b$i"; done) >"$T/cli.json" 2>/dev/null
  cmp -s "$T/cli.json" "$T/body" || die "server comparison differs from the CLI's ($size records)"
  note "setup $size: verdict $(jq -r .verdict "$T/body"), answer $(wc -c <"$T/body") bytes, identical to the CLI"
  rm -rf "$d"
  # 400 distinct cohort orders (rotations x direction of each cohort): more than
  # the server's answer cache holds, so every request computes its comparison
  : >"$T/urls_$size"
  local ra rb da db
  for da in f r; do for ra in $(seq 0 $((N - 1))); do
    local av; av=$(order "$da" "$ra" "${AIDS[@]}")
    for db in f r; do for rb in $(seq 0 $((N - 1))); do
      echo "$URL/compare?a=$av&b=$(order "$db" "$rb" "${BIDS[@]}")" >>"$T/urls_$size"
    done; done
  done; done
}

order() { # DIR(f|r) ROT IDS… → comma list
  local dir=$1 rot=$2; shift 2
  local ids=("$@") n=$# i out=""
  [ "$dir" = r ] && { local rev=(); for ((i = n - 1; i >= 0; i--)); do rev+=("${ids[$i]}"); done; ids=("${rev[@]}"); }
  for ((i = 0; i < n; i++)); do out=$out${out:+,}${ids[$(((i + rot) % n))]}; done
  echo "$out"
}

measure() { # SIZE CONCURRENCY MODE(computed|cached) → JSON line
  local target="@$T/urls_$1"; [ "$3" = cached ] && target="@$T/url_$1"
  "$LOAD" "$target" "$TOKEN" 1 2 >/dev/null # warm-up
  local r; r=$("$LOAD" "$target" "$TOKEN" "$2" "$SECS")
  printf '{"records":%s,"cohorts":"%s vs %s","concurrency":%s,"answers":"%s",%s\n' "$1" "$N" "$N" "$2" "$3" "${r#\{}"
}

setup "$RECORDS_SMALL"
setup "$RECORDS_BIG"
# both sets live in one database; settle it (no autovacuum/analyze during timing),
# then measure the two sizes back to back, twice, so both see the same machine
psqlc "VACUUM ANALYZE" >/dev/null || die "vacuum"
for round in 1 2; do
  for mode in computed cached; do
    for conc in 1 "$CONC"; do
      [ "$mode" = cached ] && [ "$conc" = 1 ] && continue
      S=$(measure "$RECORDS_SMALL" "$conc" "$mode"); echo "$S"
      B=$(measure "$RECORDS_BIG" "$conc" "$mode"); echo "$B"
      [ "$(jq -r '.failures + .other_status' <<<"$S")" = 0 ] && [ "$(jq -r '.failures + .other_status' <<<"$B")" = 0 ] \
        || die "non-2xx answers during the run"
      [ "$conc" = "$CONC" ] && jq -n --argjson s "$S" --argjson b "$B" --arg round "$round" -c \
        '{round: ($round | tonumber), answers: $s.answers, concurrency: $s.concurrency,
          p99_ratio_big_over_small: (($b.p99_ms / $s.p99_ms) * 100 | round / 100),
          rps_small: $s.rps, rps_big: $b.rps, p99_ms_small: $s.p99_ms, p99_ms_big: $b.p99_ms}'
    done
  done
done
