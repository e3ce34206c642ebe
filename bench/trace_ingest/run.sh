#!/usr/bin/env bash
# Trace ingest benchmark, against the crate's JSON stack (serde-trace-reader,
# when CG_BENCH_PEER names it), `jq -c . >/dev/null` and `wc -l` on the same
# synthetic trace, in the same run:
#   - parse + health alone (bench_parse_health: cg_trace_read_file + cg_health_analyze),
#   - `candle-graph summary` (parse + health + evidence summary),
#   - the full evidence build `candle-graph import TRACE -o FILE` (parse + health +
#     timing + memory + graph/5 + capabilities + evidence/4 JSON, streamed).
#
# usage: bench/trace_ingest/run.sh [BUILD_DIR]      (default: build)
# env:   CG_BENCH_RECORDS  records in the generated trace (default 1000000)
#        CG_BENCH_REPEAT   runs per tool; the best wall time is kept (default 3)
#        CG_BENCH_STRICT=1 exit 1 when a target is missed
#        CG_BENCH_RUSAGE=1 use the getrusage wrapper even when /usr/bin/time exists
#        CG_BENCH_PEER     the serde-trace-reader binary (../shared/peers/serde-trace-reader)
#        CG_BENCH_TRACE    an existing trace to read instead of generating one
# Targets: parse+health ≥ 3× jq's throughput; import ≥ 2× jq's throughput;
# max RSS ≤ 3× the file size for parse+health, summary and import
# (summary keeps its earlier ≥ 3× jq target). Against the peer (issue 14):
# parse+health ≤ 1.0× its time, summary ≤ 1.5×, import ≤ 2×.
set -euo pipefail

BUILD="${1:-build}"
RECORDS="${CG_BENCH_RECORDS:-1000000}"
REPEAT="${CG_BENCH_REPEAT:-3}"
CG="$BUILD/agent/candle-graph"
GEN="$BUILD/bench/trace_ingest/bench_gen_trace"
MAXRSS="$BUILD/bench/trace_ingest/bench_maxrss"
PH="$BUILD/bench/trace_ingest/bench_parse_health"

for exe in "$CG" "$GEN" "$MAXRSS" "$PH"; do
  if [ ! -x "$exe" ]; then
    echo "trace_ingest: $exe is not built (cmake --build $BUILD --target candle-graph bench_gen_trace bench_maxrss bench_parse_health)" >&2
    exit 1
  fi
done
HAVE_JQ=1
command -v jq >/dev/null 2>&1 || HAVE_JQ=0

TMP="$(mktemp -d --tmpdir cg-trace-ingest.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
TRACE="$TMP/trace.jsonl"
mkdir -p "$TMP/out"
if [ -n "${CG_BENCH_TRACE:-}" ]; then TRACE="$CG_BENCH_TRACE"; else "$GEN" --records "$RECORDS" --out "$TRACE"; fi
BYTES=$(stat -c %s "$TRACE")

# measure NAME CMD… : runs CMD (stdout to /dev/null) REPEAT times; sets BEST_S
# (best wall seconds) and RSS_KB (max RSS of the run with the best time).
measure() {
  local name="$1"; shift
  BEST_S=""; RSS_KB=""
  for _ in $(seq "$REPEAT"); do
    local wall rss
    if [ -x /usr/bin/time ] && [ "${CG_BENCH_RUSAGE:-0}" != 1 ]; then
      local t0 t1
      t0=$(date +%s%N)
      /usr/bin/time -v -o "$TMP/time.txt" "$@" >/dev/null
      t1=$(date +%s%N)
      wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
      rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/time.txt")
    else
      "$MAXRSS" "$@" >/dev/null 2>"$TMP/time.txt"
      wall=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$TMP/time.txt" | tail -1)
      rss=$(sed -n 's/.*maxrss_kb=\([0-9]*\).*/\1/p' "$TMP/time.txt" | tail -1)
    fi
    if [ -z "$BEST_S" ] || awk -v a="$wall" -v b="$BEST_S" 'BEGIN { exit !(a < b) }'; then
      BEST_S="$wall"; RSS_KB="$rss"
    fi
  done
  printf '%-28s %8.3f s %9.1f MB/s %10.1f MiB %8.2f\n' "$name" "$BEST_S" \
    "$(awk -v b="$BYTES" -v s="$BEST_S" 'BEGIN { print (s > 0 ? b / 1e6 / s : 0) }')" \
    "$(awk -v k="$RSS_KB" 'BEGIN { print k / 1024 }')" \
    "$(awk -v k="$RSS_KB" -v b="$BYTES" 'BEGIN { print k * 1024 / b }')"
}

