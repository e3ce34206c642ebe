#!/usr/bin/env bash
# bench/web_tabs: first meaningful paint of every tab of the bundle page
# (Evidence, Trace, Span costs, Memory, GPU, Timeline) in headless Chromium,
# against the real server and PostgreSQL, for traces of CG_BENCH_SIZES records
# (default "100000 1000000") made by bench_gen_trace (deep span trees, kernels
# per span, memory churn). Prints one JSON report; timing is never asserted.
# usage: CG_BINARY_DIR=build bench/web_tabs/run.sh
# env:   CG_BENCH_TRACE_<N>  an existing trace of N records to upload instead of generating one
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
GEN=$BIN/bench/trace_ingest/bench_gen_trace
[ -x "$GEN" ] || die "missing $GEN (build the bench_gen_trace target)"
[ -d "$SRC/web/node_modules/playwright-core" ] || (cd "$SRC/web" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed"
srv_setup
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
FLAGS="--require-signature no --max-body-bytes 4000000000 --max-decoded-bytes 8000000000 --request-timeout 3600"
srv_start bench $FLAGS
IDS=""
for n in ${CG_BENCH_SIZES:-100000 1000000}; do
  d=$T/b$n; mkdir -p "$d"
  given=CG_BENCH_TRACE_$n
  if [ -n "${!given:-}" ]; then ln "${!given}" "$d/trace.jsonl" 2>/dev/null || cp "${!given}" "$d/trace.jsonl"
  else "$GEN" --records "$n" --out "$d/trace.jsonl" --run-id "bench-web-tabs-$n" >/dev/null || die "bench_gen_trace $n failed"; fi
  run=$(head -1 "$d/trace.jsonl" | jq -r .run_id)
  printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$d/evidence.json"; printf '# bench\n' >"$d/report.md"
  manifest "$d" "$run"
  pack "$d" "$d.tar"; rm -f "$d/trace.jsonl"
  t0=$(date +%s.%N); upload "$d.tar" "$ADMIN"; t1=$(date +%s.%N); rm -f "$d.tar"
  [ "$CODE" = 201 ] || die "upload of $n records: $CODE $(head -c 300 "$T/body")"
  id=$(jq -r .id "$T/body")
  # the upload worker builds the timeline index, then the view index
  for i in $(seq 1 7200); do grep -q '"msg":"view index built".*'"$id" "$SRV_LOG" && break; sleep 0.5; done
  t2=$(date +%s.%N)
  note "$n records: upload $(echo "$t1 - $t0" | bc) s, indexes ready $(echo "$t2 - $t1" | bc) s after"
  IDS="$IDS $n=$id"
  printf '{"records":%s,"upload_s":%s,"indexes_ready_after_upload_s":%s}\n' "$n" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" >>"$T/ingest.jsonl"
done
export CG_WEB_TOKEN=$ADMIN CG_BENCH_IDS="$IDS" CG_CHROMIUM=${CG_CHROMIUM:-/usr/bin/chromium}
CG_WEB_URL=$URL node "$SRC/bench/web_tabs/bench.mjs" >"$T/warm.json" || die "bench failed"
RSS=$(ps -o rss= -p "$SRV_PID" | tr -d ' ')
HWM=$(awk '/^VmHWM/ {print $2}' "/proc/$SRV_PID/status")
# after a restart nothing is cached: the first open of a tab builds the view index
srv_stop; mv "$SRV_LOG" "$SRV_LOG.1"; srv_start bench $FLAGS
CG_WEB_URL=$URL CG_BENCH_MODE=cold node "$SRC/bench/web_tabs/bench.mjs" >"$T/cold.json" || die "bench (cold) failed"
CG_LOAD="$(uptime | sed "s/.*load average: //")" jq -s --argjson rss "${RSS:-0}" --argjson hwm "${HWM:-0}" '{bench: "web_tabs", load: $ENV.CG_LOAD, server_rss_kib_after_warm: $rss, server_peak_rss_kib: $hwm, ingest: .[2:], cached: .[0].sizes, after_restart: .[1].sizes}' \
  "$T/warm.json" "$T/cold.json" "$T"/ingest.jsonl
grep -hE '"view index built"' "$SRV_LOG.1" "$SRV_LOG" >&2
