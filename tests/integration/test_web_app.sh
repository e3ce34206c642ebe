#!/usr/bin/env bash
# Web app (issue 8) in headless Chromium against the real candle-graph-server and
# a real PostgreSQL (tests/support/server_lib.sh), with bundles uploaded through
# POST /bundles: toy_train traces (5 runs of impl-a, 5 of impl-b, production-
# equivalent, one seed so the identity conditions match; 2 non-production
# runs for an ineligible compare) and a synthetic
# trace with device intervals for the timeline. The browser checks live in
# tests/browser/app.test.mjs; screenshots go to $CG_SCREENSHOT_DIR
# (docs/screenshots when run with CG_SCREENSHOT_DIR=docs/screenshots).
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
TOY=$BIN/agent/toy_train
[ -x "$TOY" ] || die "missing $TOY (build the toy_train target)"
browser_deps
srv_setup_admin
srv_start web --require-signature no --max-body-bytes 400000000 --max-decoded-bytes 800000000

# toy_bundle DIR RUN_ARGS…: a bundle/1 directory around one toy_train capture
toy_bundle() {
  local d=$1; shift
  mkdir -p "$d"
  "$TOY" --out "$d/trace.jsonl" "$@" >/dev/null 2>&1 || die "toy_train $* failed"
  printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$d/evidence.json"
  printf '# report\n' >"$d/report.md"
  manifest "$d" "$(head -1 "$d/trace.jsonl" | jq -r .run_id)"
}
up() { # up DIR → prints the bundle id
  pack "$1" "$1.tar"
  upload "$1.tar" "$ADMIN"
  [ "$CODE" = 201 ] || [ "$CODE" = 200 ] || die "upload $1: $CODE $BODY"
  jq -r .id "$T/body"
}
A_IDS=""; B_IDS=""; X_IDS=""
for i in 1 2 3 4 5; do
  toy_bundle "$T/a$i" --step 3 --implementation impl-a --seed 1 --production
  A_IDS="$A_IDS${A_IDS:+,}$(up "$T/a$i")"
  toy_bundle "$T/b$i" --step 3 --implementation impl-b --seed 1 --production --slow
  B_IDS="$B_IDS${B_IDS:+,}$(up "$T/b$i")"
done
for i in 1 2; do
  toy_bundle "$T/x$i" --step 3 --implementation impl-x --seed $((10 + i))
  X_IDS="$X_IDS${X_IDS:+,}$(up "$T/x$i")"
done
mkdir -p "$T/tl"
node "$SRC/bench/web_timeline/gen_trace.mjs" 20000 "$T/tl/trace.jsonl" run-web-timeline
printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$T/tl/evidence.json"; printf '# report\n' >"$T/tl/report.md"
manifest "$T/tl" run-web-timeline
TL_ID=$(up "$T/tl")
pass "uploaded 13 bundles"

# Campaign with every state the grid shows (published, missing, failed_run…).
CAMPAIGN=""
http PUT /campaigns/web-camp -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' \
  -d '{"schema":"candle-graph/campaign/1","campaign_id":"web-camp","entrypoint":"toy::train::update","planned":[{"capture_step":1,"bundle":"s1"},{"capture_step":2,"bundle":"s2"},{"capture_step":3,"bundle":"s3"},{"capture_step":4,"bundle":"s4"},{"capture_step":5,"bundle":"s5"},{"capture_step":6,"bundle":"s6"}]}'
