#!/usr/bin/env bash
# Issue 7 against a real PostgreSQL and two candle-graph-server instances on the
# same database and the PostgreSQL blob store:
# - a campaign whose captures are uploaded from two simulated hosts (different
#   host tag and device) through both instances; status transitions
#   missing → published / failed_run / identity_mismatch / verification_failed
#   (and a later valid upload replacing verification_failed); campaign-status
#   and series equal to the CLI's on the same bundles; series fails closed;
# - comparison/6 byte-identical to `candle-graph compare` for eligible and
#   ineligible cohorts, GET and POST, selectors with list filters,
#   require_eligible=1 → 422 ineligible; facts backfilled for a bundle without;
# - span diff with a known slowed span; concurrent uploads of one bundle
#   through both instances give one row.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup
TT=$BIN/agent/toy_train
[ -x "$TT" ] || die "missing $TT (build the toy_train target)"
[ -x "$CLI" ] || die "missing $CLI (build the candle-graph target)"
CLI=$(cd "$(dirname "$CLI")" && pwd)/candle-graph

ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start one --require-signature no --blob-store pg; URL1=$URL; PID1=$SRV_PID
srv_start two --require-signature no --blob-store pg; URL2=$URL
trap 'rc=$?; kill -9 $PID1 2>/dev/null; (exit $rc); srv_cleanup' EXIT
on() { if [ "$1" = 1 ]; then URL=$URL1; else URL=$URL2; fi; }
H=$(auth "$ADMIN")
http POST /tokens -H "$H" -H 'Content-Type: application/json' -d '{"name":"reader","scopes":["read"]}'
RD=$(jq -r .token "$T/body")

W=$T/work; mkdir -p "$W"
# mk NAME STEP HOST DEVICE IMPL PAIR SEED [toy_train flags…]: trace with the
# host tag and device set in its meta line, published into bundle dir $W/NAME.
mk() {
  local name=$1 step=$2 host=$3 dev=$4 impl=$5 pair=$6 seed=$7; shift 7
  "$TT" --out "$W/$name.raw" --step "$step" --implementation "$impl" --pair "$pair" --seed "$seed" --production "$@" \
    >/dev/null 2>&1 || die "toy_train $name failed"
  { head -1 "$W/$name.raw" | jq -c --arg h "$host" --arg d "$dev" \
      '.device = $d | .tags = (.tags + {host: $h} | to_entries | sort_by(.key) | from_entries)'
    tail -n +2 "$W/$name.raw"; } >"$W/$name.jsonl"
  "$CLI" report "$W/$name.jsonl" --bundle "$W/$name" >/dev/null 2>&1 || die "report $name failed"
  "$CLI" pack "$W/$name" -o "$W/$name.tar.zst" >/dev/null 2>&1 || die "pack $name failed"
}
bid() { sha256sum "$W/$1/bundle.json" | cut -d' ' -f1; }
# up SERVER NAME [QUERY]: POST /bundles through instance 1 or 2.
up() {
  on "$1"
  http POST "/bundles${3:+?$3}" -H "$H" -H 'Content-Type: application/zstd' --data-binary @"$W/$2.tar.zst"
}
# same_bytes LABEL FILE_A FILE_B
same_bytes() {
  if cmp -s "$2" "$3"; then pass "$1"; else fail "$1"; diff <(head -c 3000 "$2") <(head -c 3000 "$3") | head -20 >&2; fi
}
status_of() { jq -r --arg b "$1" '.captures[] | select(.bundle == $b) | .state.state' "$T/body"; }

# ================================================================ campaign
cat >"$W/camp1.json" <<'EOF'
{"schema": "candle-graph/campaign/1", "campaign_id": "camp1", "entrypoint": "toy::train::update",
 "planned": [{"capture_step": 5, "bundle": "s5"}, {"capture_step": 1, "bundle": "s1"}, {"capture_step": 2, "bundle": "s2"},
             {"capture_step": 3, "bundle": "s3"}, {"capture_step": 4, "bundle": "s4"}]}
