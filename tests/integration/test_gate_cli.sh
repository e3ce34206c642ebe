#!/usr/bin/env bash
# Issue 15: `candle-graph gate` against a real server and PostgreSQL — exit
# codes and the Markdown summary for faster (0), slower (1; 0 within
# --fail-above), same (2, inconclusive) and ineligible (2, with the run-k-more
# advice) cohorts; -o JSON; usage and server errors (3); --git over a real
# temporary git repository (merge-base, then the ancestors walked to the
# nearest commit with a cohort); and `capture --git --tag` filling the tags.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
. "${CG_SOURCE_DIR:-.}/tests/support/history_lib.sh"
srv_setup
[ -x "$CLI" ] || die "missing $CLI"
CLI=$(cd "$(dirname "$CLI")" && pwd)/candle-graph
command -v git >/dev/null || die "missing git"
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start main --require-signature no
http POST /tokens -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d '{"name":"ci","scopes":["read"]}'
RD=$(jq -r .token "$T/body")
W=$T/work; mkdir -p "$W"

# cohort NAME COMMIT TIME RUNS LEVEL [BRANCH]: RUNS bundles of one commit.
cohort() {
  local name=$1 commit=$2 time=$3 runs=$4 level=$5 branch=${6:-main} i
  for i in $(seq 1 "$runs"); do
    hist_bundle "$W/$name-$i" "run-$name-$i" "$commit" "$branch" "$time" $((level + level * $(hist_noise "g$i") / 1000)) gate-wl
    hist_upload_dir "$W/$name-$i" "$ADMIN"
    [ "$CODE" = 201 ] || fail "upload $name/$i: $CODE $BODY"
  done
}
C1=$(hist_sha g1); C2=$(hist_sha g2); C3=$(hist_sha g3); C4=$(hist_sha g4); C5=$(hist_sha g5)
cohort base "$C1" "$(hist_time 1)" 5 1000000
cohort fast "$C2" "$(hist_time 2)" 5 850000
cohort slow "$C3" "$(hist_time 3)" 5 1200000
cohort same "$C4" "$(hist_time 4)" 5 1000000
cohort few "$C5" "$(hist_time 5)" 2 1000000

# gate CASE ARGS…: runs the gate, RC and $W/CASE.md (Markdown on stdout)
gate() {
  local name=$1; shift
  "$CLI" gate --server "$URL" --token "$RD" --filter workload_id=gate-wl "$@" >"$W/$name.md" 2>"$W/$name.err"
  RC=$?
}
check() { # LABEL WANT_RC PATTERN…
  local label=$1 want=$2; shift 2
  if [ "$RC" != "$want" ]; then fail "$label: exit $RC, want $want: $(cat "$W/$label.err" 2>/dev/null | head -5)"; return; fi
  local p
  for p in "$@"; do grep -qF -- "$p" "$W/$label.md" || { fail "$label: Markdown lacks '$p'"; sed -n 1,40p "$W/$label.md" >&2; return; }; done
  pass "$label: exit $want and its Markdown"
}
gate faster --baseline "commit:$C1" --candidate "commit:$C2"
check faster 0 "candle-graph gate: **faster**" "| runs | 5 | 5 |" "**Median delta:** -15" "95 % interval" "Open alerts on this series" "None." "/#/compare?a=commit%3A$C1&b=commit%3A$C2"
gate slower --baseline "commit:$C1" --candidate "commit:$C3"
check slower 1 "candle-graph gate: **slower**" "**Median delta:** +20" "Largest span/op/device differences" '`hist::bench/step`'
gate tolerated --baseline "commit:$C1" --candidate "commit:$C3" --fail-above 25
check tolerated 0 "**slower, within --fail-above**"
gate same --baseline "commit:$C1" --candidate "commit:$C4"
check same 2 "candle-graph gate: **inconclusive**" "**Median delta:** +0.00 %"
gate ineligible --baseline "commit:$C1" --candidate "commit:$C5"
check ineligible 2 "candle-graph gate: **ineligible**" '`insufficient_runs`' "**Run more:** about"
"$CLI" gate --server "$URL" --token "$RD" --filter workload_id=gate-wl --baseline "commit:$C1" --candidate "commit:$C5" \
  -o "$W/inel.json" --markdown "$W/inel.md" >"$W/inel.stdout" 2>/dev/null; RC=$?
[ "$RC" = 2 ] && [ ! -s "$W/inel.stdout" ] && [ -s "$W/inel.md" ] && pass "-o and --markdown: files, nothing on stdout" || fail "-o/--markdown: rc $RC"
jq -e --arg c1 "$C1" --arg c5 "$C5" 'keys == ["advice","baseline_commit","candidate_commit","comparison","dashboard_url"]
       and .baseline_commit == $c1 and .candidate_commit == $c5 and .comparison.schema == "candle-graph/comparison/6"
       and .advice.schema == "candle-graph/replication-advice/1" and .advice.additional_runs_per_side >= 3' "$W/inel.json" >/dev/null \
  && pass "-o JSON {comparison, advice, baseline_commit, candidate_commit, dashboard_url}" || fail "-o JSON: $(head -c 400 "$W/inel.json")"

