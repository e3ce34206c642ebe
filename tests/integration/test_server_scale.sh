#!/usr/bin/env bash
# candle-graph-server against issue 13's data-side attacks, over loopback with
# a real PostgreSQL. Memory is measured as the server's peak RSS (VmHWM of
# /proc/<pid>/status) and must stay under a generous bound linear in the trace
# (never a timing assertion):
#   1. deep span chains: ingest, /compare/spans, /graph, /evidence, /viewer
#   5. campaign lists with many planned captures (cap, paging, pool not held)
#   6. derived views read trace.jsonl from the blob store: no staging copies
#   8. u64 fields ≥ 2^63 stored exactly, long names, no 5xx for input errors
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup

TOK=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "bootstrap failed"
H=$(auth "$TOK")

hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$SRV_PID/status"; }
# under_bound LABEL BASE_KB BYTES FACTOR: peak RSS ≤ base + 64 MiB + FACTOR × BYTES
under_bound() {
  local label=$1 base=$2 bytes=$3 factor=$4 now limit
  now=$(hwm_kb)
  limit=$((base + 65536 + factor * bytes / 1024))
  if [ "$now" -le "$limit" ]; then pass "$label: peak RSS ${now} kB ≤ ${limit} kB"
  else fail "$label: peak RSS ${now} kB > ${limit} kB (linear bound: $factor × $bytes trace bytes)"; fi
}

META=$(head -1 "$SRC/tests/fixtures/reader/illustrative.jsonl" | sed 's/"required_semantic_labels":\["[^"]*"\]/"required_semantic_labels":[]/')
# deep_trace OUT RUN DEPTH OPS [NAME]: spans s1…sDEPTH form one chain (s1 is
# the measured root), OPS ops with distinct names hang off the chain, all
# spans are open while the ops run.
deep_trace() {
  local out=$1 run=$2 depth=$3 ops=$4 name=${5:-n}
  printf '%s\n' "$META" | sed "s/run-4242-1/$run/" >"$out"
  awk -v D="$depth" -v N="$ops" -v NM="$name" 'BEGIN {
    for (i = 1; i <= D; i++) {
      if (i == 1) printf "{\"kind\":\"span_start\",\"id\":\"s%d\",\"name\":\"%s\",\"start_ns\":%d,\"span_kind\":\"function\",\"measured\":true}\n", i, NM, i
      else printf "{\"kind\":\"span_start\",\"id\":\"s%d\",\"parent_id\":\"s%d\",\"name\":\"%s\",\"start_ns\":%d,\"span_kind\":\"function\",\"measured\":false}\n", i, i - 1, NM, i
    }
    for (k = 0; k < N; k++)
      printf "{\"kind\":\"op\",\"span_id\":\"s%d\",\"op_name\":\"o%d\",\"inputs\":[],\"output\":\"TensorId(%d)\",\"shape\":[1],\"dtype\":\"f32\",\"device\":\"cuda:0\",\"duration_ns\":1,\"timestamp_ns\":%d,\"output_dense_bytes\":4,\"input_dense_bytes\":0}\n", D - (k % D), int(k / D), k, D + 1 + k
    E = D + N + 10
    for (i = D; i >= 1; i--) printf "{\"kind\":\"span_end\",\"id\":\"s%d\",\"duration_ns\":%d}\n", i, E + (D - i) - i
    printf "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":%d}\n", E + D
  }' >>"$out"
}
# trace_bundle DIR RUN: bundle/1 around DIR/trace.jsonl (evidence/3: not rederivable)
trace_bundle() {
  printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$1/evidence.json"
  manifest "$1" "$2"
  pack "$1" "$1.tar.zst" zstd
}