EOF
on 1
http PUT /campaigns/camp1 -H "$(auth "$RD")" -H 'Content-Type: application/json' --data-binary @"$W/camp1.json"
expect 403 forbidden "PUT /campaigns with a read token → forbidden"
http PUT /campaigns/camp1 -H "$H" -H 'Content-Type: application/json' --data-binary @"$W/camp1.json"
expect 201 "" "PUT /campaigns/camp1 → 201"
on 2
http PUT /campaigns/camp1 -H "$H" -H 'Content-Type: application/json' --data-binary @"$W/camp1.json"
expect 200 "" "identical PUT through the other instance → 200"
jq '.planned[0].capture_step = 6' "$W/camp1.json" >"$W/camp1b.json"
http PUT /campaigns/camp1 -H "$H" -H 'Content-Type: application/json' --data-binary @"$W/camp1b.json"
expect 409 campaign_conflict "different manifest → 409 campaign_conflict"
http PUT /campaigns/other -H "$H" -H 'Content-Type: application/json' --data-binary @"$W/camp1.json"
expect 400 invalid_parameter "campaign_id differing from the URL → invalid_parameter"
http PUT /campaigns/bad -H "$H" -H 'Content-Type: application/json' -d '{"schema":"candle-graph/campaign/1","campaign_id":"bad","entrypoint":"e","planned":[]}'
expect 400 bad_request "invalid manifest → bad_request"
[ "$(jq -r .error.message "$T/body")" = "campaign manifest requires at least one planned capture" ] && pass "validation message is upstream's" || fail "validation message: $BODY"
http PUT /campaigns/bad -H "$H" -H 'Content-Type: application/json' -d '{"schema":'
expect 400 malformed_json "broken JSON → malformed_json"
# a NUL would cut the id to the URL's "nul" (and bundle "b1\u0000x" to b1): refused, nothing stored
http PUT /campaigns/nul -H "$H" -H 'Content-Type: application/json' -d '{"schema":"candle-graph/campaign/1","campaign_id":"nul\u0000x","entrypoint":"e","planned":[{"capture_step":1,"bundle":"b1"}]}'
expect 400 bad_request "campaign_id with \\u0000 → bad_request"
[ "$(jq -r .error.message "$T/body")" = 'campaign manifest campaign_id contains NUL (\u0000), which campaign strings must not' ] \
  && pass "the NUL refusal names the member" || fail "NUL message: $BODY"
http PUT /campaigns/nul -H "$H" -H 'Content-Type: application/json' -d '{"schema":"candle-graph/campaign/1","campaign_id":"nul","entrypoint":"e","planned":[{"capture_step":1,"bundle":"b1\u0000x"}]}'
expect 400 bad_request "bundle path with \\u0000 → bad_request"
http GET /campaigns/nul/status -H "$H"; expect 404 "" "a refused manifest stored nothing"

http GET /campaigns/camp1/status -H "$H"; expect 200 "" "status of a new campaign"
[ "$(jq -c '[.planned, .published, .missing, .failed]' "$T/body")" = '[5,0,5,0]' ] && pass "all planned captures missing" || fail "new status: $BODY"
[ "$(jq -c '[.captures[] | [.capture_step, .state.state, .host, .device]]' "$T/body")" = \
  '[[1,"missing",null,null],[2,"missing",null,null],[3,"missing",null,null],[4,"missing",null,null],[5,"missing",null,null]]' ] \
  && pass "missing captures sorted by step with null host/device" || fail "missing captures: $BODY"

mk s1 1 host-a cpu impl-c pc 1
mk s2 2 host-b cpu:1 impl-c pc 2
mk s3 3 host-a cpu impl-c pc 3 --fail
mk s4 9 host-b cpu:1 impl-c pc 4            # planned step 4, trace observes 9
mk s5 5 host-b cpu:1 impl-c pc 5
cp -r "$W/s5" "$W/s5bad"; printf 'x' >>"$W/s5bad/report.md"
pack "$W/s5bad" "$W/s5bad.tar.zst" z

