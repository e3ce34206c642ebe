#!/usr/bin/env bash
# bench/history — issue 15: one series of 10,000 commits × 5 runs, then
#  - the per-upload cost of change-point detection as the history grows: the
#    POST /bundles latency of revision-tagged uploads (5 runs of a new commit;
#    each re-runs one O(window²) detection step) next to identical uploads
#    without revision tags (no history work), at 100, 1,000 and 10,000 commits;
#  - GET /history p50/p99 for the newest 1,000 points (limit=1000): the first
#    request (every point's bootstrap interval computed) and then repeated ones
#    (intervals from the server's in-process cache).
# Setup (stated, untimed): the 10,000 × 5 history is NOT uploaded through HTTP
# (that would take hours on the shared machine). One real revision-tagged
# bundle is uploaded; its bundles / bundle_facts rows are cloned in SQL with new
# ids, run ids and measured durations (median 1 ms, ±1 % deterministic
# noise), and bundle_revisions / history_points rows are inserted directly for
# commits 1 … N, the series left "clean" (already detected). Only the measured
# uploads go through POST /bundles. No timing is asserted anywhere.
# usage: bench/history/run.sh [BUILD]   env: REPS (uploads per stage, 10), GETS (100)
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
REPS=${REPS:-10}; GETS=${GETS:-100}
export CG_BINARY_DIR=$BUILD CG_SOURCE_DIR=.
. tests/support/server_lib.sh
. tests/support/history_lib.sh
srv_setup
TOKEN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "bootstrap failed"
srv_start bench --require-signature no
W=$T/work; mkdir -p "$W"
WL=bench-hist

