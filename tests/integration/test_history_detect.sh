#!/usr/bin/env bash
# Issue 15 against a real PostgreSQL and candle-graph-server: revision-tagged
# uploads build per-commit histories; planted shifts (known commits and sizes,
# per-run noise like a shared runner, one commit uploaded late) give exactly
# the planted confirmed alerts; a change point whose commit has too few runs
# stays unconfirmed with insufficient_runs; the incrementally maintained change
# points equal detection over the whole series; ambiguous series, commit/branch
# list filters and selectors, span metrics, alert triage, replication advice.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
. "${CG_SOURCE_DIR:-.}/tests/support/history_lib.sh"
srv_setup
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start main --require-signature no
H=$(auth "$ADMIN")
http POST /tokens -H "$H" -H 'Content-Type: application/json' -d '{"name":"reader","scopes":["read"]}'
RD=$(jq -r .token "$T/body")
http POST /tokens -H "$H" -H 'Content-Type: application/json' -d '{"name":"ci","scopes":["upload","read"]}'
UP=$(jq -r .token "$T/body"); UP_ID=$(jq -r .id "$T/body")
W=$T/work; mkdir -p "$W"
UPLOAD_FAILS=0

# commit WL N RUNS LEVEL_NS: uploads RUNS runs of commit N of workload WL.
commit() {
  local wl=$1 n=$2 runs=$3 level=$4 i
  for i in $(seq 1 "$runs"); do
    local noise; noise=$(hist_noise "$wl-$n-$i")
    local d=$W/$wl-$n-$i
    hist_bundle "$d" "run-$wl-$n-$i" "$(hist_sha "$wl$n")" main "$(hist_time "$n")" $((level + level * noise / 1000)) "$wl"
    hist_upload_dir "$d" "$ADMIN"
    [ "$CODE" = 201 ] || { UPLOAD_FAILS=$((UPLOAD_FAILS + 1)); note "upload $wl/$n/$i: $CODE $BODY"; }
  done
}
sha() { hist_sha "$1$2"; }

# ---------------------------------------------------------------- series A: two planted shifts
# 24 commits, 5 runs each; +15 % at commit 8, −12 % at commit 16; commit 12 arrives last.
level_a() { if [ "$1" -lt 8 ]; then echo 1000000; elif [ "$1" -lt 16 ]; then echo 1150000; else echo 1012000; fi; }
for n in $(seq 1 24); do [ "$n" = 12 ] || commit hist-a "$n" 5 "$(level_a "$n")"; done
commit hist-a 12 5 "$(level_a 12)"
# ---------------------------------------------------------------- series B: an unconfirmable change
# +20 % at commit 7, whose cohort has only 3 runs (comparison/6 needs 5 per side).
for n in $(seq 1 14); do
  if [ "$n" -lt 7 ]; then commit hist-b "$n" 5 2000000; elif [ "$n" = 7 ]; then commit hist-b 7 3 2400000; else commit hist-b "$n" 5 2400000; fi
done
[ $UPLOAD_FAILS = 0 ] && pass "all revision-tagged uploads published" || fail "$UPLOAD_FAILS uploads failed"
[ "$(psqlc "SELECT count(*) FROM bundle_revisions")" = 188 ] && pass "188 revisions indexed" || fail "revisions: $(psqlc "SELECT count(*) FROM bundle_revisions")"
[ "$(psqlc "SELECT count(*) FROM history_series WHERE dirty_from IS NOT NULL")" = 0 ] && pass "every series re-detected" || fail "series left dirty"

# ---------------------------------------------------------------- history of A
http GET "/history?workload_id=hist-a&branch=main" -H "$(auth "$RD")"; expect 200 "" "GET /history (series A)"
cp "$T/body" "$T/hist_a.json"
jq -e '.schema == "candle-graph/history/1" and .branch == "main" and .metric == "outer_wall_time_ns"
       and .series.workload_id == "hist-a" and .series.entrypoint == "hist::bench" and (.series | has("implementation_id") | not)' \
  "$T/hist_a.json" >/dev/null && pass "history/1 envelope and series identity" || fail "history envelope: $(head -c 600 "$T/hist_a.json")"