up 1 s1 "campaign=camp1&planned=s1"; expect 201 "" "s1 uploaded through instance 1 (host-a)"
up 2 s2 ""; expect 201 "" "s2 uploaded through instance 2 (host-b) without a campaign"
up 2 s2 "campaign=camp1&planned=s2"; expect 200 "" "identical re-upload of s2 for its planned capture → 200 (attaches it)"
[ "$(jq -r .status "$T/body")" = already_published ] && pass "re-upload answers already_published" || fail "re-upload: $BODY"
up 1 s3 "campaign=camp1&planned=s3"; expect 201 "" "s3 (failed run) uploaded"
up 2 s4 "campaign=camp1&planned=s4"; expect 201 "" "s4 (wrong step) uploaded"
up 1 s5bad "campaign=camp1&planned=s5"; expect 422 size_mismatch "s5 corrupted upload rejected"
S5MSG=$(jq -r .error.message "$T/body")
up 2 s1 "campaign=camp1&planned=nope"; expect 404 not_found "unknown planned capture → not_found"

on 2; http GET /campaigns/camp1/status -H "$H"; expect 200 "" "status after uploads (instance 2)"
[ "$(status_of s1)/$(status_of s2)/$(status_of s3)/$(status_of s4)/$(status_of s5)" = \
  "published/published/failed_run/identity_mismatch/verification_failed" ] \
  && pass "missing → published / failed_run / identity_mismatch / verification_failed" || fail "states: $BODY"
[ "$(jq -c '[.planned, .published, .missing, .failed]' "$T/body")" = '[5,2,0,3]' ] && pass "status counts" || fail "counts: $BODY"
[ "$(jq -r '.captures[] | select(.bundle=="s5") | .state.message' "$T/body")" = "$S5MSG" ] \
  && pass "verification_failed carries the rejection message" || fail "s5 message: $BODY"
[ "$(jq -c '[.captures[] | [.host, .device]]' "$T/body")" = '[["host-a","cpu"],["host-b","cpu:1"],["host-a","cpu"],["host-b","cpu:1"],[null,null]]' ] \
  && pass "captures carry host/device of both simulated hosts" || fail "host/device: $BODY"
[ "$(jq -r '.captures[] | select(.bundle=="s4") | .state.message' "$T/body")" = "capture_step mismatch: manifest plans 4, bundle trace observes 9" ] \
  && pass "identity_mismatch message" || fail "s4 message"
[ "$(jq -r '.captures[] | select(.bundle=="s3") | .state.reason' "$T/body")" = "toy_train: failure injected with --fail during backward" ] \
  && pass "failed_run reason" || fail "s3 reason"

http GET /campaigns/camp1/series -H "$H"; expect 409 campaign_conflict "series of an unpublished campaign fails closed"
[ "$(jq -c '[.error.detail.not_published[] | [.capture_step, .bundle, .state]]' "$T/body")" = \
  '[[3,"s3","failed_run"],[4,"s4","identity_mismatch"],[5,"s5","verification_failed"]]' ] \
  && pass "409 lists the unpublished captures" || fail "not_published: $BODY"
jq -r .error.message "$T/body" | grep -q '^series requires every planned capture to be published; not published: step 3 (s3): failed_run' \
  && pass "409 message is the CLI's" || fail "series message: $BODY"

up 1 s5 "campaign=camp1&planned=s5"; expect 201 "" "valid s5 upload after the rejected one"
on 1; http GET /campaigns/camp1/status -H "$H"; cp "$T/body" "$W/status1.json"
[ "$(jq -r '.captures[] | select(.bundle=="s5") | .state.state' "$W/status1.json")" = published ] \
  && pass "a later valid upload replaces verification_failed" || fail "s5 after valid upload: $(cat "$W/status1.json")"
up 2 s5bad "campaign=camp1&planned=s5"; expect 422 size_mismatch "another corrupted s5 upload"
on 1; http GET /campaigns/camp1/status -H "$H"; cp "$T/body" "$W/status1.json"
[ "$(jq -r '.captures[] | select(.bundle=="s5") | .state.state' "$W/status1.json")" = published ] \
  && pass "a later rejected upload does not hide the stored bundle" || fail "s5 after 2nd bad upload"