# commit c: sha / time as history_lib (minutes after a fixed epoch)
hist_bundle "$W/tpl" run-tpl "$(hist_sha "$WL"0)" main "$(hist_time 0)" 1000000 "$WL"
hist_upload_dir "$W/tpl" "$TOKEN"; [ "$CODE" = 201 ] || die "template upload: $CODE $BODY"
TPL=$(jq -r .id "$T/body")
SID=$(psqlc "SELECT series_id FROM bundle_revisions WHERE bundle_id = '$TPL'")
COLS=$(psqlc "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) FROM information_schema.columns
              WHERE table_name = 'bundles' AND column_name NOT IN ('id', 'run_id', 'seq', 'measured_ns')")

# clone FROM TO: commits FROM … TO (5 runs each) straight into the index
clone() {
  psql -X -q "$DBURL" -v ON_ERROR_STOP=1 >/dev/null <<SQL
CREATE TEMP TABLE c AS
  SELECT g AS commit_no, r,
         md5('b' || g || '-' || r) || md5('x' || g || '-' || r) AS id,
         'bench-' || g || '-' || r AS run_id,
         left(encode(sha256(convert_to('$WL' || g, 'UTF8')), 'hex'), 40) AS sha,
         timestamptz '2025-11-24 16:00:00+00' + make_interval(mins => g) AS ct,
         1000000 + (abs(hashtext('n' || g || '-' || r)) % 20001) - 10000 AS ns
  FROM generate_series($1, $2) g, generate_series(1, 5) r;
INSERT INTO bundles (id, run_id, measured_ns, $COLS)
  SELECT c.id, c.run_id, c.ns, $COLS FROM c, (SELECT * FROM bundles WHERE id = '$TPL') t;
INSERT INTO bundle_facts (bundle_id, cohort_row, series_point, terminal_reason)
  SELECT c.id, replace(replace(f.cohort_row, 'run-tpl', c.run_id), '$TPL', c.id), f.series_point, f.terminal_reason
  FROM c, bundle_facts f WHERE f.bundle_id = '$TPL';
INSERT INTO bundle_revisions (bundle_id, series_id, commit_sha, branch, commit_time, measured_ns)
  SELECT id, $SID, sha, 'main', ct, ns FROM c;
INSERT INTO history_points (series_id, commit_sha, commit_time, pos)
  SELECT DISTINCT $SID, sha, ct, commit_no FROM c;
SQL
}
# measured NAME FROM: REPS new commits (5 runs each) through POST /bundles, with
# and without revision tags; prints the per-upload p50 / p90 in ms of both.
measured() {
  local name=$1 from=$2 k i t
  : >"$W/$name.tagged"; : >"$W/$name.plain"
  for k in $(seq 0 $((REPS - 1))); do
    local c=$((from + k))
    for i in 1 2 3 4 5; do
      local ns=$((1000000 + $(hist_noise "$c-$i") * 100))
      hist_bundle "$W/m$c-$i" "run-m$c-$i" "$(hist_sha "$WL$c")" main "$(hist_time "$c")" $ns "$WL"
      pack "$W/m$c-$i" "$W/m$c-$i.tar"
      t=$(curl -s -o /dev/null -w '%{time_total}' -H "$(auth "$TOKEN")" -H 'Content-Type: application/x-tar' --data-binary @"$W/m$c-$i.tar" "$URL/bundles")
      echo "$t" >>"$W/$name.tagged"
      # the same trace without revision tags (and another run id): no history work
      mkdir -p "$W/p$c-$i"
      jq -c 'if .kind == "meta" then .tags = {} | .run_id = ("plain-" + .run_id) else . end' "$W/m$c-$i/trace.jsonl" >"$W/p$c-$i/trace.jsonl"
      cp "$W/m$c-$i/evidence.json" "$W/p$c-$i/"
      manifest "$W/p$c-$i" "plain-run-m$c-$i"; pack "$W/p$c-$i" "$W/p$c-$i.tar"
      t=$(curl -s -o /dev/null -w '%{time_total}' -H "$(auth "$TOKEN")" -H 'Content-Type: application/x-tar' --data-binary @"$W/p$c-$i.tar" "$URL/bundles")
      echo "$t" >>"$W/$name.plain"
    done
  done
  printf '%-14s %8s %12s %12s %12s %12s\n' "$name" "$(psqlc "SELECT count(*) FROM history_points WHERE series_id = $SID")" \
    "$(pct "$W/$name.tagged" 50)" "$(pct "$W/$name.tagged" 90)" "$(pct "$W/$name.plain" 50)" "$(pct "$W/$name.plain" 90)"
}
pct() { sort -g "$1" | awk -v q="$2" '{v[NR]=$1} END {i=int((NR-1)*q/100)+1; printf "%.1f", v[i]*1000}'; }

echo "per-upload POST /bundles latency in ms (each row: $REPS new commits × 5 runs; load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-14s %8s %12s %12s %12s %12s\n' stage commits "tagged p50" "tagged p90" "plain p50" "plain p90"
clone 1 99;        measured "100 commits" 100
clone $((100 + REPS)) 999;   measured "1,000" 1000
clone $((1000 + REPS)) 9999; measured "10,000" 10000
[ "$(psqlc "SELECT count(*) FROM history_series WHERE dirty_from IS NOT NULL")" = 0 ] || note "a series is left dirty"
echo "bundles in the series: $(psqlc "SELECT count(*) FROM bundle_revisions WHERE series_id = $SID")"

# GET /history, newest 1,000 points: the first request computes every point's
# bootstrap interval (cold), later ones find them in the server's interval cache
t=$(curl -s -o /dev/null -w '%{time_total}' -H "$(auth "$TOKEN")" "$URL/history?workload_id=$WL&branch=main&limit=1000")
echo "GET /history limit=1000, first request (intervals computed): $(awk -v t="$t" 'BEGIN {printf "%.1f", t * 1000}') ms"
: >"$W/get"
for i in $(seq 1 "$GETS"); do
  curl -s -o "$W/hist.json" -w '%{time_total}\n' -H "$(auth "$TOKEN")" "$URL/history?workload_id=$WL&branch=main&limit=1000" >>"$W/get"
done
[ "$(jq '.points | length' "$W/hist.json")" = 1000 ] || note "GET /history did not answer 1000 points"
echo "GET /history limit=1000, then $GETS requests (sequential): p50 $(pct "$W/get" 50) ms, p99 $(pct "$W/get" 99) ms, $(wc -c <"$W/hist.json") bytes"
srv_stop
