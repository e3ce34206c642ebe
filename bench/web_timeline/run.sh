#!/usr/bin/env bash
# bench/web_timeline: time to first timeline paint and per-frame time while
# zooming, in headless Chromium against the real server and PostgreSQL, for a
# 10,000-record and a 1,000,000-record trace (synthetic, gen_trace.mjs).
# Targets: first paint < 1.5 s, frames < 16 ms, ratio between sizes near 1.
# usage: CG_BINARY_DIR=build bench/web_timeline/run.sh   (prints a JSON report)
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start bench --require-signature no --max-body-bytes 2000000000 --max-decoded-bytes 4000000000 --request-timeout 600
IDS=""
for n in ${CG_BENCH_SIZES:-10000 1000000}; do
  d=$T/b$n; mkdir -p "$d"
  node "$SRC/bench/web_timeline/gen_trace.mjs" "$n" "$d/trace.jsonl" "run-bench-$n"
  printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$d/evidence.json"; printf '# bench\n' >"$d/report.md"
  manifest "$d" "run-bench-$n"
  pack "$d" "$d.tar"
  t0=$(date +%s.%N); upload "$d.tar" "$ADMIN"; t1=$(date +%s.%N)
  [ "$CODE" = 201 ] || die "upload of $n records: $CODE $(head -c 300 "$T/body")"
  note "uploaded $n records in $(echo "$t1 - $t0" | bc) s"
  IDS="$IDS $n=$(jq -r .id "$T/body")"
done
export CG_WEB_TOKEN=$ADMIN CG_BENCH_IDS="$IDS" CG_CHROMIUM=${CG_CHROMIUM:-/usr/bin/chromium}
CG_WEB_URL=$URL node "$SRC/bench/web_timeline/bench.mjs" >"$T/report.json" || die "bench failed"
# Cold: a restarted server has no timeline index cached; the first open builds it.
srv_stop
mv "$SRV_LOG" "$SRV_LOG.1" # srv_start reads the port from a fresh log
srv_start bench --require-signature no --max-body-bytes 2000000000 --max-decoded-bytes 4000000000 --request-timeout 600
CG_WEB_URL=$URL CG_BENCH_MODE=restart node "$SRC/bench/web_timeline/bench.mjs" >"$T/restart.json" || die "bench (restart) failed"
jq -s '.[0] + {after_restart: .[1].sizes}' "$T/report.json" "$T/restart.json"
grep -hE '"timeline index (built|loaded)"' "$SRV_LOG.1" "$SRV_LOG" >&2