# campaign-status equals the CLI's on the same bundles (host/device are the server's extra fields)
mkdir -p "$W/c1"; cp "$W/camp1.json" "$W/c1/manifest.json"; for s in s1 s2 s3 s4 s5; do cp -r "$W/$s" "$W/c1/$s"; done
"$CLI" campaign-status --manifest "$W/c1/manifest.json" >"$W/cli_status1.json" || fail "CLI campaign-status"
jq 'del(.captures[].host, .captures[].device)' "$W/status1.json" >"$W/srv_status1.json"
jq . "$W/cli_status1.json" >"$W/cli_status1n.json"
same_bytes "campaign-status equals the CLI's (published/failed_run/identity_mismatch)" "$W/cli_status1n.json" "$W/srv_status1.json"

http GET /campaigns -H "$H"; expect 200 "" "GET /campaigns"
[ "$(jq -c '.items[] | select(.campaign_id=="camp1") | .counts' "$T/body")" = '{"planned":5,"published":3,"missing":0,"failed":2}' ] \
  && pass "campaign list counts" || fail "list: $BODY"
http GET /campaigns/camp1 -H "$H"; expect 200 "" "GET /campaigns/{id}"
[ "$(jq -c .manifest "$T/body")" = "$(jq -c '{schema, campaign_id, entrypoint, planned}' "$W/camp1.json")" ] && pass "stored manifest" || fail "manifest: $BODY"
http GET /campaigns/nope/status -H "$H"; expect 404 not_found "unknown campaign → not_found"

# a fully published campaign: series equals the CLI's (manifest names as bundle)
cat >"$W/camp2.json" <<'EOF'
{"schema": "candle-graph/campaign/1", "campaign_id": "camp2", "entrypoint": "toy::train::update",
 "planned": [{"capture_step": 30, "bundle": "q30"}, {"capture_step": 10, "bundle": "q10"}, {"capture_step": 20, "bundle": "q20"}]}
EOF
on 2; http PUT /campaigns/camp2 -H "$H" -H 'Content-Type: application/json' --data-binary @"$W/camp2.json"; expect 201 "" "PUT camp2"
mk q10 10 host-a cpu impl-q pq 1; mk q20 20 host-b cpu:1 impl-q pq 2; mk q30 30 host-a cpu impl-q pq 3
up 1 q30 "campaign=camp2&planned=q30"; expect 201 "" "q30"
up 2 q10 "campaign=camp2&planned=q10"; expect 201 "" "q10"
up 1 q20 "campaign=camp2&planned=q20"; expect 201 "" "q20"
for lp in "" "toy/fc1"; do
  on 2; http GET "/campaigns/camp2/series${lp:+?label_prefix=$lp}" -H "$H"; cp "$T/body" "$W/srv_series.json"
  expect 200 "" "campaign series (label_prefix '$lp')"
  (cd "$W" && "$CLI" series --bundle q10 --bundle q20 --bundle q30 ${lp:+--label-prefix "$lp"}) >"$W/cli_series.json" || fail "CLI series"
  same_bytes "campaign series equals the CLI's (label_prefix '$lp')" "$W/cli_series.json" "$W/srv_series.json"
done
mkdir -p "$W/ids"; for q in q10 q20 q30; do cp -r "$W/$q" "$W/ids/$(bid $q)"; done
on 1; http GET "/series?bundles=$(bid q20),$(bid q10),$(bid q30)" -H "$H"; cp "$T/body" "$W/srv_series2.json"; expect 200 "" "GET /series"
(cd "$W/ids" && "$CLI" series --bundle "$(bid q20)" --bundle "$(bid q10)" --bundle "$(bid q30)") >"$W/cli_series2.json"
same_bytes "GET /series equals the CLI's" "$W/cli_series2.json" "$W/srv_series2.json"
http GET "/series?bundles=$(bid q10),$(bid s1)" -H "$H"; expect 200 "" "series over two campaigns' bundles"
http GET "/series?bundles=$(bid q10),$(bid q10)" -H "$H"; expect 400 invalid_parameter "duplicate coordinate → invalid_parameter"
jq -r .error.message "$T/body" | grep -q '^ambiguous series coordinate: capture_step 10 is provided by both' && pass "ambiguous coordinate message" || fail "series msg: $BODY"
http GET /campaigns/camp2/status -H "$H"; cp "$T/body" "$W/status2.json"
mkdir -p "$W/c2"; cp "$W/camp2.json" "$W/c2/manifest.json"; for q in q10 q20 q30; do cp -r "$W/$q" "$W/c2/$q"; done
"$CLI" campaign-status --manifest "$W/c2/manifest.json" | jq . >"$W/cli_status2.json"
jq 'del(.captures[].host, .captures[].device)' "$W/status2.json" >"$W/srv_status2.json"
same_bytes "campaign-status equals the CLI's (all published)" "$W/cli_status2.json" "$W/srv_status2.json"