# ================================================================ 1. deep span chains
srv_start one --require-signature no
BASE=$(hwm_kb)
mkdir -p "$T/deep"
deep_trace "$T/deep/trace.jsonl" deep-1 20000 2000
TB=$(stat -c %s "$T/deep/trace.jsonl")
trace_bundle "$T/deep" deep-1
note "deep chain: 20,000 spans, 2,000 ops, trace $TB bytes, upload $(stat -c %s "$T/deep.tar.zst") bytes"
upload "$T/deep.tar.zst" "$TOK"; expect 201 "" "upload of a 20,000-deep span chain"
DEEP=$(jq -r .id "$T/body"); DEEP_SEQ=$(seq_of "$DEEP")
under_bound "ingest of the deep chain" "$BASE" "$TB" 12
rows=$(psqlc "SELECT (SELECT count(*) FROM bundle_span_paths WHERE bundle_seq = $DEEP_SEQ) + (SELECT count(*) FROM bundle_span_totals WHERE bundle_seq = $DEEP_SEQ)")
bytes=$(psqlc "SELECT (SELECT coalesce(sum(octet_length(name)), 0) FROM bundle_span_paths WHERE bundle_seq = $DEEP_SEQ)")
[ "$rows" -le $((2 * (20000 + 2000 + 1))) ] && [ "$bytes" -le "$TB" ] \
  && pass "span paths stored linearly ($rows rows, $bytes name bytes)" || fail "span path rows $rows, bytes $bytes"
# a stored path is found by the SHA-256 of its text
deepest=$(awk 'BEGIN { s = "n"; for (i = 2; i <= 20000; i++) s = s "/n"; printf "%s", s }')
[ "$(psqlc "SELECT t.total_ns FROM bundle_span_totals t WHERE t.bundle_seq = $DEEP_SEQ AND t.kind = 'span' AND t.path_hash = sha256(convert_to('$deepest', 'UTF8'))")" != "" ] \
  && pass "the deepest span path is keyed by the SHA-256 of its text" || fail "deepest span path not found by hash"
http GET "/compare/spans?a=$DEEP&b=$DEEP" -H "$H"; expect 413 payload_too_large "span diff whose path text would be quadratic: 413"
[ "$(jq -r .error.detail.limit "$T/body")" = span_diff_path_bytes ] && pass "the 413 names its limit" || fail "413 detail: $BODY"
under_bound "/compare/spans of the deep chain" "$BASE" "$TB" 12
for v in graph evidence viewer timeline; do
  http GET "/bundles/$DEEP/$v" -H "$H"; expect 200 "" "/$v of the deep chain"
done
under_bound "/graph, /evidence, /viewer, /timeline of the deep chain" "$BASE" "$TB" 100

# a moderate chain diffs with exact path texts (two runs, so rows not only_*)
for i in 1 2; do
  mkdir -p "$T/mid$i"; deep_trace "$T/mid$i/trace.jsonl" "mid-$i" 300 600; trace_bundle "$T/mid$i" "mid-$i"
  upload "$T/mid$i.tar.zst" "$TOK"; expect 201 "" "upload of a 300-deep chain ($i)"
  MID[$i]=$(jq -r .id "$T/body")
done
http GET "/compare/spans?a=${MID[1]}&b=${MID[2]}" -H "$H"; expect 200 "" "span diff of two 300-deep chains"
jq -e '(.rows | length) == 900 and .only_a == [] and .only_b == []
       and ([.rows[] | select(.kind == "span") | .path | length] | max) == 599
       and ([.rows[] | select(.kind == "op") | .path] | index("n/n/o1")) != null' "$T/body" >/dev/null \
  && pass "span diff rebuilds every path text (300 spans + 600 ops)" || fail "span diff rows: $(head -c 400 "$T/body")"

# ================================================================ 8. names too long for a btree
mkdir -p "$T/long"
deep_trace "$T/long/trace.jsonl" long-1 3 3 "$(head -c 3000 /dev/urandom | base64 -w0 | tr -d '/+' | head -c 2800)" # incompressible
trace_bundle "$T/long" long-1
upload "$T/long.tar.zst" "$TOK"; expect 201 "" "a 2,800-character span name is stored (paths are keyed by hash)"

