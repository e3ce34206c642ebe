#!/usr/bin/env bash
# Server memory and time per bundle size (issue 14: ingest keeps the server's peak
# RSS ≤ 512 MiB whatever the bundle size). For each record count: a generated
# trace, `candle-graph report` + `pack`, then one upload to a fresh
# candle-graph-server (embedded PostgreSQL, default limits, loopback). Prints the
# bundle's file sizes, the upload and decoded sizes, the ingest wall time, the
# server's peak RSS (VmHWM of /proc/PID/status) after the upload and again after
# GET /files, Range and /archive reads, the time-resolved RSS peak during the
# upload (VmRSS sampled every 0.1 s, with the last log line seen at that moment:
# which phase held the memory), the server's peak RSS once the background index
# builds of the upload (Timeline, then dashboard views) are done and the first
# dashboard answer (GET /views/spans) came back, and the blob store's
# stored/plain ratio from /metrics, and the size of the bulk fact tables (rows
# and pg_total_relation_size after the upload and its index builds). With
# CG_RSS_DERIVED=1 also the time and peak RSS of each derived route (/graph,
# /evidence, /viewer, /export, /archive).
# Nothing is asserted (timing never is).
#
# usage: bench/ingest/rss.sh [BUILD_DIR]                          (default: build)
# env:   CG_RSS_SIZES   record counts (default "100000 1000000")
#        CG_RSS_TRACE_<N>  an existing trace of N records to use instead of generating one
#        CG_RSS_BUNDLE_<N> an existing bundle directory of N records (report is skipped; kept)
#        CG_RSS_BLOB_STORE fs (default) or pg
#        CG_RSS_DERIVED  1: time every derived route as well
#        CG_RSS_LOG_DIR  a directory that receives each run's server log (server-N.log)
#        CG_RSS_SERVER_FLAGS  extra flags of `serve` (e.g. "--resident-budget-bytes 0": no spilling)
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
CG="$BUILD/agent/candle-graph"
SERVER="$BUILD/server/candle-graph-server"
GEN="$BUILD/bench/trace_ingest/bench_gen_trace"
SIZES="${CG_RSS_SIZES:-100000 1000000}"
for exe in "$CG" "$SERVER" "$GEN"; do
  [ -x "$exe" ] || { echo "rss: $exe is not built" >&2; exit 1; }