# ================================================================ comparison
A=(); B=()
for i in 1 2 3 4 5; do
  mk a$i 7 host-a cpu impl-a p$i 1; mk b$i 7 host-b cpu impl-b p$i 1 --slow
done
for i in 1 2 3 4 5; do up 1 a$i; expect 201 "" "a$i through instance 1" >/dev/null; A+=("$(bid a$i)"); done
for i in 1 2 3 4 5; do up 2 b$i; expect 201 "" "b$i through instance 2" >/dev/null; B+=("$(bid b$i)"); done
csv() { local IFS=,; echo "$*"; }
cli_compare() { # OUT then --baseline… --candidate… dirs
  local out=$1; shift
  "$CLI" compare "$@" >"$out" 2>/dev/null
}
cli_compare "$W/cli_cmp.json" $(for i in 1 2 3 4 5; do echo --baseline "$W/a$i"; done) $(for i in 1 2 3 4 5; do echo --candidate "$W/b$i"; done)
on 2; http GET "/compare?a=$(csv "${A[@]}")&b=$(csv "${B[@]}")" -H "$H"; cp "$T/body" "$W/srv_cmp.json"
expect 200 "" "GET /compare 5 vs 5 (instance 2 compares bundles uploaded through 1 and 2)"
same_bytes "comparison equals the CLI's (5 vs 5, verdict $(jq -r .verdict "$W/cli_cmp.json"))" "$W/cli_cmp.json" "$W/srv_cmp.json"
[ "$(jq -r .verdict "$W/srv_cmp.json")" != ineligible ] && pass "5 vs 5 is eligible" || fail "5 vs 5 ineligible: $(jq -c .reasons "$W/srv_cmp.json")"
on 1; http POST /compare -H "$H" -H 'Content-Type: application/json' \
  -d "$(jq -n --arg a "$(csv "${A[@]}")" --arg b "$(csv "${B[@]}")" '{a: ($a | split(",")), b: ($b | split(","))}')"
