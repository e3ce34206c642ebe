#!/usr/bin/env bash
# End to end: real traces recorded by toy_train (capture API), published with
# `candle-graph report`, then `compare`, `campaign-status` and `series`:
#  1. paired 5+5 production runs (impl-a vs impl-b --slow) are comparable; the
#     JSON is deterministic; receipts name the published manifests;
#  2. ineligible results are still written; --require-eligible exits 1 with the
#     sorted code list; --unverified-traces is diagnostic only;
#  3. hard loading errors (tampered bundle), output inside an input bundle;
#  4. the stored-row path gives the same bytes as the bundle path
#     (test_comparison_bundles run over these bundles);
#  5. a campaign with published, failed, missing and mismatched captures;
#     series from the manifest fails closed, series over bundles is ordered.
# Timing is never asserted: the verdict may be any of the three eligible ones.
set -euo pipefail
B="${CG_BINARY_DIR:?}"
CG="$B/agent/candle-graph"
TOY="$B/agent/toy_train"
ROWS_TEST="$B/tests/test_comparison_bundles"
fail() { echo "FAIL: $*" >&2; exit 1; }
for t in "$CG" "$TOY"; do [ -x "$t" ] || fail "missing $t (build the candle-graph and toy_train targets)"; done
"$CG" report --help >/dev/null 2>&1 || fail "candle-graph report is not available"
command -v jq >/dev/null || fail "jq is required (make bootstrap installs it)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/traces" "$T/base" "$T/cand" "$T/camp/runs"

record() { # out-bundle toy-args...
    local bundle="$1"; shift
    local trace="$T/traces/$(echo "$bundle" | tr '/' '_').jsonl"
    "$TOY" --out "$trace" "$@" 2>>"$T/toy.log" || fail "toy_train $* failed"
    "$CG" report "$trace" --bundle "$bundle" >"$trace.receipt.json" || fail "report $bundle failed"
}

# 1. cohorts
for i in 0 1 2 3 4; do
    record "$T/base/$i" --step 3 --production --implementation impl-a --pair "pair-$i"
    record "$T/cand/$i" --step 3 --production --implementation impl-b --pair "pair-$i" --slow