done
TMP="$(mktemp -d --tmpdir cg-bench-rss.XXXXXX)"
chmod 755 "$TMP"
SRV_PID=""
stop_server() {
  [ -n "$SRV_PID" ] && { kill -TERM "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; }
  SRV_PID=""
}
trap 'stop_server; rm -rf "$TMP"' EXIT
kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$SRV_PID/status"; }
mib() { awk -v k="$1" 'BEGIN{printf "%.0f MiB", k/1024}'; }

echo "host: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $SIZES; do
  W="$TMP/$n"
  mkdir -p "$W"
  trace_var="CG_RSS_TRACE_$n" bundle_var="CG_RSS_BUNDLE_$n"
  B="${!bundle_var:-$W/b}"
  if [ -z "${!bundle_var:-}" ]; then
    if [ -n "${!trace_var:-}" ]; then trace="${!trace_var}"
    else trace="$W/trace.jsonl"; "$GEN" --records "$n" --run-id "bench-rss-$n-$$" --out "$trace"; fi
    "$CG" report "$trace" --bundle "$B" >/dev/null
    [ -z "${!trace_var:-}" ] && rm -f "$trace"
  fi
  "$CG" pack "$B" -o "$W/b.tar.zst" >/dev/null
  decoded=$(find "$B" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  upload=$(stat -c %s "$W/b.tar.zst")
  files=$(cd "$B" && find . -type f -printf '%P %s\n' | sort | awk '{printf "%s%s %.1f MB", (NR > 1 ? ", " : ""), $1, $2 / 1e6}')
  big=$(cd "$B" && find . -type f -printf '%s %P\n' | sort -n | tail -1 | cut -d' ' -f2)
  cp "$B/$big" "$W/big"
  [ -z "${!bundle_var:-}" ] && rm -rf "$B"

  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$W/data"
  "$SERVER" serve --data-dir "$W/data" --listen "127.0.0.1:$PORT" --require-signature no \
    --blob-store "${CG_RSS_BLOB_STORE:-fs}" ${CG_RSS_SERVER_FLAGS:-} >"$W/server.log" 2>&1 &
  SRV_PID=$!
  for _ in $(seq 240); do curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.25; done
  TOKEN=$("$SERVER" admin bootstrap --data-dir "$W/data" | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
  base=$(kb VmHWM)
  (peak=0; while kill -0 "$SRV_PID" 2>/dev/null; do
     r=$(awk '$1 == "VmRSS:" {print $2}' "/proc/$SRV_PID/status" 2>/dev/null || echo 0)
     if [ "${r:-0}" -gt "$peak" ]; then peak=$r; printf '%s\t%s\n' "$r" "$(tail -1 "$W/server.log" | cut -c1-160)" >"$W/peak"; fi
     sleep 0.1
   done) &
  SAMPLER=$!
  t0=$(date +%s%N)
  code=$(curl -s -o "$W/resp" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/zstd' --data-binary @"$W/b.tar.zst" "http://127.0.0.1:$PORT/bundles")
  t1=$(date +%s%N)
  hwm_ingest=$(kb VmHWM)
  id=$(jq -r '.id // empty' "$W/resp")
  if [ -n "$id" ]; then
    H="Authorization: Bearer $TOKEN"
    curl -fsS -o "$W/got" -H "$H" "http://127.0.0.1:$PORT/bundles/$id/files/$big"
    cmp -s "$W/got" "$W/big" && same=exact || same=DIFFERENT
    hwm_file=$(kb VmHWM)
    half=$(( $(stat -c %s "$W/big") / 2 ))
    tr0=$(date +%s%N)
    curl -fsS -o /dev/null -H "$H" -H "Range: bytes=$half-$((half + 65535))" "http://127.0.0.1:$PORT/bundles/$id/files/$big"
    tr1=$(date +%s%N)
    curl -fsS -o "$W/archive" -H "$H" "http://127.0.0.1:$PORT/bundles/$id/archive"
    hwm_archive=$(kb VmHWM)
    tv0=$(date +%s%N)
    vcode=$(curl -s -o /dev/null -w '%{http_code}' -H "$H" "http://127.0.0.1:$PORT/bundles/$id/views/spans?limit=50")
    tv1=$(date +%s%N)
    for _ in $(seq 1200); do grep -q '"view index \(built\|loaded\)"' "$W/server.log" && break; sleep 0.5; done
    hwm_views=$(kb VmHWM)
    derived=""
    if [ "${CG_RSS_DERIVED:-0}" = 1 ]; then
      for route in graph evidence viewer "export?format=chrome"; do
        d0=$(date +%s%N)
        dcode=$(curl -s -o "$W/derived" -w '%{http_code}' -H "$H" "http://127.0.0.1:$PORT/bundles/$id/$route")
        d1=$(date +%s%N)
        derived+=$(printf '%s %s %.1f MB %.1f s (peak %s); ' "${route%%\?*}" "$dcode" \
          "$(awk -v x="$(stat -c %s "$W/derived")" 'BEGIN{print x/1e6}')" "$(awk -v a="$d0" -v b="$d1" 'BEGIN{print (b-a)/1e9}')" "$(mib "$(kb VmHWM)")")
        rm -f "$W/derived"
      done
    fi
    rows=""
    for t in bundle_span_paths bundle_span_totals bundle_tensor_stats; do
      r=$(psql -X -q -t -A "host=$W/data/pg-run dbname=candlegraph user=candlegraph" -F ' ' \
        -c "SELECT count(*), pg_total_relation_size('$t') / 1000000 || ' MB' FROM $t" 2>/dev/null || echo "n/a")
      rows+="${rows:+, }$t $r"
    done
    metrics=$(curl -fsS -H "$H" "http://127.0.0.1:$PORT/metrics")
    ratio=$(awk '$1 == "cg_blob_store_compression_ratio" {print $2}' <<<"$metrics")
    stored=$(awk '$1 == "cg_blob_store_stored_bytes" {print $2}' <<<"$metrics")
  fi
  hwm_reads=$(kb VmHWM)
  stop_server
  [ -n "${CG_RSS_LOG_DIR:-}" ] && cp "$W/server.log" "$CG_RSS_LOG_DIR/server-$n.log"
  kill "$SAMPLER" 2>/dev/null || true
  wait "$SAMPLER" 2>/dev/null || true
  echo
  echo "records $n: $files"
  printf '  upload %.1f MB tar.zst, decoded %.1f MB (ratio %.0fx); answer %s\n' "$(awk -v x="$upload" 'BEGIN{print x/1e6}')" \
    "$(awk -v x="$decoded" 'BEGIN{print x/1e6}')" "$(awk -v a="$decoded" -v b="$upload" 'BEGIN{print a/b}')" "$code"
  printf '  ingest wall %.2f s; server peak RSS %s after ingest (%s at start)\n' \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print (b-a)/1e9}')" "$(mib "$hwm_ingest")" "$(mib "$base")"
  [ -n "$id" ] && printf '  peak RSS after GET /files (whole file) %s, after GET /archive %s, after /metrics %s\n' \
    "$(mib "$hwm_file")" "$(mib "$hwm_archive")" "$(mib "$hwm_reads")"
  [ -n "$id" ] && printf '  first GET /views/spans: %s in %.2f s; peak RSS after the index builds %s\n' "$vcode" \
    "$(awk -v a="$tv0" -v b="$tv1" 'BEGIN{print (b-a)/1e9}')" "$(mib "$hwm_views")"
  [ -n "$derived" ] && echo "  derived: $derived"
  [ -s "$W/peak" ] && printf '  sampled RSS peak %s, last log line then: %s\n' "$(mib "$(cut -f1 "$W/peak")")" "$(cut -f2 "$W/peak")"
  [ -n "$id" ] && echo "  fact rows in PostgreSQL (table, rows, size): $rows"
  if [ -n "$id" ]; then
    printf '  blob store: %.1f MB stored, stored/plain %s; GET %s: %s bytes; 64 KiB Range in its middle: %.3f s\n' \
      "$(awk -v x="$stored" 'BEGIN{print x/1e6}')" "$ratio" "$big" "$same" "$(awk -v a="$tr0" -v b="$tr1" 'BEGIN{print (b-a)/1e9}')"
  else
    echo "  upload refused: $(jq -c .error "$W/resp" 2>/dev/null | head -c 300)"
    grep -E '"level":"(error|warn)"' "$W/server.log" | tail -3 | cut -c1-300 | sed 's/^/  server: /'
  fi
  rm -rf "$W"
done