cp "$T/body" "$W/srv_cmp_post.json"
expect 200 "" "POST /compare"
same_bytes "POST /compare equals the CLI's" "$W/cli_cmp.json" "$W/srv_cmp_post.json"
# ineligible: 2 vs 2 (too few runs), with id prefixes
cli_compare "$W/cli_cmp2.json" --baseline "$W/a1" --baseline "$W/a2" --candidate "$W/b1" --candidate "$W/b2"
P1=${A[0]:0:12}; P2=${A[1]:0:16}
http GET "/compare?a=$P1,$P2&b=${B[0]},${B[1]}" -H "$H"; cp "$T/body" "$W/srv_cmp2.json"; expect 200 "" "GET /compare 2 vs 2 (id prefixes)"
[ "$(jq -r .verdict "$W/srv_cmp2.json")" = ineligible ] && pass "2 vs 2 is ineligible" || fail "2 vs 2 verdict"
same_bytes "ineligible comparison equals the CLI's" "$W/cli_cmp2.json" "$W/srv_cmp2.json"
http GET "/compare?a=$P1,$P2&b=${B[0]},${B[1]}&require_eligible=1" -H "$H"; expect 422 ineligible "require_eligible=1 → 422 ineligible"
"$CLI" compare --baseline "$W/a1" --baseline "$W/a2" --candidate "$W/b1" --candidate "$W/b2" --require-eligible >/dev/null 2>"$W/cli_err.txt"
grep -qF "$(jq -r .error.message "$T/body")" "$W/cli_err.txt" && pass "422 message is the CLI's" || fail "422 message $(jq -r .error.message "$T/body") vs $(cat "$W/cli_err.txt")"
jq -S .error.detail "$T/body" >"$W/d1"; jq -S . "$W/cli_cmp2.json" >"$W/d2"
cmp -s "$W/d1" "$W/d2" && pass "422 detail is the comparison" || fail "422 detail"
http GET "/compare?a=$(csv "${A[@]}")&b=$(csv "${B[@]}")&require_eligible=1" -H "$H"; expect 200 "" "require_eligible=1 on an eligible comparison → 200"
# selectors (cohort order = upload order) with list filters
on 2; http GET "/compare?a=implementation:impl-a&b=implementation:impl-b" -H "$H"; cp "$T/body" "$W/srv_sel.json"; expect 200 "" "implementation selectors"
same_bytes "implementation selectors equal the CLI on the same bundles" "$W/cli_cmp.json" "$W/srv_sel.json"
http GET "/compare?a=implementation:impl-a&b=implementation:impl-b&tag=host:host-a&phase=train" -H "$H"; expect 404 not_found "filters apply to both cohorts (b has no host-a bundle)"
http GET "/compare?a=implementation:impl-a&b=implementation:impl-a&tag=host:host-a&phase=train" -H "$H"; cp "$T/body" "$W/srv_sel2.json"; expect 200 "" "selector with matching filters"
cli_compare "$W/cli_cmp3.json" $(for q in q10 q20 q30; do echo --baseline "$W/$q"; done) $(for i in 1 2 3 4 5; do echo --candidate "$W/b$i"; done)
http GET "/compare?a=campaign:camp2&b=$(csv "${B[@]}")" -H "$H"; cp "$T/body" "$W/srv_sel3.json"; expect 200 "" "campaign selector"
same_bytes "campaign selector = its published captures in step order" "$W/cli_cmp3.json" "$W/srv_sel3.json"
http GET "/compare?a=campaign:camp2&b=implementation:impl-b&implementation_id=impl-q" -H "$H"; expect 404 not_found "implementation_id filter applies to both selector cohorts"
http GET "/compare?a=campaign:camp2&b=$(csv "${B[@]}")&implementation_id=impl-q&tag=host:host-a" -H "$H"; cp "$T/body" "$W/srv_sel5.json"; expect 200 "" "campaign selector with filters (explicit ids unfiltered)"
cli_compare "$W/cli_cmp5.json" --baseline "$W/q10" --baseline "$W/q30" $(for i in 1 2 3 4 5; do echo --candidate "$W/b$i"; done)
same_bytes "filters narrow the campaign cohort to host-a captures" "$W/cli_cmp5.json" "$W/srv_sel5.json"
cli_compare "$W/cli_cmp4.json" --baseline "$W/s1" --baseline "$W/s2" --baseline "$W/s5" --candidate "$W/b1"
http GET "/compare?a=campaign:camp1&b=${B[0]}" -H "$H"; cp "$T/body" "$W/srv_sel4.json"; expect 200 "" "campaign selector skips unpublished captures"
same_bytes "campaign:camp1 = s1, s2, s5" "$W/cli_cmp4.json" "$W/srv_sel4.json"
http GET "/compare?a=campaign:nope&b=${B[0]}" -H "$H"; expect 404 not_found "unknown campaign selector → not_found"
http GET "/compare?a=color:red&b=${B[0]}" -H "$H"; expect 400 invalid_parameter "unknown selector → invalid_parameter"
http GET "/compare?a=0000000000000000&b=${B[0]}" -H "$H"; expect 404 not_found "unknown id → not_found"
http GET "/compare?a=xyz&b=${B[0]}" -H "$H"; expect 400 invalid_parameter "malformed id → invalid_parameter"
http GET "/compare?a=${A[0]}" -H "$H"; expect 400 invalid_parameter "missing cohort b → invalid_parameter"
http GET "/compare?a=${A[0]}&b=${B[0]}" -H "$(auth "$RD")"; expect 200 "" "read scope suffices for /compare"
http POST /compare -H "$H" -H 'Content-Type: application/json' -d '{"a": 1, "b": []}'; expect 400 bad_request "POST /compare with a bad body"