# ================================================================ 8. u64 values ≥ 2^63 are stored exactly
BIG=18446744073709551615 HALF=9223372036854775808
mkdir -p "$T/u64"
deep_trace "$T/u64/trace.jsonl" u64-1 2 1
sed -i -e "1s/\"capture_step\":3/\"capture_step\":$HALF/" -e "1s/\"warmup_steps\":2/\"warmup_steps\":$BIG/" \
  -e "1s/\"physical_batch\":8/\"physical_batch\":$BIG/" -e "1s/\"accumulation_steps\":1/\"accumulation_steps\":$HALF/" \
  -e "s/{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":[0-9]*}/{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":$HALF}/" \
  -e "s/{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":[0-9]*}/{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":$BIG}/" \
  "$T/u64/trace.jsonl"
trace_bundle "$T/u64" u64-1
upload "$T/u64.tar.zst" "$TOK"; expect 201 "" "capture_step 2^63, warmup_steps and physical_batch 2^64-1, a 2^63 ns measured span"
U64=$(jq -r .id "$T/body")
http GET "/bundles/$U64" -H "$H"; expect 200 "" "summary of the u64 bundle"
# (grep, not jq: jq reads numbers as doubles)
grep -Eq "\"capture_step\": ?$HALF[,}]" "$T/body" && grep -Eq "\"wall_ns\": ?$HALF[,}]" "$T/body" \
  && pass "u64 values read back exactly" || fail "u64 read back: $(grep -Eo '"(capture_step|wall_ns)": ?[0-9]+' "$T/body" | tr '\n' ' ')"
[ "$(psqlc "SELECT capture_step || '/' || warmup_steps || '/' || physical_batch || '/' || accumulation_steps || '/' || measured_ns FROM bundles WHERE id = '$U64'")" = "$HALF/$BIG/$BIG/$HALF/$HALF" ] \
  && pass "u64 columns hold the exact values" || fail "u64 columns: $(psqlc "SELECT capture_step, warmup_steps, physical_batch, measured_ns FROM bundles WHERE id = '$U64'")"
http GET "/bundles?capture_step=$HALF" -H "$H"; expect 200 "" "filter capture_step=2^63"
[ "$(jq -r '.items[0].id' "$T/body")" = "$U64" ] && pass "the 2^63 capture step filters exactly" || fail "filter: $BODY"

# an indexed text too long for a btree: 413 naming the field, nothing stored
mkdir -p "$T/tag"
deep_trace "$T/tag/trace.jsonl" tag-1 2 1
sed -i "1s/\"tags\":{/\"tags\":{\"long\":\"$(head -c 3000 /dev/zero | tr '\0' v)\",/" "$T/tag/trace.jsonl"
trace_bundle "$T/tag" tag-1
blobs=$(blob_count)
upload "$T/tag.tar.zst" "$TOK"; expect 413 payload_too_large "a 3,000-byte tag value: 413"
[ "$(jq -r '.error.detail.field' "$T/body")" = tags ] && pass "the 413 names the field" || fail "detail: $BODY"
[ "$(blob_count)" = "$blobs" ] && pass "the refused upload left no blob" || fail "blobs $blobs → $(blob_count)"

# ================================================================ 6. derived views read blobs, never copies
make_bundle "$T/big" big-1
head -c $((64 << 20)) /dev/urandom >"$T/big/report.md"   # an incompressible 64 MiB file
manifest "$T/big" big-1; pack "$T/big" "$T/big.tar"
upload "$T/big.tar" "$TOK"; expect 201 "" "upload of a bundle holding a 64 MiB file"
BIGID=$(jq -r .id "$T/body")
BEFORE_KB=$(du -sk "$SRV_DATA" | cut -f1)
PIDS=""
for i in $(seq 1 12); do
  curl -s -o "$T/g$i.json" -w '%{http_code}' -H "$H" "$URL/bundles/$BIGID/graph" >"$T/g$i.code" &
  PIDS="$PIDS $!"
done
for i in 1 2 3 4; do
  curl -s -o "$T/a$i.tar.zst" -w '%{http_code}' -H "$H" "$URL/bundles/$BIGID/archive" >"$T/a$i.code" &
  PIDS="$PIDS $!"
done
# disk in use under the data dir (du counts a hard-linked blob once), sampled during the reads
peak=0
while kill -0 $PIDS 2>/dev/null; do
  kb=$(du -sk "$SRV_DATA" 2>/dev/null | cut -f1); [ "${kb:-0}" -gt $peak ] && peak=$kb
  sleep 0.05
done
wait $PIDS
[ "$(for f in "$T"/g*.code "$T"/a*.code; do cat "$f"; echo; done | sort -u | tr -d '\n')" = 200 ] \
  && pass "12 concurrent /graph and 4 /archive reads: all 200" \
  || fail "concurrent derived reads: $(cat "$T"/g*.code "$T"/a*.code | tr '\n' ' ')"
grow=$((peak - BEFORE_KB))
[ "$grow" -lt $(( (64 << 10) * 2 )) ] && pass "the reads added ${grow} kB on disk (one archive, no bundle copies)" \
  || fail "the reads added ${grow} kB on disk (copies of the 64 MiB bundle)"
for i in $(seq 2 12); do cmp -s "$T/g1.json" "$T/g$i.json" || fail "graph answer $i differs"; done
derived_kb=$(du -ck "$SRV_DATA/derived/$BIGID".* | tail -1 | cut -f1)
[ -f "$SRV_DATA/derived/$BIGID.archive" ] && [ -f "$SRV_DATA/derived/$BIGID.graph" ] && [ "$derived_kb" -lt $(( (64 << 10) * 3 / 2 )) ] && pass "one archive and one graph built for all the readers (${derived_kb} kB)" \
  || fail "derived views hold ${derived_kb} kB"
mkdir -p "$T/a1"; zstd -q -d -c "$T/a1.tar.zst" | tar -xf - -C "$T/a1"
"$CLI" verify "$T/a1" >/dev/null 2>&1 && cmp -s "$T/a1/report.md" "$T/big/report.md" \
  && pass "the archive built from blobs verifies and holds the file byte for byte" || fail "archive from blobs does not verify"

# ================================================================ 5. campaign lists with many planned captures
campaign_json() { # ID N
  awk -v id="$1" -v n="$2" 'BEGIN { printf "{\"schema\":\"candle-graph/campaign/1\",\"campaign_id\":\"%s\",\"entrypoint\":\"toy::train::update\",\"planned\":[", id
    for (i = 0; i < n; i++) printf "%s{\"capture_step\":%d,\"bundle\":\"cap-%06d\"}", i ? "," : "", i, i
    printf "]}\n" }'
}
campaign_json too-big 10001 >"$T/c-big.json"
http PUT /campaigns/too-big -H "$H" -H 'Content-Type: application/json' --data-binary @"$T/c-big.json"
expect 413 payload_too_large "a campaign of 10,001 planned captures: 413"
[ "$(jq -r .error.detail.limit "$T/body")" = planned_captures ] && pass "the 413 names planned_captures" || fail "detail: $BODY"
for i in 1 2 3 4 5; do
  campaign_json "wide-$i" 10000 >"$T/c$i.json"
  http PUT "/campaigns/wide-$i" -H "$H" -H 'Content-Type: application/json' --data-binary @"$T/c$i.json"
  expect 201 "" "campaign wide-$i of 10,000 planned captures"