if [ "$CODE" = 201 ] || [ "$CODE" = 200 ]; then
  CAMPAIGN=web-camp
  toy_bundle "$T/c1" --step 1 --implementation impl-c --seed 1 --production; pack "$T/c1" "$T/c1.tar"; upload "$T/c1.tar" "$ADMIN" "" "--url-query" "campaign=web-camp" --url-query "planned=s1"
  toy_bundle "$T/c2" --step 2 --implementation impl-c --seed 1 --production; pack "$T/c2" "$T/c2.tar"; upload "$T/c2.tar" "$ADMIN" "" --url-query "campaign=web-camp" --url-query "planned=s2"
  toy_bundle "$T/c3" --step 3 --implementation impl-c --seed 1 --fail; pack "$T/c3" "$T/c3.tar"; upload "$T/c3.tar" "$ADMIN" "" --url-query "campaign=web-camp" --url-query "planned=s3"
  toy_bundle "$T/c4" --step 9 --implementation impl-c --seed 1; pack "$T/c4" "$T/c4.tar"; upload "$T/c4.tar" "$ADMIN" "" --url-query "campaign=web-camp" --url-query "planned=s4"
  # s5 stays missing; s6 gets a bundle whose trace no longer matches its manifest (422, recorded as verification_failed)
  toy_bundle "$T/c6" --step 6 --implementation impl-c --seed 1; printf '\n' >>"$T/c6/trace.jsonl"; pack "$T/c6" "$T/c6.tar"
  upload "$T/c6.tar" "$ADMIN" "" --url-query "campaign=web-camp" --url-query "planned=s6"
  [ "$CODE" = 422 ] || die "tampered upload answered $CODE"
  # a second campaign with every capture published, for the series charts
  http PUT /campaigns/web-series -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' \
    -d '{"schema":"candle-graph/campaign/1","campaign_id":"web-series","entrypoint":"toy::train::update","planned":[{"capture_step":1,"bundle":"p1"},{"capture_step":2,"bundle":"p2"},{"capture_step":3,"bundle":"p3"}]}'
  [ "$CODE" = 201 ] || die "PUT /campaigns/web-series: $CODE $BODY"
  for k in 1 2 3; do
    toy_bundle "$T/p$k" --step $k --implementation impl-c --seed 1 --production; pack "$T/p$k" "$T/p$k.tar"
    upload "$T/p$k.tar" "$ADMIN" "" --url-query "campaign=web-series" --url-query "planned=p$k"
    [ "$CODE" = 201 ] || die "upload p$k: $CODE $BODY"
  done
else
  die "PUT /campaigns/web-camp: $CODE $BODY"
fi

export CG_WEB_URL="$URL" CG_WEB_TOKEN="$ADMIN" CG_WEB_A="$A_IDS" CG_WEB_B="$B_IDS" CG_WEB_X="$X_IDS" CG_WEB_TL="$TL_ID" CG_WEB_CAMPAIGN="$CAMPAIGN"
export CG_SCREENSHOT_DIR="${CG_SCREENSHOT_DIR:-$BIN/screenshots}" CG_CHROMIUM="$CHROMIUM"
(cd "$SRC" && node --test --test-reporter=spec tests/browser/app.test.mjs) || fail "browser tests"

# ---------------------------------------------------------------- GET /bundles/{id}/timeline (LOD contract)
tl() { http GET "/bundles/$TL_ID/timeline$1" -H "$(auth "$ADMIN")"; }
tl "?px=300"; expect 200 "" "timeline, host clock, full range"
jq -e '.schema == "candle-graph/timeline/1" and .clock == "host" and ([.clocks[].clock] == ["host", "cuda-event-0"])' "$T/body" >/dev/null \
  && pass "timeline names both clocks" || fail "timeline clocks: $(jq -c .clocks "$T/body")"
jq -e '[.tracks[] | (.boxes | length) <= 301] | all' "$T/body" >/dev/null && pass "at most px+1 boxes per track" || fail "too many boxes"
jq -e '[.tracks[] | .window_records == .records and ([.boxes[][2]] | add) == .records] | all' "$T/body" >/dev/null \
  && pass "box counts add up to the records of each track" || fail "box counts: $(jq -c '[.tracks[] | {records, window_records}]' "$T/body")"
jq -e '[.tracks[].label] == ["host spans, depth 0", "host spans, depth 1", "host spans, depth 2", "host ops"]' "$T/body" >/dev/null \
  && pass "host tracks: spans by depth, then ops" || fail "host tracks: $(jq -c '[.tracks[].label]' "$T/body")"