# facts of a bundle without them (stored before migration 0002) are rebuilt once
# from its trace; cohorts never compared before, so no cached answer can serve them
psqlc "DELETE FROM bundle_facts WHERE bundle_id = '${A[2]}'" >/dev/null
psqlc "DELETE FROM bundle_span_totals WHERE bundle_seq = $(seq_of "${A[2]}")" >/dev/null
cli_compare "$W/cli_cmp_bf.json" --baseline "$W/a3" --baseline "$W/a1" --candidate "$W/b2"
on 1; http GET "/compare?a=${A[2]},${A[0]}&b=${B[1]}" -H "$H"; cp "$T/body" "$W/srv_cmp_bf.json"; expect 200 "" "compare with a backfilled bundle"
same_bytes "backfilled facts give the CLI's comparison" "$W/cli_cmp_bf.json" "$W/srv_cmp_bf.json"
[ "$(psqlc "SELECT count(*) FROM bundle_facts WHERE bundle_id = '${A[2]}'")" = 1 ] && pass "facts row restored" || fail "facts not restored"
[ "$(psqlc "SELECT count(*) FROM bundle_span_totals WHERE bundle_seq = $(seq_of "${A[2]}")")" = "$(psqlc "SELECT count(*) FROM bundle_span_totals WHERE bundle_seq = $(seq_of "${A[1]}")")" ] \
  && pass "span totals restored" || fail "span totals not restored"
psqlc "DELETE FROM bundle_facts WHERE bundle_id = '${A[3]}'" >/dev/null
psqlc "DELETE FROM bundle_span_totals WHERE bundle_seq = $(seq_of "${A[3]}")" >/dev/null
on 2; http GET "/compare/spans?a=${A[3]}&b=${B[3]}" -H "$H"; expect 200 "" "span diff backfills too"
[ "$(jq '.rows | length' "$T/body")" -gt 0 ] && [ "$(psqlc "SELECT count(*) FROM bundle_facts WHERE bundle_id = '${A[3]}'")" = 1 ] \
  && pass "span diff rows from backfilled totals" || fail "span diff after backfill: $(head -c 300 "$T/body")"
# the answer cache serves repeated comparisons byte for byte, on both instances
for i in 1 2; do on $i; http GET "/compare?a=$(csv "${A[@]}")&b=$(csv "${B[@]}")" -H "$H"; cp "$T/body" "$W/srv_cmp_again$i.json"
  same_bytes "repeated comparison through instance $i" "$W/cli_cmp.json" "$W/srv_cmp_again$i.json"; done
on 1; http GET "/compare?a=$P1,$P2&b=${B[0]},${B[1]}&require_eligible=1" -H "$H"; expect 422 ineligible "require_eligible=1 on a cached ineligible answer → 422"

# ================================================================ span diff
on 2; http GET "/compare/spans?a=$(csv "${A[@]}")&b=$(csv "${B[@]}")" -H "$H"; cp "$T/body" "$W/spans.json"; expect 200 "" "GET /compare/spans"
jq -e '.schema == "candle-graph/span-diff/1" and .a.runs == 5 and .b.runs == 5 and .only_a == [] and .only_b == []' "$W/spans.json" >/dev/null \
  && pass "span diff header" || fail "span diff: $(head -c 600 "$W/spans.json")"
FWD='toy::train::update/toy/update-000000000007/toy/update-000000000007/forward'
jq -e --arg p "$FWD" '[.rows[] | select(.kind == "span" and .path == $p)][0] | .delta_ns > 0 and .b_median_ns > .a_median_ns and .a_count == 5 and .b_count == 5' "$W/spans.json" >/dev/null \
  && pass "the slowed forward span has a positive delta" || fail "forward span row: $(jq -c --arg p "$FWD" '.rows[] | select(.path == $p)' "$W/spans.json")"
jq -e --arg p "$FWD/linear" '[.rows[] | select(.kind == "op" and .path == $p)][0] | .delta_ns > 0 and (.delta_percent > 0)' "$W/spans.json" >/dev/null \
  && pass "the slowed linear op (path = span path + / + op) has a positive delta" || fail "linear op row missing"
jq -e '[.rows[] | .delta_ns | fabs] as $d | $d == ($d | sort | reverse)' "$W/spans.json" >/dev/null && pass "rows sorted by |delta_ns| desc" || fail "row order"
jq -e '[.rows[] | select(.kind == "op" and (.path | endswith("/linear")))][0].delta_ns >= ([.rows[] | select(.kind == "op" and (.path | endswith("/sgd_momentum")))][0].delta_ns | fabs)' "$W/spans.json" >/dev/null \
  && pass "the slowed op outweighs an unchanged one" || fail "linear vs sgd_momentum"