[ "$(jq '.points | length' "$T/hist_a.json")" = 24 ] && pass "24 points" || fail "points: $(jq '.points | length' "$T/hist_a.json")"
want=$(for n in $(seq 1 24); do sha hist-a "$n"; done | jq -R . | jq -sc .)
[ "$(jq -c '[.points[].commit]' "$T/hist_a.json")" = "$want" ] && pass "points in commit-time order (late commit 12 in place)" || fail "point order"
jq -e 'all(.points[]; .n == 5 and (.bundles | length) == 5 and .ci95.lower_ns <= .median_ns and .median_ns <= .ci95.upper_ns)' \
  "$T/hist_a.json" >/dev/null && pass "n, median inside its bootstrap interval" || fail "point stats"
got=$(jq -c '[.change_points[] | select(.state == "confirmed") | [.before_commit, .after_commit]]' "$T/hist_a.json")
exp=$(jq -nc --arg a "$(sha hist-a 7)" --arg b "$(sha hist-a 8)" --arg c "$(sha hist-a 15)" --arg d "$(sha hist-a 16)" '[[$a,$b],[$c,$d]]')
[ "$got" = "$exp" ] && pass "exactly the planted change points are confirmed" || fail "confirmed change points: $got, want $exp"
note "series A: $(jq '[.change_points[] | select(.state != "confirmed")] | length' "$T/hist_a.json") unconfirmed change points"
jq -e '[.change_points[] | select(.state == "confirmed")] | (.[0].relative_change > 0.1 and .[1].relative_change < -0.08
       and all(.[]; .p_value <= 0.001 and .alert_id != null and .comparison.reasons == []))' "$T/hist_a.json" >/dev/null \
  && pass "confirmed change points: sizes, p-values, alert ids" || fail "change point facts: $(jq -c .change_points "$T/hist_a.json")"

http GET "/history?workload_id=hist-a&branch=main&detect=full" -H "$(auth "$RD")"; expect 200 "" "GET /history detect=full"
if [ "$(jq -cS .change_points "$T/hist_a.json")" = "$(jq -cS .change_points "$T/body")" ]; then
  pass "incremental change points equal whole-series detection (A)"
else fail "incremental ≠ full: $(jq -c .change_points "$T/hist_a.json") vs $(jq -c .change_points "$T/body")"; fi

# ---------------------------------------------------------------- alerts of A
http GET "/alerts?workload_id=hist-a" -H "$(auth "$RD")"; expect 200 "" "GET /alerts"
cp "$T/body" "$T/alerts_a.json"
[ "$(jq '.items | length' "$T/alerts_a.json")" = 2 ] && pass "two alerts for series A" || fail "alerts: $(jq -c . "$T/alerts_a.json" | head -c 500)"
jq -e --arg b "$(sha hist-a 8)" '.items | map(select(.after_commit == $b)) | .[0] | .state == "open" and .delta_ns > 0
      and .ci95.lower_ns > 0 and (.inputs.baseline | length) == 5 and (.inputs.candidate | length) == 5 and .metric == "outer_wall_time_ns"
      and .branch == "main" and .series.workload_id == "hist-a"' "$T/alerts_a.json" >/dev/null && pass "alert facts" || fail "alert facts: $(jq -c '.items[0]' "$T/alerts_a.json")"
http GET "/alerts?workload_id=hist-a&limit=1" -H "$(auth "$RD")"
cur=$(jq -r .next_cursor "$T/body"); first=$(jq -r '.items[0].id' "$T/body")
http GET "/alerts?workload_id=hist-a&limit=1&cursor=$cur" -H "$(auth "$RD")"
[ "$(jq '.items | length' "$T/body")" = 1 ] && [ "$(jq -r '.items[0].id' "$T/body")" != "$first" ] && [ "$(jq -r .next_cursor "$T/body")" = null ] \
  && pass "alert paging" || fail "alert paging: $BODY"