# usage and server errors → 3
gate usage1 --candidate "commit:$C2"; [ "$RC" = 3 ] && pass "missing baseline → 3" || fail "usage: $RC"
gate usage2 --baseline "commit:$C1" --git --candidate "commit:$C2"; [ "$RC" = 3 ] && pass "--git with --baseline → 3" || fail "usage2: $RC"
gate usage3 --baseline "commit:$C1" --candidate "commit:$C2" --fail-above x; [ "$RC" = 3 ] && pass "bad --fail-above → 3" || fail "usage3: $RC"
gate badsel --baseline "nope:1" --candidate "commit:$C2"; [ "$RC" = 3 ] && grep -q invalid_parameter "$W/badsel.err" && pass "server 400 → 3 with the envelope" || fail "badsel: $RC"
"$CLI" gate --server "$URL" --token wrong --baseline "commit:$C1" --candidate "commit:$C2" >/dev/null 2>&1; RC=$?
[ "$RC" = 3 ] && pass "401 → 3" || fail "401: $RC"
DEAD=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$CLI" gate --server "http://127.0.0.1:$DEAD" --token x --baseline "commit:$C1" --candidate "commit:$C2" >/dev/null 2>&1; RC=$?
[ "$RC" = 3 ] && pass "no server → 3" || fail "no server: $RC"

# ---------------------------------------------------------------- --git over a real repository
R=$W/repo; mkdir -p "$R"
git -C "$R" init -q -b main; git -C "$R" config user.email t@example.com; git -C "$R" config user.name t
commit_file() { echo "$2" >"$R/f"; git -C "$R" add f; GIT_COMMITTER_DATE="$3" GIT_AUTHOR_DATE="$3" git -C "$R" commit -q -m "$2"; git -C "$R" rev-parse HEAD; }
A=$(commit_file x a "2026-11-01T10:00:00Z")
B=$(commit_file x b "2026-11-01T11:00:00Z")
git -C "$R" checkout -q -b feature
F1=$(commit_file x f1 "2026-11-01T12:00:00Z")
git -C "$R" checkout -q main; M3=$(commit_file x c "2026-11-01T12:30:00Z"); git -C "$R" checkout -q feature
F2=$(commit_file x f2 "2026-11-01T13:00:00Z")
cohort gitA "$A" "2026-11-01T10:00:00Z" 5 1000000
cohort gitM3 "$M3" "2026-11-01T12:30:00Z" 5 500000
cohort gitF2 "$F2" "2026-11-01T13:00:00Z" 5 1300000 feature
(cd "$R" && "$CLI" gate --server "$URL" --token "$RD" --filter workload_id=gate-wl --git --base-branch main \
   --candidate "commit:$F2" -o "$W/git.json" --markdown "$W/git.md" 2>"$W/git.err"); RC=$?
[ "$RC" = 1 ] && pass "--git: slower than the merge-base's nearest measured ancestor → 1" || fail "--git rc $RC: $(cat "$W/git.err")"
[ "$(jq -r .baseline_commit "$W/git.json")" = "$A" ] && pass "--git walked merge-base $B (no cohort) to $A" || fail "--git baseline: $(jq -r .baseline_commit "$W/git.json"), want $A"
(cd "$R" && "$CLI" gate --server "$URL" --token "$RD" --filter workload_id=gate-wl --git --base-branch main --max-walk 1 \
   --candidate "commit:$F2" >/dev/null 2>"$W/git2.err"); RC=$?
[ "$RC" = 2 ] && grep -q "no ancestor" "$W/git2.err" && pass "--git without a measured ancestor in reach → 2" || fail "--max-walk 1: $RC"
"$CLI" gate --server "$URL" --token "$RD" --git --repo "$W/notarepo" --candidate "commit:$F2" >/dev/null 2>&1; RC=$?
[ "$RC" = 3 ] && pass "--git outside a repository → 3" || fail "--git no repo: $RC"

# ---------------------------------------------------------------- capture --git --tag
if [ -e "$BIN/agent/cupti/libcandlegraph-cupti.so" ]; then
  export CG_CUPTI_LIBRARY="$BIN/agent/cupti/libfakecupti.so" CG_CUDA_LIBRARY="$BIN/agent/cupti/libfakecuda.so"
  (cd "$R" && CG_VCS_BRANCH= "$CLI" capture --entrypoint train --step 2 --infer --bundle "$W/cap" --git --tag team=perf \
     --tag vcs.repository=https://example.com/r.git -- true >/dev/null 2>"$W/cap.err") || true
  CT=$(git -C "$R" show -s --format=%cI HEAD)
  head -1 "$W/cap/trace.jsonl" | jq -e --arg c "$F2" --arg t "$CT" '.tags["vcs.commit"] == $c and .tags["vcs.branch"] == "feature"
      and .tags["vcs.commit_time"] == $t and ($t | test("^2026-11-01T13:00:00(Z|[+]00:00)$")) and .tags.team == "perf"
      and .tags["vcs.repository"] == "https://example.com/r.git"' >/dev/null \
    && pass "capture --git --tag: revision tags in the trace meta" || fail "capture tags: $(head -1 "$W/cap/trace.jsonl" | jq -c .tags)"
  "$CLI" capture --entrypoint e --step 1 --bundle "$W/cap2" --tag novalue -- true >/dev/null 2>&1; RC=$?
  [ "$RC" != 0 ] && [ ! -e "$W/cap2" ] && pass "capture --tag without = refused" || fail "--tag novalue: $RC"
else
  note "SKIP capture --git: libcandlegraph-cupti.so not built"
fi

srv_stop
exit $((FAILS > 0))