# a span present on one side only: one candidate trace gets an extra child span,
# and one whose name carries a backslash, a tab and a newline (the path tree goes
# in through COPY's text format, which escapes exactly these)
{ head -n -2 "$W/b1.jsonl"
  echo '{"kind":"span_start","id":"s9999","parent_id":"s1","name":"extra/checkpoint","start_ns":1,"span_kind":"function","measured":false}'
  echo '{"kind":"span_end","id":"s9999","duration_ns":1}'
  echo '{"kind":"span_start","id":"s9998","parent_id":"s1","name":"odd\\N\tname\nx\\","start_ns":1,"span_kind":"function","measured":false}'
  echo '{"kind":"span_end","id":"s9998","duration_ns":1}'
  tail -n 2 "$W/b1.jsonl"; } >"$W/bx.jsonl"
sed -i 's/"run_id":"[^"]*"/"run_id":"run-extra-span-1"/' "$W/bx.jsonl"
if "$CLI" report "$W/bx.jsonl" --bundle "$W/bx" >/dev/null 2>"$W/bx.err"; then
  "$CLI" pack "$W/bx" -o "$W/bx.tar.zst" >/dev/null 2>&1
  up 1 bx; expect 201 "" "bundle with an extra span"
  on 2; http GET "/compare/spans?a=${A[0]}&b=$(bid bx)" -H "$H"; cp "$T/body" "$W/spans2.json"; expect 200 "" "span diff with a one-sided span"
  jq -e '(.only_b | sort) == (["toy::train::update/extra/checkpoint", "toy::train::update/odd\\N\tname\nx\\"] | sort) and .only_a == []' "$W/spans2.json" >/dev/null && pass "only_b lists the one-sided spans, names byte for byte" \
    || fail "only_b: $(jq -c '[.only_a, .only_b]' "$W/spans2.json")"
else
  fail "report of the extra-span trace: $(cat "$W/bx.err")"
fi

# ================================================================ two instances, one bundle
mk dup 7 host-a cpu impl-d pd 1
on 1; curl -s -o "$W/dup1.json" -w '%{http_code}' -X POST -H "$H" -H 'Content-Type: application/zstd' --data-binary @"$W/dup.tar.zst" "$URL1/bundles" >"$W/dup1.code" &
c1=$!
curl -s -o "$W/dup2.json" -w '%{http_code}' -X POST -H "$H" -H 'Content-Type: application/zstd' --data-binary @"$W/dup.tar.zst" "$URL2/bundles" >"$W/dup2.code" &
c2=$!
wait $c1 $c2
[ "$(sort "$W/dup1.code" "$W/dup2.code" | tr '\n' ' ')" = "200 201 " ] && pass "concurrent uploads through both instances: 201 + 200" \
  || fail "concurrent codes: $(cat "$W/dup1.code") $(cat "$W/dup2.code")"
D=$(bid dup)
[ "$(psqlc "SELECT count(*) FROM bundles WHERE id = '$D'")/$(psqlc "SELECT count(*) FROM bundle_facts WHERE bundle_id = '$D'")" = 1/1 ] \
  && pass "one bundle row and one facts row" || fail "rows after concurrent uploads"
on 2; http GET "/bundles/$D/files/trace.jsonl" -H "$H"; cp "$T/body" "$W/dup_trace.jsonl"; expect 200 "" "readable through the other instance"
cmp -s "$W/dup_trace.jsonl" "$W/dup/trace.jsonl" && pass "same trace bytes through both instances" || fail "trace bytes differ"

# graceful stop of both instances; a sanitizer build reports errors/leaks in their logs
kill -TERM "$PID1" 2>/dev/null; wait "$PID1" 2>/dev/null; srv_stop
if grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/one.log" "$T/two.log" >&2; then
  fail "sanitizer reports in the server logs"; grep -h -A12 -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/one.log" "$T/two.log" | head -60 >&2
else
  pass "both instances stopped cleanly (no sanitizer report)"
fi

exit $((FAILS > 0))