# the confirming comparison is reproducible through commit selectors
http GET "/compare?a=commit:$(sha hist-a 7 | cut -c1-12)&b=commit:$(sha hist-a 8)&workload_id=hist-a" -H "$(auth "$RD")"
expect 200 "" "GET /compare with commit: selectors"
jq -e '.verdict == "candidate_slower"' "$T/body" >/dev/null && pass "commit selectors: candidate_slower" || fail "selector compare: $(jq -c '{verdict,reasons}' "$T/body")"
exp_in=$(jq -c --arg b "$(sha hist-a 8)" '.items[] | select(.after_commit == $b) | .inputs.candidate' "$T/alerts_a.json")
[ "$(jq -c '[.inputs.candidate[].manifest_sha256]' "$T/body")" = "$exp_in" ] && pass "alert inputs = the comparison's candidate receipts" || fail "alert inputs"

# ---------------------------------------------------------------- triage
AID=$(jq -r '.items[0].id' "$T/alerts_a.json")
http PATCH "/alerts/$AID" -H "$(auth "$RD")" -H 'Content-Type: application/json' -d '{"state":"acknowledged"}'
expect 403 forbidden "PATCH /alerts with a read token → forbidden"
http PATCH "/alerts/$AID" -H "$(auth "$UP")" -H 'Content-Type: application/json' -d '{"state":"sleeping"}'
expect 400 bad_request "unknown triage state → bad_request"
http PATCH "/alerts/999999" -H "$(auth "$UP")" -H 'Content-Type: application/json' -d '{"state":"resolved"}'
expect 404 not_found "unknown alert → not_found"
http PATCH "/alerts/$AID" -H "$(auth "$UP")" -H 'Content-Type: application/json' -d '{"state":"acknowledged","note":"bisecting"}'
expect 200 "" "PATCH /alerts/{id} acknowledged"
jq -e --arg u "$UP_ID" '.state == "acknowledged" and .note == "bisecting" and .updated_by == $u' "$T/body" >/dev/null \
  && pass "triage state, note and who" || fail "triage: $BODY"
http GET "/alerts?state=open&workload_id=hist-a" -H "$(auth "$RD")"
[ "$(jq '.items | length' "$T/body")" = 1 ] && pass "state filter" || fail "state filter: $BODY"
http GET "/alerts?state=nope" -H "$(auth "$RD")"; expect 400 invalid_parameter "bad state filter"

# ---------------------------------------------------------------- series B: unconfirmed
http GET "/history?workload_id=hist-b" -H "$(auth "$RD")"; expect 200 "" "GET /history (series B)"
cp "$T/body" "$T/hist_b.json"
jq -e --arg c "$(sha hist-b 7)" '.change_points | map(select(.commit == $c)) | length == 1 and .[0].state == "unconfirmed"
      and .[0].alert_id == null and (.[0].comparison.reasons | index("insufficient_runs")) != null
      and .[0].comparison.verdict == "ineligible"' "$T/hist_b.json" >/dev/null \
  && pass "change point on a 3-run commit stays unconfirmed (insufficient_runs)" || fail "series B: $(jq -c .change_points "$T/hist_b.json")"
[ "$(jq '[.change_points[] | select(.state == "confirmed")] | length' "$T/hist_b.json")" = 0 ] && pass "no confirmed change point in B" || fail "B confirmed"
http GET "/alerts?workload_id=hist-b" -H "$(auth "$RD")"
[ "$(jq '.items | length' "$T/body")" = 0 ] && pass "no alert for an unconfirmed change point" || fail "B alerts: $BODY"
http GET "/history?workload_id=hist-b&detect=full" -H "$(auth "$RD")"
[ "$(jq -cS .change_points "$T/hist_b.json")" = "$(jq -cS .change_points "$T/body")" ] && pass "incremental = full (B)" || fail "B incremental ≠ full"
http GET "/compare/advice?a=commit:$(sha hist-b 6)&b=commit:$(sha hist-b 7)" -H "$(auth "$RD")"; expect 200 "" "GET /compare/advice"
jq -e '.schema == "candle-graph/replication-advice/1" and .verdict == "ineligible" and .reasons == ["insufficient_runs"]
       and .additional_runs_per_side >= 2 and .target_effect_percent == 1' "$T/body" >/dev/null \
  && pass "advice: at least 2 more runs per side" || fail "advice: $BODY"
