#!/usr/bin/env bash
# Dashboard views (issue 14): GET /bundles/{id}/views/{spans,ops,costs,memory,gpu,evidence}
# against the real server and PostgreSQL (tests/support/server_lib.sh). Checks
# that the answers are the verified trace's figures (counts from the trace,
# host times equal to GET /graph), that paging, sorting, filtering and the
# limits are exact, that bad parameters get precise 4xx answers, and that an
# edited viewer.html changes nothing.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
TOY=$BIN/agent/toy_train
[ -x "$TOY" ] || die "missing $TOY (build the toy_train target)"
command -v node >/dev/null || die "node is not installed"
srv_setup
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start views --require-signature no

up() { pack "$1" "$1.tar"; upload "$1.tar" "$ADMIN"; [ "$CODE" = 201 ] || die "upload $1: $CODE $BODY"; jq -r .id "$T/body"; }
# An evidence/3 evidence.json (ingest keeps it as not_rederivable) and a one-line report.md:
# the views must come from trace.jsonl alone, never from these files.
legacy_evidence() { printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$1/evidence.json"; printf '# report\n' >"$1/report.md"; }

# a toy capture (complete, valid: graph times, memory events) whose viewer.html claims other numbers
mkdir -p "$T/toy"
"$TOY" --out "$T/toy/trace.jsonl" --step 3 >/dev/null 2>&1 || die "toy_train failed"
legacy_evidence "$T/toy"
printf '<!doctype html><script type="application/json" id="cg-payload">{"schema":"candle-graph/viewer/5","views":{"span_costs":{"items":[{"id":"s1","label":"FABRICATED","kind":"function","host_total_time_ns":999999999}]}}}</script>' >"$T/toy/viewer.html"
manifest "$T/toy" "$(head -1 "$T/toy/trace.jsonl" | jq -r .run_id)"
TOY_ID=$(up "$T/toy")
# a synthetic trace of 3,000 spans with ops and device intervals
mkdir -p "$T/big"
node "$SRC/bench/web_timeline/gen_trace.mjs" 3000 "$T/big/trace.jsonl" run-views-big
legacy_evidence "$T/big"; manifest "$T/big" run-views-big
BIG_ID=$(up "$T/big")
pass "uploaded 2 bundles"

get() { http GET "$1" -H "$(auth "$ADMIN")"; }
V() { get "/bundles/$BIG_ID/views/$1"; }
TR=$T/big/trace.jsonl

# ---------------------------------------------------------------- spans
V "spans?limit=1000&sort=id"; expect 200 "" "spans page"
NSPAN=$(jq -c 'select(.kind == "span_start")' "$TR" | wc -l)
jq -e --argjson n "$NSPAN" '.total == $n and .matched == $n and (.rows | length) == ([$n, 1000] | min) and .truncated == false' "$T/body" >/dev/null \
  && pass "spans: total and matched are the trace's $NSPAN spans" || fail "spans totals: $(jq -c '{total, matched, n: (.rows|length)}' "$T/body")"
# pages of 7 concatenate to one page of 1000 (sorted by duration desc, ties by row)
V "spans?limit=1000&sort=duration_ns&order=desc"; cp "$T/body" "$T/all.json"
jq -e '[.rows[].duration_ns] as $d | $d == ($d | sort | reverse)' "$T/all.json" >/dev/null && pass "spans sorted by duration desc" || fail "duration order"
MAXD=$(jq -s '[.[] | select(.kind == "span_end") | .duration_ns] | max' "$TR")
jq -e --argjson m "$MAXD" '.rows[0].duration_ns == $m' "$T/all.json" >/dev/null && pass "longest span first ($MAXD ns)" || fail "longest span"
: >"$T/pages"
for off in 0 7 14 21 28; do V "spans?limit=7&offset=$off&sort=duration_ns&order=desc"; jq -c '.rows[]' "$T/body" >>"$T/pages"; done
jq -c '.rows[:35][]' "$T/all.json" | cmp -s - "$T/pages" && pass "pages of 7 = the first 35 rows of one page" || fail "paging differs"
V "spans?offset=999999"; jq -e '(.rows | length) == 0 and .offset == 999999' "$T/body" >/dev/null && pass "offset past the end: no rows" || fail "offset past end"
# filters
WANT=$(jq -s '[.[] | select(.kind == "span_start" and (.name | ascii_downcase | contains("layer1")))] | length' "$TR")
V "spans?name=LAYER1&limit=1000"; jq -e --argjson w "$WANT" '.matched == $w and ([.rows[].name | ascii_downcase | contains("layer1")] | all)' "$T/body" >/dev/null \
  && pass "name filter (case-insensitive): $WANT spans" || fail "name filter: want $WANT, $(jq -c .matched "$T/body")"
WANT=$(jq -s '[.[] | select(.kind == "span_start" and .span_kind == "module")] | length' "$TR")
V "spans?kind=module&limit=1"; jq -e --argjson w "$WANT" '.matched == $w and .rows[0].kind == "module"' "$T/body" >/dev/null \
  && pass "kind filter: $WANT modules" || fail "kind filter"
V "spans?name=layer1&kind=module&limit=5&offset=3&sort=name"
jq -e '(.rows | length) <= 5 and ([.rows[] | .kind == "module"] | all)' "$T/body" >/dev/null && pass "filters combine with paging" || fail "combined filter"
# host times are the graph's
get "/bundles/$TOY_ID/graph"; cp "$T/body" "$T/graph.json"
get "/bundles/$TOY_ID/views/spans?limit=1000&sort=id"
jq -e --slurpfile g "$T/graph.json" '[.rows[] | {id, self: .self_ns, total: .total_ns}] == ([$g[0].spans[] | select(.kind != "op" and .kind != "tensor") | {id, self: .host_self_time_ns, total: .host_total_time_ns}] | sort_by(.id))' "$T/body" >/dev/null \
  && pass "span self/total times equal GET /graph" || fail "span times differ from /graph: $(jq -c '.rows[:2]' "$T/body")"

# ---------------------------------------------------------------- ops
V "ops?limit=1000&sort=timestamp_ns"; expect 200 "" "ops page"
NOP=$(jq -c 'select(.kind == "op")' "$TR" | wc -l)
jq -e --argjson n "$NOP" '.total == $n and ([.rows[].timestamp_ns] as $t | $t == ($t | sort))' "$T/body" >/dev/null \
  && pass "ops: $NOP, sorted by timestamp" || fail "ops total/order"
WANT=$(jq -s '[.[] | select(.kind == "op" and .device == "cuda:0")] | length' "$TR")
V "ops?device=cuda:0&limit=1"; jq -e --argjson w "$WANT" '.matched == $w' "$T/body" >/dev/null && pass "ops device filter: $WANT" || fail "ops device filter"

# ---------------------------------------------------------------- span costs
get "/bundles/$TOY_ID/views/costs?limit=500"; expect 200 "" "costs"
jq -e --slurpfile g "$T/graph.json" '([.rows[].count] | add) == ([$g[0].spans[] | select(.kind != "tensor")] | length)' "$T/body" >/dev/null \
  && pass "cost groups cover every span and op node" || fail "cost counts"
jq -e --slurpfile g "$T/graph.json" '.rows[0].total_ns == ([$g[0].spans[] | select(.kind != "tensor")] | group_by([.kind, .name]) | map(map(.host_total_time_ns) | add) | max)' "$T/body" >/dev/null \
  && pass "costs: heaviest (kind, name) by total first" || fail "cost order: $(jq -c '.rows[0]' "$T/body")"
get "/bundles/$TOY_ID/views/costs?sort=self_ns&limit=3"; jq -e '[.rows[].self_ns] as $s | $s == ($s | sort | reverse) and (.rows | length) <= 3' "$T/body" >/dev/null \
  && pass "costs by self time, top 3" || fail "costs by self"
get "/bundles/$TOY_ID/views/costs?q=update"; jq -e '.matched >= 1 and ([.rows[].name | ascii_downcase | contains("update")] | all)' "$T/body" >/dev/null \
  && pass "costs search" || fail "costs search"
grep -q FABRICATED "$T/body" && fail "the edited viewer.html leaked into costs" || pass "the edited viewer.html is not read"

# ---------------------------------------------------------------- memory
get "/bundles/$TOY_ID/views/memory?buckets=3"; expect 200 "" "memory"
PEAK=$(jq '.logical.peak.live_bytes' "$T/body")
jq -e '(.timeline.buckets | length) <= 3 and ([.timeline.buckets[][2]] | max) == .logical.peak.live_bytes and .timeline.points > 0' "$T/body" >/dev/null \
  && pass "memory: 3 buckets keep the peak ($PEAK bytes)" || fail "memory buckets: $(jq -c .timeline "$T/body")"
get "/bundles/$TOY_ID/evidence"; jq -e --argjson p "$PEAK" '.memory.logical.peak.live_bytes == $p' "$T/body" >/dev/null \
  && pass "peak equals the rederived evidence" || fail "peak differs from /evidence"
get "/bundles/$TOY_ID/views/memory?buckets=2000"; jq -e '([.timeline.buckets[][4]] | add) == .timeline.points' "$T/body" >/dev/null \
  && pass "bucket point counts add up" || fail "bucket points"

# ---------------------------------------------------------------- GPU and evidence
V "gpu?table=device_clocks"; expect 200 "" "gpu device clocks"
jq -e '.tables.device_clocks == .total and .total >= 1 and (.rows[0] | has("busy_ns"))' "$T/body" >/dev/null && pass "gpu device clock table" || fail "gpu table: $(head -c 300 "$T/body")"
V "gpu?table=device_spans&limit=2&offset=1"; jq -e '(.rows | length) == 2 and .offset == 1' "$T/body" >/dev/null && pass "gpu table paged" || fail "gpu paging"
get "/bundles/$TOY_ID/views/evidence"; expect 200 "" "evidence view"
get "/bundles/$TOY_ID/evidence"; cp "$T/body" "$T/ev.json"
get "/bundles/$TOY_ID/views/evidence"
jq -e --slurpfile e "$T/ev.json" '.capabilities == $e[0].capabilities and .findings == $e[0].findings and .gaps == $e[0].gaps and .facts == $e[0].facts' "$T/body" >/dev/null \
  && pass "evidence view = the rederived evidence's capabilities/findings/facts/gaps" || fail "evidence view differs"

# ---------------------------------------------------------------- limits and bad parameters
for q in "spans?limit=0" "spans?limit=1001" "spans?offset=-1" "spans?offset=1e3" "spans?offset=99999999999" "spans?sort=bogus" \
         "spans?order=up" "spans?kind=tensor" "spans?step=sideways" "spans?name=%ff" "ops?sort=self_ns" "costs?sort=depth" \
         "memory?buckets=0" "memory?buckets=2001" "memory?start_ns=10&end_ns=5" "gpu?table=bogus" "gpu?limit=5000"; do
  V "$q"; expect 400 invalid_parameter "$q → 400 invalid_parameter" && {
    jq -e '.error.detail.parameter | type == "string"' "$T/body" >/dev/null || fail "$q: no detail.parameter"; }
done
get "/bundles/000000000000/views/spans"; expect 404 not_found "unknown bundle → 404"
get "/bundles/zz/views/spans"; expect 400 invalid_parameter "bad id → 400"
http GET "/bundles/$BIG_ID/views/spans"; expect 401 unauthorized "views need a read token"
V "spans?limit=1000&sort=name"; SZ=$(stat -c %s "$T/body")
[ "$SZ" -lt 5242880 ] && pass "a 1000-row page is $SZ bytes (< 5 MB)" || fail "page of $SZ bytes"
grep -q '"msg":"view index built".*'"$BIG_ID" "$SRV_LOG" && [ "$(grep -c '"msg":"view index built".*'"$BIG_ID" "$SRV_LOG")" = 1 ] \
  && pass "the index was built once for all requests" || fail "index builds: $(grep -c 'view index built' "$SRV_LOG")"

# the index survives a restart (read back from <data_dir>/views) and a damaged
# copy is rebuilt from the trace with the same answers
V "spans?limit=50&sort=self_ns&order=desc"; cp "$T/body" "$T/before.json"
V "memory?buckets=7"; cp "$T/body" "$T/mem_before.json"
restart() { srv_stop; mv "$SRV_LOG" "$SRV_LOG.$1"; srv_start views --require-signature no; }
restart 1
V "spans?limit=50&sort=self_ns&order=desc"; expect 200 "" "spans after restart"
cmp -s "$T/body" "$T/before.json" && pass "same spans page after restart" || fail "spans page changed after restart"
V "memory?buckets=7"; cmp -s "$T/body" "$T/mem_before.json" && pass "same memory answer after restart" || fail "memory changed after restart"
grep -q '"msg":"view index loaded".*'"$BIG_ID" "$SRV_LOG" && pass "view index read back from disk" || fail "view index not read back"
IDX=$SRV_DATA/views/$BIG_ID.idx
[ -f "$IDX" ] || fail "no $IDX"
head -c 5000 "$IDX" >"$IDX.cut" && mv "$IDX.cut" "$IDX"
restart 2
V "spans?limit=50&sort=self_ns&order=desc"; cmp -s "$T/body" "$T/before.json" && pass "damaged index rebuilt to the same answer" || fail "answer changed after rebuild"
grep -q '"msg":"view index built".*'"$BIG_ID" "$SRV_LOG" && pass "damaged index rebuilt from the trace" || fail "damaged index not rebuilt"

srv_stop
[ $FAILS -eq 0 ] || exit 1