echo "trace_ingest: $RECORDS records, $(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1e6 }') MB, best of $REPEAT runs"
echo "host: $(nproc) CPUs, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %10s %14s %14s %8s\n' "tool" "wall" "throughput" "max RSS" "RSS/file"

# the trace must be valid and complete (summary exits 1 otherwise)
"$CG" summary --require-valid "$TRACE" -o "$TMP/summary.json"
"$PH" "$TRACE" | grep -q 'issues=0 valid=1 complete=1' || { echo "trace_ingest: generated trace is not clean" >&2; exit 1; }
measure "parse + health" "$PH" "$TRACE"
PH_S="$BEST_S"; PH_RSS="$RSS_KB"
measure "candle-graph summary" "$CG" summary --require-valid "$TRACE" -o "$TMP/summary.json"
CG_S="$BEST_S"; CG_RSS="$RSS_KB"
measure "candle-graph import -o F" "$CG" import "$TRACE" -o "$TMP/out/import.json"
IM_S="$BEST_S"; IM_RSS="$RSS_KB"
IM_BYTES=$(stat -c %s "$TMP/out/import.json")
rm -f "$TMP/out/import.json"
JQ_S=""
if [ "$HAVE_JQ" = 1 ]; then
  measure "jq -c ." jq -c . "$TRACE"
  JQ_S="$BEST_S"
else
  echo "jq -c .                      (jq not installed: no jq ratio)"
fi
measure "wc -l" wc -l "$TRACE"
WC_S="$BEST_S"
PEER_S=""
if [ -n "${CG_BENCH_PEER:-}" ] && [ -x "$CG_BENCH_PEER" ]; then
  measure "serde-trace-reader (peer)" "$CG_BENCH_PEER" "$TRACE"
  PEER_S="$BEST_S"
fi

MISS=0
echo
echo "import wrote $(awk -v b="$IM_BYTES" 'BEGIN { printf "%.1f", b / 1e6 }') MB of evidence.json"
# ratio NAME SECONDS TARGET: throughput relative to jq
ratio() {
  [ -n "$JQ_S" ] || return 0
  local r ok
  r=$(awk -v j="$JQ_S" -v c="$2" 'BEGIN { printf "%.2f", j / c }')
  ok=$(awk -v r="$r" -v t="$3" 'BEGIN { print (r >= t ? "PASS" : "MISS") }')
  [ "$ok" = MISS ] && MISS=1
  printf '%-22s %6sx jq'"'"'s throughput (target >= %sx) %s\n' "$1 vs jq:" "$r" "$3" "$ok"
}
# rss NAME KB: max RSS relative to the trace file
rss() {
  local r ok
  r=$(awk -v k="$2" -v b="$BYTES" 'BEGIN { printf "%.2f", k * 1024 / b }')
  ok=$(awk -v r="$r" 'BEGIN { print (r <= 3 ? "PASS" : "MISS") }')
  [ "$ok" = MISS ] && MISS=1
  printf '%-22s %6sx the file size (target <= 3x) %s\n' "$1 max RSS:" "$r" "$ok"
}
ratio "parse+health" "$PH_S" 3
rss "parse+health" "$PH_RSS"
ratio "summary" "$CG_S" 3
rss "summary" "$CG_RSS"
ratio "import" "$IM_S" 2
rss "import" "$IM_RSS"
# peer NAME SECONDS TARGET: time as a multiple of the peer's (target: at most TARGET)
peer() {
  [ -n "$PEER_S" ] || return 0
  local r ok
  r=$(awk -v p="$PEER_S" -v c="$2" 'BEGIN { printf "%.2f", c / p }')
  ok=$(awk -v r="$r" -v t="$3" 'BEGIN { print (r <= t ? "PASS" : "MISS") }')
  [ "$ok" = MISS ] && MISS=1
  printf '%-22s %6sx the peer'"'"'s time (target <= %sx) %s\n' "$1 vs serde:" "$r" "$3" "$ok"
}
peer "parse+health" "$PH_S" 1.0
peer "summary" "$CG_S" 1.5
peer "import" "$IM_S" 2
echo "parse+health vs wc -l: $(awk -v w="$WC_S" -v c="$PH_S" 'BEGIN { printf "%.3f", w / c }')x wc's throughput"
if [ "${CG_BENCH_STRICT:-0}" = 1 ] && [ "$MISS" = 1 ]; then exit 1; fi
exit 0