http GET "/compare/advice?a=commit:$(sha hist-a 7)&b=commit:$(sha hist-a 8)" -H "$(auth "$RD")"
jq -e '.verdict == "candidate_slower" and .additional_runs_per_side == 0' "$T/body" >/dev/null && pass "advice: resolved → 0" || fail "advice resolved: $BODY"
http GET "/compare/advice?a=commit:$(sha hist-a 7)&b=commit:$(sha hist-a 8)&min_effect_pct=-1" -H "$(auth "$RD")"
expect 400 invalid_parameter "advice: bad min_effect_pct"

# ---------------------------------------------------------------- span metric, filters, ambiguity
http GET "/history?workload_id=hist-a&branch=main&metric=span:hist::bench/step" -H "$(auth "$RD")"; expect 200 "" "span metric history"
jq -e 'all(.points[]; .n == 5)' "$T/body" >/dev/null && pass "span metric points" || fail "span points"
[ "$(jq -c '[.change_points[] | select(.state == "confirmed") | .after_commit]' "$T/body")" = "$(jq -c '[.[][1]]' <<<"$exp")" ] \
  && pass "span metric: the same confirmed change points" || fail "span cps: $(jq -c .change_points "$T/body")"
http GET "/history?workload_id=hist-a&metric=bogus" -H "$(auth "$RD")"; expect 400 invalid_parameter "unknown metric"
http GET "/history?branch=main" -H "$(auth "$RD")"; expect 400 invalid_parameter "history needs workload_id"
http GET "/history?workload_id=nothing" -H "$(auth "$RD")"; expect 404 not_found "no such series"
hist_bundle "$W/feat" run-feat "$(hist_sha feat1)" feature/x "$(hist_time 30)" 1000000 hist-a
hist_upload_dir "$W/feat" "$ADMIN"; expect 201 "" "upload on a feature branch"
http GET "/history?workload_id=hist-a" -H "$(auth "$RD")"; expect 400 ambiguous_series "two branches → ambiguous_series"
[ "$(jq '.error.detail.series | length' "$T/body")" = 2 ] && pass "ambiguous_series lists the series" || fail "ambiguous detail: $BODY"
http GET "/bundles?commit=$(sha hist-a 8 | cut -c1-12)&limit=50" -H "$(auth "$RD")"
[ "$(jq '.items | length' "$T/body")" = 5 ] && pass "bundle list filter commit=<prefix>" || fail "commit filter: $(jq '.items | length' "$T/body")"
http GET "/bundles?branch=feature/x" -H "$(auth "$RD")"
[ "$(jq '.items | length' "$T/body")" = 1 ] && pass "bundle list filter branch=" || fail "branch filter"
http GET "/compare?a=commit:$(sha hist-a 24)&b=branch:feature/x" -H "$(auth "$RD")"; expect 200 "" "branch: selector"
[ "$(jq '.inputs.candidate | length' "$T/body")" = 1 ] && pass "branch: selects its newest commit's cohort" || fail "branch selector"
http GET "/compare?a=bogus:1&b=branch:feature/x" -H "$(auth "$RD")"; expect 400 invalid_parameter "unknown selector"
# a bundle without revision tags is not indexed
make_bundle "$W/plain" run-plain; pack "$W/plain" "$W/plain.tar"; upload "$W/plain.tar" "$ADMIN"; expect 201 "" "untagged upload"
[ "$(psqlc "SELECT count(*) FROM bundle_revisions WHERE bundle_id = '$(sha256sum "$W/plain/bundle.json" | cut -d' ' -f1)'")" = 0 ] \
  && pass "untagged bundle has no revision" || fail "untagged revision"
# issue 13: GET /history (stored and detect=full, span metric) read through the store
http GET /metrics; expect 200 "" "GET /metrics"
held=$(awk '$1 == "cg_db_pool_held_at_reply_total" {print $2}' "$T/body")
[ "$held" = 0 ] && pass "history answers were queued with no pooled connection held" \
  || fail "answers queued while holding a connection: ${held:-missing}"

srv_stop
exit $((FAILS > 0))