cp "$T/body" "$T/tl_full.json"
# The whole-track answer (read from the coarse level) equals merging a fine answer
# (px=10000, read from the intervals) again at the coarser pixel size.
tl "?px=10000"; expect 200 "" "timeline at px=10000"
if node -e '
  const fs = require("fs");
  const fine = JSON.parse(fs.readFileSync(process.argv[1])), coarse = JSON.parse(fs.readFileSync(process.argv[2]));
  const w = Math.max(1, Math.floor((coarse.end_ns - coarse.start_ns) / coarse.px));
  const remerge = (boxes) => { const out = []; for (const [s, e, c, n] of boxes) { const b = out[out.length - 1];
    if (b && s <= b[1] + w) { b[1] = Math.max(b[1], e); b[2] += c; if (b[3] !== n) b[3] = null; } else out.push([s, e, c, n]); } return out; };
  const ok = fine.tracks.every((t, i) => JSON.stringify(remerge(t.boxes)) === JSON.stringify(coarse.tracks[i].boxes));
  process.exit(ok && fine.start_ns === coarse.start_ns && fine.end_ns === coarse.end_ns ? 0 : 1);' "$T/body" "$T/tl_full.json"; then
  pass "coarse level answers like the intervals"
else
  fail "coarse level differs from merging the intervals"
fi
tl "?clock=cuda-event-0&px=200"; expect 200 "" "timeline, device clock"
jq -e '[.tracks[].device] == ["cuda:0", "cuda:1"] and .start_ns == 5000 and ([.tracks[].records] | add) == ([.clocks[] | select(.clock == "cuda-event-0") | .records] | add)' "$T/body" >/dev/null \
  && pass "device clock: one track per device on its own axis" || fail "device tracks: $(head -c 400 "$T/body")"
tl "?start_ns=100000&end_ns=110000&px=1000"; expect 200 "" "timeline, zoomed window"
jq -e '[.tracks[] | select(.label == "host spans, depth 2") | .boxes[] | select(.[2] == 1 and .[3] != null)] | length >= 9' "$T/body" >/dev/null \
  && pass "zoomed window shows single named boxes" || fail "zoomed boxes: $(jq -c '.tracks[2].boxes[:3]' "$T/body")"
tl "?px=0"; expect 400 invalid_parameter "px=0 → invalid_parameter"
tl "?start_ns=10&end_ns=5"; expect 400 invalid_parameter "end before start → invalid_parameter"
tl "?start_ns=-1"; expect 400 invalid_parameter "negative start → invalid_parameter"
tl "?clock=nope"; expect 400 invalid_parameter "unknown clock → invalid_parameter"
http GET /bundles/000000000000/timeline -H "$(auth "$ADMIN")"; expect 404 not_found "unknown bundle → not_found"
http GET "/bundles/$TL_ID/timeline"; expect 401 unauthorized "timeline needs a read token"

# The index survives a restart (read back from the data dir, not rebuilt) and a
# damaged copy is rebuilt from the trace with the same answer.
restart() { srv_stop; mv "$SRV_LOG" "$SRV_LOG.$1"; srv_start web --require-signature no; }
restart 1
tl "?px=300"; expect 200 "" "timeline after restart"
cmp -s "$T/body" "$T/tl_full.json" && pass "same answer after restart" || fail "answer changed after restart"
grep -q '"msg":"timeline index loaded".*'"$TL_ID" "$SRV_LOG" && pass "index read back from disk" || fail "index was not read back"
IDX=$SRV_DATA/timeline/$TL_ID.idx
[ -f "$IDX" ] || fail "no $IDX"
head -c 1000 "$IDX" >"$IDX.cut" && mv "$IDX.cut" "$IDX"
restart 2
tl "?px=300"; expect 200 "" "timeline with a damaged index file"
cmp -s "$T/body" "$T/tl_full.json" && pass "damaged index rebuilt to the same answer" || fail "answer changed after rebuild"
grep -q '"msg":"timeline index built".*'"$TL_ID" "$SRV_LOG" && pass "damaged index rebuilt from the trace" || fail "damaged index not rebuilt"

# Public read: the same app with no token at all.
srv_stop; mv "$SRV_LOG" "$SRV_LOG.3"; srv_start web --require-signature no --public-read
http GET /bundles; expect 200 "" "--public-read: GET /bundles without a token"
(cd "$SRC" && CG_WEB_URL=$URL CG_WEB_PUBLIC=1 node --test --test-reporter=spec --test-name-pattern='public read' tests/browser/app.test.mjs) \
  || fail "browser test (public read)"

srv_stop # graceful: the server stops its timeline worker and frees its cache (sanitizer builds check leaks here)
[ $FAILS -eq 0 ] || exit 1