done
# the list is paged
http GET "/campaigns?limit=2" -H "$H"; expect 200 "" "GET /campaigns?limit=2"
[ "$(jq -c '[.items[].campaign_id, .next_cursor]' "$T/body")" = '["wide-1","wide-2","wide-2"]' ] \
  && pass "first page and its cursor" || fail "page 1: $(jq -c '[.items[].campaign_id, .next_cursor]' "$T/body")"
http GET "/campaigns?limit=2&cursor=wide-4" -H "$H"; expect 200 "" "GET /campaigns last page"
[ "$(jq -c '[.items[].campaign_id, .next_cursor]' "$T/body")" = '["wide-5",null]' ] \
  && pass "last page ends the list" || fail "last page: $(jq -c '[.items[].campaign_id, .next_cursor]' "$T/body")"
[ "$(jq -c '.items[0].counts' "$T/body")" = '{"planned":10000,"published":0,"missing":10000,"failed":0}' ] \
  && pass "counts of a 10,000-capture campaign" || fail "counts: $(jq -c '.items[0].counts' "$T/body")"
# ten concurrent lists never leave /readyz or GET /bundles without a connection
PIDS=""
for i in $(seq 1 10); do curl -s -o /dev/null -w '%{http_code}\n' -H "$H" "$URL/campaigns" >"$T/l$i.code" & PIDS="$PIDS $!"; done
bad=""
for k in $(seq 1 6); do
  http GET /readyz; [ "$CODE" = 200 ] || bad="$bad readyz:$CODE"
  http GET "/bundles?limit=1" -H "$H"; [ "$CODE" = 200 ] || bad="$bad bundles:$CODE"
done
wait $PIDS
[ -z "$bad" ] && pass "/readyz and GET /bundles answered 200 during 10 concurrent campaign lists" || fail "during the lists:$bad"
[ "$(sort -u "$T"/l*.code | tr -d '\n')" = 200 ] && pass "the 10 lists answered 200" || fail "lists: $(cat "$T"/l*.code | tr '\n' ' ')"

srv_stop
exit $FAILS