done
BASE=("$T"/base/*) CAND=("$T"/cand/*)
"$CG" compare --baseline "${BASE[@]}" --candidate "${CAND[@]}" --require-eligible -o "$T/cmp.json" \
    || fail "eligible comparison exited non-zero: $(cat "$T/cmp.json" 2>/dev/null | jq -c .reasons)"
jq -e '.schema == "candle-graph/comparison/6" and .comparable and .paired and (.reasons | length == 0)' "$T/cmp.json" >/dev/null \
    || fail "comparison not comparable/paired: $(jq -c '.reasons' "$T/cmp.json")"
jq -e '.verdict | IN("candidate_faster", "candidate_slower", "inconclusive")' "$T/cmp.json" >/dev/null || fail "verdict"
jq -e '.confidence_interval.level == 0.95 and .inputs.verification == "verified_bundles"' "$T/cmp.json" >/dev/null || fail "ci/inputs"
jq -e '.baseline_implementation_id == "impl-a" and .candidate_implementation_id == "impl-b"' "$T/cmp.json" >/dev/null || fail "impl ids"
jq -e '(.baseline.samples_ns | length == 5) and (.tensor_stats.matched | length > 0)' "$T/cmp.json" >/dev/null || fail "samples/tensor stats"
for i in 0 1 2 3 4; do
    want="$(jq -r .run_id "$T/base/$i/bundle.json")"
    got="$(jq -r ".inputs.baseline[$i].run_id" "$T/cmp.json")"
    [ "$want" = "$got" ] || fail "receipt $i run_id $got != $want"
    [ "$(jq -r ".inputs.baseline[$i].manifest_sha256" "$T/cmp.json")" = "$(sha256sum "$T/base/$i/bundle.json" | cut -d' ' -f1)" ] \
        || fail "receipt $i digest is not the bundle.json SHA-256"
done
# repeated flag form and determinism
"$CG" compare --baseline "${BASE[0]}" --baseline "${BASE[@]:1}" --candidate "${CAND[@]}" >"$T/cmp2.json"
cmp -s "$T/cmp.json" "$T/cmp2.json" || fail "same inputs gave different bytes"

# 2. ineligible, strict flag, unverified traces
rc=0; "$CG" compare --baseline "${BASE[@]:1}" --candidate "${CAND[@]}" -o "$T/inel.json" --require-eligible 2>"$T/inel.err" || rc=$?
[ "$rc" = 1 ] || fail "--require-eligible on an ineligible comparison exited $rc"
jq -e '.verdict == "ineligible" and .confidence_interval == null' "$T/inel.json" >/dev/null || fail "ineligible JSON not written"
grep -qx 'Error: comparison ineligible: insufficient_runs, pair_sets_mismatch' "$T/inel.err" \
    || fail "ineligible message: $(cat "$T/inel.err")"
"$CG" compare --baseline "${BASE[@]:1}" --candidate "${CAND[@]}" >/dev/null || fail "ineligible without strict flag must exit 0"
"$CG" compare --unverified-traces --baseline "${BASE[@]/%//trace.jsonl}" --candidate "${CAND[@]/%//trace.jsonl}" >"$T/unv.json"
jq -e '.verdict == "ineligible" and ([.reasons[].code] == ["unverified_inputs"]) and (.inputs.baseline == [])' "$T/unv.json" >/dev/null \
    || fail "unverified traces: $(jq -c .reasons "$T/unv.json")"

# 3. hard errors
rc=0; "$CG" compare --baseline "${BASE[@]}" --candidate "${CAND[@]}" -o "${BASE[2]}/out.json" 2>"$T/e1" || rc=$?
[ "$rc" != 0 ] && [ ! -e "${BASE[2]}/out.json" ] || fail "output inside an input bundle was written"
grep -q "refusing to write command output .* inside verified bundle" "$T/e1" || fail "refusal message: $(cat "$T/e1")"
cp -r "$T/cand/3" "$T/tampered"
printf ' ' >>"$T/tampered/trace.jsonl"
rc=0; "$CG" compare --baseline "${BASE[@]}" --candidate "${CAND[@]:0:3}" "$T/tampered" "${CAND[4]}" -o "$T/t.json" 2>"$T/e2" || rc=$?
[ "$rc" = 1 ] && [ ! -e "$T/t.json" ] || fail "tampered bundle did not abort the comparison"
grep -qx "Error: verify candidate bundle 4 at $T/tampered" "$T/e2" && grep -qx '    bundle file "trace.jsonl" size mismatch: expected [0-9]*, observed [0-9]*' "$T/e2" \
    || fail "tamper message: $(cat "$T/e2")"

# 4. rows (cohort sample table) vs bundles: byte-identical comparison JSON
if [ -x "$ROWS_TEST" ]; then
    CG_COMPARISON_BASELINE="$(printf '%s:' "${BASE[@]}")" CG_COMPARISON_CANDIDATE="$(printf '%s:' "${CAND[@]}")" \
        "$ROWS_TEST" >"$T/rows.log" 2>&1 || { cat "$T/rows.log"; fail "rows path differs from bundles path"; }
else
    fail "missing $ROWS_TEST (build the unit tests)"
fi

# 5. campaign
C="$T/camp"
record "$C/runs/s1" --step 1 --production --implementation impl-a
record "$C/runs/s2" --step 2 --production --implementation impl-a
record "$C/runs/s3" --step 3 --production --implementation impl-a
record "$C/runs/s5" --step 5 --production --implementation impl-a --fail
record "$C/runs/s6" --step 7 --production --implementation impl-a
cat >"$C/campaign.json" <<JSON
{"schema": "candle-graph/campaign/1", "campaign_id": "toy", "entrypoint": "$(head -1 "$C/runs/s1/trace.jsonl" | jq -r .entrypoint)",
 "planned": [{"capture_step": 3, "bundle": "runs/s3"}, {"capture_step": 1, "bundle": "runs/s1"},
             {"capture_step": 2, "bundle": "runs/s2"}, {"capture_step": 4, "bundle": "runs/s4"},
             {"capture_step": 5, "bundle": "runs/s5"}, {"capture_step": 6, "bundle": "runs/s6"}]}
JSON
"$CG" campaign-status --manifest "$C/campaign.json" -o "$T/status.json" || fail "campaign-status"
jq -e '.planned == 6 and .published == 3 and .missing == 1 and .failed == 2' "$T/status.json" >/dev/null \
    || fail "status counts: $(jq -c '{planned,published,missing,failed}' "$T/status.json")"
jq -e '[.captures[].capture_step] == [1,2,3,4,5,6]' "$T/status.json" >/dev/null || fail "captures not sorted"
jq -e '[.captures[].state.state] == ["published","published","published","missing","failed_run","identity_mismatch"]' "$T/status.json" >/dev/null \
    || fail "states: $(jq -c '[.captures[].state.state]' "$T/status.json")"
jq -e '.captures[5].state.message == "capture_step mismatch: manifest plans 6, bundle trace observes 7"' "$T/status.json" >/dev/null \
    || fail "identity message: $(jq -c '.captures[5].state' "$T/status.json")"
jq -e '.captures[4].state.reason | type == "string"' "$T/status.json" >/dev/null || fail "failed_run reason"
rc=0; "$CG" series --manifest "$C/campaign.json" >"$T/s.json" 2>"$T/e3" || rc=$?
[ "$rc" = 1 ] || fail "series over an incomplete campaign exited $rc"
grep -qF 'series requires every planned capture to be published; not published: step 4 (runs/s4): missing, step 5 (runs/s5): failed_run, step 6 (runs/s6): identity_mismatch; run `campaign-status` for the full reconciliation' "$T/e3" \
    || fail "series gate message: $(cat "$T/e3")"
"$CG" series --bundle "$C/runs/s3" "$C/runs/s1" --bundle "$C/runs/s2" -o "$T/series.json" || fail "series --bundle"
jq -e '[.inputs[].capture_step] == [1,2,3] and [.outer_wall_time[].capture_step] == [1,2,3] and .label_prefix == null' "$T/series.json" >/dev/null \
    || fail "series order"
jq -e '[.outer_wall_time[].outer_wall_time_ns | type] == ["number","number","number"]' "$T/series.json" >/dev/null || fail "series timing"
jq -e '(.tensor_stats | length > 0) and ([.tensor_stats[] | length] | all(. >= 3))' "$T/series.json" >/dev/null || fail "series tensor stats"
first="$(jq -r '.tensor_stats | keys[0]' "$T/series.json")"
"$CG" series --bundle "$C/runs/s1" "$C/runs/s2" --label-prefix "$first" >"$T/sf.json"
jq -e --arg p "$first" '(.label_prefix == $p) and (.tensor_stats | keys | all(startswith($p))) and (.gradients | keys | all(startswith($p)))' "$T/sf.json" >/dev/null \
    || fail "label prefix filter"
rc=0; "$CG" series --bundle "$C/runs/s1" "$C/runs/s3" "$T/base/0" >/dev/null 2>"$T/e4" || rc=$?
[ "$rc" = 1 ] && grep -q "ambiguous series coordinate: capture_step 3 is provided by both" "$T/e4" || fail "duplicate step: $(cat "$T/e4")"
echo "PASS: comparison/campaign/series CLI over toy_train bundles"
