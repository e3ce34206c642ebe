#!/usr/bin/env bash
# candle-graph-server against a real PostgreSQL: every route's success path,
# every API.md error code the server answers (campaign_conflict and ineligible
# belong to the campaign/compare routes of issue 7), the bundle fixture corpus
# (status/code and nothing visible afterwards), idempotent and 20 concurrent
# identical uploads, signatures and keys, admin CLI, public read, the pg blob
# store, fsck, the OpenAPI document against the router, and the upload client.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup

# ---------------------------------------------------------------- bootstrap (offline, before any server)
ADMIN_JSON=$("$SERVER" admin bootstrap --database-url "$DBURL") || die "admin bootstrap failed"
ADMIN=$(jq -r .token <<<"$ADMIN_JSON")
[ "$(jq -c .scopes <<<"$ADMIN_JSON")" = '["admin","upload","read"]' ] && pass "admin bootstrap scopes" || fail "bootstrap scopes: $ADMIN_JSON"

srv_start main --max-body-bytes 3000000 --max-decoded-bytes 8000000

# ---------------------------------------------------------------- ops routes
http GET /healthz; expect 200 "" "GET /healthz"
http GET /readyz; expect 200 "" "GET /readyz"
http GET /openapi.json; expect 200 "" "GET /openapi.json"
jq -e '.openapi == "3.1.0"' "$T/body" >/dev/null || fail "openapi version"
# the OpenAPI document and the router describe the same routes
"$SERVER" routes | sort >"$T/routes.txt"
jq -r '.paths | to_entries[] | .key as $p | .value | keys[] | "\(ascii_upcase) \($p)"' "$T/body" | sort >"$T/openapi.txt"
if diff -u "$T/routes.txt" "$T/openapi.txt" >&2; then pass "openapi.json matches the router"; else fail "openapi.json differs from the router"; fi

# ---------------------------------------------------------------- HTTP-level errors
http GET /nope; expect 404 not_found "unknown path → not_found"
http DELETE /bundles; expect 405 method_not_allowed "wrong method → method_not_allowed"
grep -i '^Allow:' "$T/hdr" | grep -q GET && grep -i '^Allow:' "$T/hdr" | grep -q POST && pass "405 carries Allow" || fail "405 without Allow: $(cat "$T/hdr")"
http GET /bundles; expect 401 unauthorized "no token → unauthorized"
grep -qi '^WWW-Authenticate: Bearer' "$T/hdr" && pass "401 carries WWW-Authenticate" || fail "401 without WWW-Authenticate"
http GET /bundles -H "$(auth cgt_0000000000000000000000000000000000000000000000000000000000000000)"
expect 401 unauthorized "unknown token → unauthorized"
grep -qi '^X-Request-Id: ' "$T/hdr" && pass "request id header" || fail "no X-Request-Id"

# ---------------------------------------------------------------- tokens
http POST /tokens -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d '{"name":"uploader","scopes":["upload","read"]}'
expect 201 "" "POST /tokens"
UP=$(jq -r .token "$T/body")
http POST /tokens -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d '{"name":"reader","scopes":["read"]}'
expect 201 "" "POST /tokens (read only)"
RD=$(jq -r .token "$T/body"); RD_ID=$(jq -r .id "$T/body")
http GET /tokens -H "$(auth "$ADMIN")"; expect 200 "" "GET /tokens"
[ "$(jq '[.items[] | select(has("token") or has("token_hash"))] | length' "$T/body")" = 0 ] && pass "token list hides secrets" || fail "token list leaks secrets"
http GET /tokens -H "$(auth "$RD")"; expect 403 forbidden "read token on admin route → forbidden"
http POST /tokens -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d '{"name":'
expect 400 malformed_json "broken JSON → malformed_json"
http POST /tokens -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d '{"name":"x"}'
expect 400 bad_request "missing scopes → bad_request"
http POST /tokens -H "$(auth "$ADMIN")" -H 'Content-Type: text/plain' -d '{"name":"x","scopes":["read"]}'
expect 415 unsupported_media_type "text/plain JSON body → unsupported_media_type"
head -c 1100000 /dev/zero | tr '\0' ' ' >"$T/big.json"
http POST /tokens -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' --data-binary @"$T/big.json"
expect 413 payload_too_large "oversized JSON body → payload_too_large"

# ---------------------------------------------------------------- keys
"$CLI" keygen --out "$T/k1" >/dev/null 2>&1 || die "candle-graph keygen failed"
"$CLI" keygen --out "$T/k2" >/dev/null 2>&1 || die "candle-graph keygen failed"
"$CLI" keygen --out "$T/k3" >/dev/null 2>&1 || die "candle-graph keygen failed"
http POST /keys -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d "$(jq -n --rawfile k "$T/k1.pub" '{name:"ci", public_key:$k}')"
expect 201 "" "POST /keys (PEM)"
K1=$(jq -r .key_id "$T/body")
http POST /keys -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d "$(jq -n --rawfile k "$T/k3.pub" '{name:"old", public_key:$k}')"
expect 201 "" "POST /keys (second key)"
K3=$(jq -r .key_id "$T/body")
http POST /keys -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d '{"name":"bad","public_key":"bm90IGEga2V5"}'
expect 400 invalid_parameter "bad public key → invalid_parameter"
http GET /keys -H "$(auth "$ADMIN")"; expect 200 "" "GET /keys"
http DELETE "/keys/$K3" -H "$(auth "$ADMIN")"; expect 200 "" "DELETE /keys/{key_id}"
http DELETE /keys/00000000000000000000000000000000 -H "$(auth "$ADMIN")"; expect 404 not_found "revoke unknown key → not_found"

sign() { "$CLI" sign "$1" --key "$2" >/dev/null 2>&1 || die "candle-graph sign $1 failed"; }

# ---------------------------------------------------------------- upload: happy path + idempotence
make_bundle "$T/b1" run-b1
sign "$T/b1" "$T/k1"
pack "$T/b1" "$T/b1.tar"; pack "$T/b1" "$T/b1.tar.zst" z
upload "$T/b1.tar" "$UP"; expect 422 signature_missing "unsigned upload → signature_missing"
[ "$(bundle_count)" = 0 ] && [ "$(blob_count)" = 0 ] && pass "nothing visible after signature_missing" || fail "rejection left rows/blobs"
upload "$T/b1.tar" "$RD" "$T/b1.sig.json"; expect 403 forbidden "read token upload → forbidden"
upload "$T/b1.tar" "$UP" "$T/b1.sig.json"; expect 201 "" "POST /bundles (tar) → 201"
ID1=$(jq -r .id "$T/body")
[ "$ID1" = "$(sha256sum "$T/b1/bundle.json" | cut -d' ' -f1)" ] && pass "id = sha256(bundle.json)" || fail "id mismatch"
jq -e '.schema == "candle-graph/ingest/1" and .status == "published" and .run_id == "run-b1"
       and .verification.schema == "candle-graph/bundle-verification/1" and .semantic.status == "not_rederivable"
       and .signature.verified == true and .health.structurally_valid == true and (.links.self | startswith("/bundles/"))' \
  "$T/body" >/dev/null && pass "ingest/1 receipt fields" || fail "receipt: $BODY"
grep -qi "^Location: /bundles/$ID1" "$T/hdr" && pass "Location header" || fail "no Location"
upload "$T/b1.tar" "$UP" "$T/b1.sig.json"; expect 200 "" "identical re-upload → 200"
jq -e '.status == "already_published"' "$T/body" >/dev/null || fail "re-upload status"
upload "$T/b1.tar.zst" "$UP" "$T/b1.sig.json"; expect 200 "" "same bundle as tar.zst → 200"
http POST /bundles -H "$(auth "$UP")" -H 'Content-Type: application/x-tar' -H 'Content-Encoding: zstd' \
  -H "Candle-Graph-Signature: $(base64 -w0 "$T/b1.sig.json")" --data-binary @"$T/b1.tar.zst"
expect 200 "" "Content-Encoding: zstd → 200"
[ "$(bundle_count)" = 1 ] && pass "one row after re-uploads" || fail "rows: $(bundle_count)"

# ---------------------------------------------------------------- upload errors
http POST /bundles -H "$(auth "$UP")" -H 'Content-Type: text/plain' --data-binary @"$T/b1.tar"
expect 415 unsupported_media_type "text/plain upload → unsupported_media_type"
head -c 5000 /dev/urandom >"$T/junk.tar"
upload "$T/junk.tar" "$UP"; expect 400 malformed_archive "random bytes → malformed_archive"
head -c 3500000 /dev/urandom >"$T/huge.tar"
upload "$T/huge.tar" "$UP"; expect 413 payload_too_large "Content-Length over the cap → payload_too_large"
mkdir -p "$T/bomb"; make_bundle "$T/bomb" run-bomb; head -c 20000000 /dev/zero >"$T/bomb/nsight_zero.bin"; manifest "$T/bomb" run-bomb
pack "$T/bomb" "$T/bomb.tar.zst" z
upload "$T/bomb.tar.zst" "$UP"; expect 413 payload_too_large "zstd bomb → payload_too_large"
http POST /bundles -H "$(auth "$UP")" -H 'Content-Type: application/x-tar' -H 'Candle-Graph-Signature: !!!' --data-binary @"$T/b1.tar"
expect 400 malformed_signature "bad base64 signature → malformed_signature"

make_bundle "$T/b2" run-b2; sign "$T/b2" "$T/k2"; pack "$T/b2" "$T/b2.tar"
upload "$T/b2.tar" "$UP" "$T/b2.sig.json"; expect 403 signer_unknown "unregistered key → signer_unknown"
sign "$T/b2" "$T/k3"
upload "$T/b2.tar" "$UP" "$T/b2.sig.json"; expect 403 signer_revoked "revoked key → signer_revoked"
upload "$T/b2.tar" "$UP" "$T/b1.sig.json"; expect 422 signature_invalid "signature of another bundle → signature_invalid"

cp -r "$T/b1" "$T/b1x"; printf 'changed\n' >>"$T/b1x/report.md"; manifest "$T/b1x" run-b1; sign "$T/b1x" "$T/k1"; pack "$T/b1x" "$T/b1x.tar"
upload "$T/b1x.tar" "$UP" "$T/b1x.sig.json"; expect 409 run_id_conflict "different bundle, same run_id → run_id_conflict"
make_bundle "$T/b3" run-b3; manifest "$T/b3" run-other; sign "$T/b3" "$T/k1"; pack "$T/b3" "$T/b3.tar"
upload "$T/b3.tar" "$UP" "$T/b3.sig.json"; expect 422 run_id_mismatch "manifest/trace run_id differ → run_id_mismatch"
make_bundle "$T/b4" run-b4; printf '{"kind":"meta"}\nnot json\n' >"$T/b4/trace.jsonl"; manifest "$T/b4" run-b4; pack "$T/b4" "$T/b4.tar"
upload "$T/b4.tar" "$UP"; expect 422 trace_invalid "unparsable trace → trace_invalid"
make_bundle "$T/b5" run-b5; printf '{\n  "schema": "candle-graph/evidence/4",\n  "x": 1\n}\n' >"$T/b5/evidence.json"; manifest "$T/b5" run-b5; pack "$T/b5" "$T/b5.tar"
upload "$T/b5.tar" "$UP"; expect 422 semantic_mismatch "wrong evidence/4 → semantic_mismatch"
jq -e '.error.detail == {"path": "evidence.json", "member": "x"} and (.error.message | endswith("(first difference at `x`)"))' \
  "$T/body" >/dev/null && pass "semantic_mismatch names the first differing member" || fail "semantic_mismatch answer: $(cat "$T/body")"
[ "$(bundle_count)" = 1 ] && pass "no rows after rejections" || fail "rows after rejections: $(bundle_count)"

# ---------------------------------------------------------------- fixture corpus
FIX=$SRC/tests/fixtures/bundles
code_for() {
  case "$1" in
    bad_fifo|bad_symlink|bad_manifest_symlink) echo special_file; return ;;
    good_empty) echo trace_invalid; return ;;
    good_*) echo trace_invalid; return ;;
  esac
  case "$(cat "$FIX/$1/expected_check.txt")" in
    MANIFEST_UNREADABLE|MANIFEST_PARSE) echo malformed_manifest ;;
    SCHEMA) echo unsupported_bundle_schema ;;
    UNSAFE_PATH) echo unsafe_path ;; DUPLICATE_PATH) echo duplicate_path ;;
    INVALID_DIGEST) echo invalid_digest ;; SPECIAL_FILE|NOT_REGULAR) echo special_file ;;
    UNDECLARED_FILE) echo undeclared_file ;; MISSING_FILE) echo missing_file ;;
    SIZE_MISMATCH) echo size_mismatch ;; DIGEST_MISMATCH) echo digest_mismatch ;;
    *) echo unknown ;;
  esac
}
rows0=$(bundle_count); blobs0=$(blob_count)
for c in "$FIX"/bad_* "$FIX"/good_*; do
  name=$(basename "$c"); [ -d "$c/bundle" ] || continue
  rm -rf "$T/fx"; cp -a "$c/bundle" "$T/fx"
  if [ -f "$c/setup.txt" ]; then
    while read -r op a b; do
      case "$op" in
        fifo) mkdir -p "$T/fx/$(dirname "$a")"; mkfifo "$T/fx/$a" ;;
        symlink) mkdir -p "$T/fx/$(dirname "$a")"; ln -sfn "$b" "$T/fx/$a" ;;
        mkdir) mkdir -p "$T/fx/$a" ;; rm) rm -rf "${T:?}/fx/$a" ;;
      esac
    done <"$c/setup.txt"
  fi
  files=$(cd "$T/fx" && find . \( -type f -o -type l -o -type p \) | sed 's|^\./||' | LC_ALL=C sort)
  (cd "$T/fx" && tar --format=pax -cf - $files) >"$T/fx.tar"
  want=$(code_for "$name")
  upload "$T/fx.tar" "$UP"
  wstatus=422; [ "$want" = malformed_manifest ] && wstatus=400
  expect $wstatus "$want" "fixture $name → $want" || true
  grep -q "$T" "$T/body" && fail "fixture $name: message leaks a server path"
  [ "$(jq -r .error.message "$T/body")" != null ] || fail "fixture $name: no message"
done
[ "$(bundle_count)" = "$rows0" ] && [ "$(blob_count)" = "$blobs0" ] && pass "fixture rejections left no rows or blobs" \
  || fail "fixture rejections changed rows/blobs"
ls "$SRV_DATA/staging" | grep -q . && fail "staging not cleaned" || pass "staging cleaned"
ls "$SRV_DATA/tmp" | grep -q . && fail "upload temp files not cleaned" || pass "upload temp files cleaned"

# ---------------------------------------------------------------- 20 concurrent identical uploads
make_bundle "$T/c" run-concurrent; sign "$T/c" "$T/k1"; pack "$T/c" "$T/c.tar.zst" z
SIGB64=$(base64 -w0 "$T/c.sig.json")
for i in $(seq 1 20); do
  curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "$(auth "$UP")" -H 'Content-Type: application/zstd' \
    -H "Candle-Graph-Signature: $SIGB64" --data-binary @"$T/c.tar.zst" "$URL/bundles" >"$T/conc.$i" &
  PIDS="${PIDS:-} $!"
done
wait $PIDS
n201=$(cat "$T"/conc.* | grep -c '^201$'); n200=$(cat "$T"/conc.* | grep -c '^200$')
[ "$n201" = 1 ] && [ "$n200" = 19 ] && pass "20 concurrent identical uploads: one 201, nineteen 200" \
  || fail "concurrent uploads: 201×$n201 200×$n200 ($(cat "$T"/conc.* | sort | uniq -c | tr '\n' ' '))"
[ "$(psqlc "SELECT count(*) FROM bundles WHERE run_id = 'run-concurrent'")" = 1 ] && pass "one row for the concurrent bundle" || fail "concurrent rows"

# ---------------------------------------------------------------- read routes
http GET /bundles -H "$(auth "$RD")"; expect 200 "" "GET /bundles"
[ "$(jq '.items | length' "$T/body")" = 2 ] && [ "$(jq -r '.items[0].run_id' "$T/body")" = run-concurrent ] \
  && pass "list newest first" || fail "list: $BODY"
http GET "/bundles?limit=1" -H "$(auth "$RD")"; expect 200 "" "GET /bundles?limit=1"
CUR=$(jq -r .next_cursor "$T/body")
http GET "/bundles?limit=1&cursor=$CUR" -H "$(auth "$RD")"; expect 200 "" "GET /bundles page 2"
[ "$(jq -r '.items[0].id' "$T/body")" = "$ID1" ] && [ "$(jq -r .next_cursor "$T/body")" = null ] && pass "keyset pagination" || fail "page 2: $BODY"
http GET "/bundles?entrypoint=toy::train::update&tag=host:ci-1&capture_step=3&phase=train&workload_id=toy-train&signer=$K1&since=2000-01-01T00:00:00Z" -H "$(auth "$RD")"
expect 200 "" "GET /bundles with filters"
[ "$(jq '.items | length' "$T/body")" = 2 ] && pass "filters match" || fail "filters: $BODY"
http GET "/bundles?tag=host:elsewhere" -H "$(auth "$RD")"
[ "$(jq '.items | length' "$T/body")" = 0 ] && pass "tag filter excludes" || fail "tag filter: $BODY"
http GET "/bundles?limit=900" -H "$(auth "$RD")"; expect 400 invalid_parameter "limit > 500 → invalid_parameter"
http GET "/bundles?since=yesterday-ish" -H "$(auth "$RD")"; expect 400 invalid_parameter "bad since → invalid_parameter"
http GET "/bundles/${ID1:0:12}" -H "$(auth "$RD")"; expect 200 "" "GET /bundles/{12-char prefix}"
jq -e --arg id "$ID1" '.id == $id and .run_id == "run-b1" and .manifest.schema == "candle-graph/bundle/1"
  and .provenance.run_id == "run-b1" and .identity.workload_id == "toy-train" and .signature.key_id != null
  and .host == "ci-1" and (.files | length) == 4 and .health.structurally_valid == true' "$T/body" >/dev/null \
  && pass "bundle summary fields" || fail "summary: $BODY"
http GET /bundles/xyz -H "$(auth "$RD")"; expect 400 invalid_parameter "non-hex id → invalid_parameter"
http GET /bundles/000000000000000000000000 -H "$(auth "$RD")"; expect 404 not_found "unknown id → not_found"
http GET "/bundles/$ID1/manifest" -H "$(auth "$RD")"; expect 200 "" "GET /manifest"
cmp -s "$T/body" "$T/b1/bundle.json" && pass "manifest bytes exact" || fail "manifest bytes differ"
http GET "/bundles/$ID1/files/trace.jsonl" -H "$(auth "$RD")"; expect 200 "" "GET /files/trace.jsonl"
cmp -s "$T/body" "$T/b1/trace.jsonl" && pass "file bytes exact" || fail "file bytes differ"
TSHA=$(sha256sum "$T/b1/trace.jsonl" | cut -d' ' -f1)
grep -qi "^ETag: \"$TSHA\"" "$T/hdr" && grep -qi '^Cache-Control: .*immutable' "$T/hdr" && pass "ETag + immutable" || fail "ETag/cache headers: $(cat "$T/hdr")"
http GET "/bundles/$ID1/files/trace.jsonl" -H "$(auth "$RD")" -H "If-None-Match: \"$TSHA\""; expect 304 "" "If-None-Match → 304"
http GET "/bundles/$ID1/files/trace.jsonl" -H "$(auth "$RD")" -H 'Range: bytes=0-9'; expect 206 "" "Range → 206"
[ "$BODY" = "$(head -c 10 "$T/b1/trace.jsonl")" ] && grep -qi '^Content-Range: bytes 0-9/' "$T/hdr" && pass "range bytes" || fail "range body"
http GET "/bundles/$ID1/files/nope.txt" -H "$(auth "$RD")"; expect 404 not_found "unknown file → not_found"
http GET "/bundles/$ID1/signature" -H "$(auth "$RD")"; expect 200 "" "GET /signature"
jq -e --arg k "$K1" '.schema == "candle-graph/signature/1" and .key_id == $k' "$T/body" >/dev/null && pass "signature JSON" || fail "signature: $BODY"
http GET "/bundles/$ID1/archive" -H "$(auth "$RD")"; expect 200 "" "GET /archive"
mkdir -p "$T/unpacked"; zstd -q -d -c "$T/body" | tar -x -C "$T/unpacked" && pass "archive unpacks" || fail "archive does not unpack"
for f in bundle.json trace.jsonl evidence.json report.md; do cmp -s "$T/unpacked/$f" "$T/b1/$f" || fail "archive $f differs"; done
"$CLI" verify "$T/unpacked" >/dev/null 2>&1 && pass "downloaded archive verifies with candle-graph verify" || fail "candle-graph verify rejects the archive"
http GET "/bundles/$ID1/evidence" -H "$(auth "$RD")"; expect 200 "" "GET /evidence (rebuilt for not_rederivable)"
jq -e '.schema == "candle-graph/evidence/4"' "$T/body" >/dev/null && pass "evidence/4" || fail "evidence: $(head -c 300 "$T/body")"
cp "$T/body" "$T/evidence4.json"
http GET "/bundles/$ID1/graph" -H "$(auth "$RD")"; expect 200 "" "GET /graph"
jq -e '.schema == "candle-graph/graph/5"' "$T/body" >/dev/null && pass "graph/5" || fail "graph: $(head -c 300 "$T/body")"
http GET "/bundles/$ID1/viewer" -H "$(auth "$RD")"; expect 200 "" "GET /viewer"
grep -qi '^Content-Type: text/html' "$T/hdr" && pass "viewer is HTML" || fail "viewer content type"

# a bundle published by `candle-graph report` (evidence/4, report.md, viewer.html) → rederived_match
mkdir -p "$T/rt"; make_bundle "$T/rt" run-r1 ci-2
"$CLI" report "$T/rt/trace.jsonl" --bundle "$T/r1" >/dev/null 2>"$T/report.err" || die "candle-graph report failed: $(cat "$T/report.err")"
sign "$T/r1" "$T/k1"; pack "$T/r1" "$T/r1.tar.zst" z
upload "$T/r1.tar.zst" "$UP" "$T/r1.sig.json"; expect 201 "" "report-published bundle → 201"
jq -e '.semantic.status == "rederived_match" and .semantic.evidence_schema == "candle-graph/evidence/4"' "$T/body" >/dev/null \
  && pass "semantic rederived_match" || fail "semantic: $BODY"
ID4=$(jq -r .id "$T/body")
http GET "/bundles/$ID4/evidence" -H "$(auth "$RD")"; expect 200 "" "GET /evidence (stored)"
cmp -s "$T/body" "$T/r1/evidence.json" && pass "stored evidence bytes" || fail "stored evidence differs"
http GET "/bundles/$ID4/viewer" -H "$(auth "$RD")"; expect 200 "" "GET /viewer (stored)"
cmp -s "$T/body" "$T/r1/viewer.html" && pass "stored viewer bytes" || fail "stored viewer differs"
grep -qi '^Content-Security-Policy:' "$T/hdr" && pass "viewer has a CSP" || fail "viewer without CSP"
http GET "/bundles/$ID4/archive" -H "$(auth "$RD")"; expect 200 "" "GET /archive (report bundle)"
mkdir -p "$T/r1dl"; zstd -q -d -c "$T/body" | tar -x -C "$T/r1dl"
"$CLI" verify "$T/r1dl" --semantic >"$T/r1v.json" 2>"$T/r1v.err" && jq -e '.semantic.status == "rederived_match"' "$T/r1v.json" >/dev/null \
  && pass "downloaded archive verifies with candle-graph verify --semantic" || fail "verify --semantic: $(cat "$T/r1v.err")"
"$CLI" unpack "$T/body" --into "$T/r1dl2" >/dev/null 2>&1 && pass "candle-graph unpack accepts the archive" || fail "candle-graph unpack rejects the archive"

# ---------------------------------------------------------------- derived index + campaign link
# (PUT /campaigns lands with issue 7; the campaign rows are seeded directly here)
psqlc "INSERT INTO campaigns (campaign_id, manifest, manifest_sha256) VALUES ('camp1', '{}', repeat('0', 64));
       INSERT INTO campaign_captures (campaign_id, name, position, planned) VALUES ('camp1', 'step-3', 0, '{}')" >/dev/null
make_bundle "$T/cp" run-camp; sign "$T/cp" "$T/k1"; pack "$T/cp" "$T/cp.tar"
http POST "/bundles?campaign=camp1&planned=nope" -H "$(auth "$UP")" -H 'Content-Type: application/x-tar' \
  -H "Candle-Graph-Signature: $(base64 -w0 "$T/cp.sig.json")" --data-binary @"$T/cp.tar"
expect 404 not_found "unknown planned capture → not_found"
http POST "/bundles?campaign=camp1&planned=step-3" -H "$(auth "$UP")" -H 'Content-Type: application/x-tar' --data-binary @"$T/cp.tar"
expect 422 signature_missing "campaign upload without signature → signature_missing"
http POST "/bundles?campaign=camp1&planned=step-3" -H "$(auth "$UP")" -H 'Content-Type: application/x-tar' \
  -H "Candle-Graph-Signature: $(base64 -w0 "$T/cp.sig.json")" --data-binary @"$T/cp.tar"
expect 201 "" "campaign upload → 201"
[ "$(psqlc "SELECT state || ':' || coalesce(code, '-') FROM upload_attempts WHERE campaign_id = 'camp1' ORDER BY id" | tr '\n' ' ')" \
  = "verification_failed:signature_missing published:- " ] && pass "upload attempts recorded (failed, then published)" || fail "upload attempts"
ROW=$(psqlc "SELECT campaign_id, planned_name, host, device, phase, workload_id, physical_batch, measured_ns IS NOT NULL,
             measured_span_count, structurally_valid, outcome, measurement_scope FROM bundles WHERE run_id = 'run-camp'")
[ "$ROW" = "camp1|step-3|ci-1|cuda:0|train|toy-train|8|t|1|t|complete|profiled_work" ] && pass "derived index row" || fail "index row: $ROW"
[ "$(psqlc "SELECT count(*) FROM bundle_tensor_stats s JOIN bundles b ON b.seq = s.bundle_seq WHERE b.run_id = 'run-camp'")" -ge 1 ] \
  && pass "tensor-stat sums indexed" || fail "no tensor-stat rows"
# the sums per label (streamed by COPY): a label seen twice sums both records, a label
# with a tab and a backslash is stored as written
make_bundle "$T/st" run-stats
awk 'NR == 7 { print; print "{\"kind\":\"tensor_stats\",\"span_id\":\"s3\",\"label\":\"toy/hidden\",\"shape\":[8,8],\"dtype\":\"f32\",\"elements\":64,\"non_finite\":3,\"rms\":0.5,\"abs_max\":1,\"mean\":0.25}";
  print "{\"kind\":\"tensor_stats\",\"span_id\":\"s3\",\"label\":\"a\\tb\\\\c\",\"shape\":[4294967296,4294967295],\"dtype\":\"f32\",\"elements\":18446744069414584320,\"non_finite\":0,\"rms\":1e300,\"abs_max\":0.125,\"mean\":-0.5}"; next } { print }' \
  "$T/st/trace.jsonl" >"$T/st.jsonl" && mv "$T/st.jsonl" "$T/st/trace.jsonl"
manifest "$T/st" run-stats; sign "$T/st" "$T/k1"; pack "$T/st" "$T/st.tar"
upload "$T/st.tar" "$UP" "$T/st.sig.json"; expect 201 "" "upload with repeated and escaped tensor-stat labels"
STATS=$(psqlc "SELECT string_agg(format('%s|%s|%s|%s|%s|%s|%s', replace(replace(label, E'\t', '<TAB>'), E'\\\\', '<BS>'), samples,
                 abs(sum_rms - CASE WHEN samples = 2 THEN 1.21 ELSE 1e300 END) < 1e-9 * greatest(abs(sum_rms), 1),
                 sum_abs_max, sum_mean, sum_elements, sum_non_finite), ' ' ORDER BY label COLLATE \"C\")
               FROM bundle_tensor_stats s JOIN bundles b ON b.seq = s.bundle_seq WHERE b.run_id = 'run-stats'")
[ "$STATS" = "a<TAB>b<BS>c|1|t|0.125|-0.5|18446744069414584320|0 toy/hidden|2|t|3.5|0.27|192|3" ] \
  && pass "tensor-stat sums per label, label escapes and u64 sums exact ($STATS)" || fail "tensor-stat rows: $STATS"
http GET "/bundles?campaign=camp1" -H "$(auth "$RD")"
[ "$(jq -r '.items[0].campaign.planned' "$T/body")" = step-3 ] && pass "campaign filter and link" || fail "campaign list: $BODY"

# ---------------------------------------------------------------- revocation, admin CLI
http DELETE "/tokens/$RD_ID" -H "$(auth "$ADMIN")"; expect 200 "" "DELETE /tokens/{id}"
http GET /bundles -H "$(auth "$RD")"; expect 401 unauthorized "revoked token → unauthorized"
CLI_TOK=$("$SERVER" admin token create --name cli --scopes read --database-url "$DBURL" | jq -r .token)
http GET /bundles -H "$(auth "$CLI_TOK")"; expect 200 "" "admin token create (CLI) works while the server runs"
"$SERVER" admin token list --database-url "$DBURL" | jq -e '.items | length >= 4' >/dev/null && pass "admin token list" || fail "admin token list"
KID2=$("$SERVER" admin key add --name k2 --public-key "$T/k2.pub" --database-url "$DBURL" | jq -r .key_id)
sign "$T/b2" "$T/k2"
upload "$T/b2.tar" "$UP" "$T/b2.sig.json"; expect 201 "" "key registered by admin CLI → 201"
"$SERVER" admin key revoke "$KID2" --database-url "$DBURL" >/dev/null && pass "admin key revoke" || fail "admin key revoke"
"$SERVER" admin key list --database-url "$DBURL" | jq -e --arg k "$KID2" '.items[] | select(.key_id == $k) | .revoked_at != null' >/dev/null \
  && pass "admin key list shows revocation" || fail "admin key list"
http GET "/bundles/$(jq -r .id "$T/body")" -H "$(auth "$UP")"
jq -e '.signature.signer_revoked == true' "$T/body" >/dev/null && pass "revoked signer's bundle stays readable and is marked" || fail "revoked mark: $BODY"

# ---------------------------------------------------------------- metrics
http GET /metrics; expect 200 "" "GET /metrics"
grep -q '^cg_http_requests_total{method="POST",route="/bundles",status="201"}' "$T/body" && grep -q '^cg_ingest_outcomes_total{code="signature_missing"}' "$T/body" \
  && grep -q '^cg_ingest_duration_seconds_bucket' "$T/body" && grep -q '^cg_db_pool_connections' "$T/body" && grep -q '^cg_blob_store_bytes' "$T/body" \
  && pass "metrics content" || fail "metrics: $(head -c 600 "$T/body")"
# time per ingest stage: every stage of the pipeline, counted once per successful upload
STAGES="unpack bundle gate semantic views signature blobs facts commit timeline"
OKS=$(grep -c '"msg":"bundle \(already \)\{0,1\}published"' "$SRV_LOG")
[ "$(grep -c '^cg_ingest_stage_seconds_total{stage="[a-z]*"} [0-9.]*$' "$T/body")" = 10 ] \
  && [ "$(sed -n 's/^cg_ingest_stage_seconds_total{stage="\([a-z]*\)"}.*/\1/p' "$T/body" | tr '\n' ' ')" = "$STAGES " ] \
  && [ "$(sed -n 's/^cg_ingest_staged_total //p' "$T/body")" = "$OKS" ] && [ "$OKS" -ge 2 ] \
  && [ "$(sed -n 's/^process_resident_memory_bytes //p' "$T/body")" -gt 0 ] \
  && [ "$(sed -n 's/^cg_process_peak_resident_memory_bytes //p' "$T/body")" -gt 0 ] \
  && pass "ingest stage seconds for $OKS successful uploads; resident and peak memory" \
  || fail "stage metrics: $(grep -E '^(cg_ingest_stage|cg_ingest_staged|process_resident|cg_process_peak)' "$T/body")"
# each successful upload logs its stages: times that add up to at most its total, resident memory after each
grep '"msg":"ingest stages"' "$SRV_LOG" | jq -s -e --arg s "$STAGES" --argjson n "$OKS" 'length == $n and all(.[];
    (.stages_ms | keys_unsorted) == ($s | split(" ")) and (.rss_mib | keys_unsorted) == ($s | split(" "))
    and (.peak_mib | keys_unsorted) == ($s | split(" "))
    and ([.stages_ms[]] | all(. >= 0)) and ([.stages_ms[]] | add) <= .total_ms + 0.5
    and .rss_mib.semantic > 0 and .peak_mib.unpack > 0
    and ([.peak_mib[]] as $p | all(range(1; $p | length); $p[.] >= $p[. - 1] - 1))
    and (.id | length) == 64)' >/dev/null \
  && pass "every successful upload logs its stage times, resident memory and the peak so far (not falling, to within the kernel's 1 MiB of lazy RSS accounting)" \
  || fail "ingest stages log: $(grep '"msg":"ingest stages"' "$SRV_LOG" | head -2)"
grep -q "$ADMIN" "$SRV_LOG" && fail "a token appears in the log" || pass "no token in the log"
grep '"msg":"request"' "$SRV_LOG" | head -1 | jq -e '.request_id and .status' >/dev/null && pass "structured request log" || fail "request log format"

# ---------------------------------------------------------------- upload client
if "$CLI" help 2>/dev/null | grep -q '^  upload '; then
  make_bundle "$T/u1" run-u1; sign "$T/u1" "$T/k1"
  "$CLI" upload "$T/u1" --server "$URL" --token "$UP" >"$T/u1.out" 2>"$T/u1.err" && jq -e '.status == "published"' "$T/u1.out" >/dev/null \
    && pass "candle-graph upload → published" || fail "candle-graph upload: $(cat "$T/u1.err")"
  "$CLI" upload "$T/u1" --server "$URL" --token "$UP" >"$T/u1.out" 2>"$T/u1.err" && jq -e '.status == "already_published"' "$T/u1.out" >/dev/null \
    && pass "candle-graph upload again → already_published" || fail "candle-graph upload again: $(cat "$T/u1.err")"
  make_bundle "$T/u3" run-u3
  "$CLI" upload "$T/u3" --server "$URL" --token "$UP" --key "$T/k1" >"$T/u3.out" 2>"$T/u3.err" \
    && jq -e --arg k "$K1" '.status == "published" and .signature.key_id == $k' "$T/u3.out" >/dev/null \
    && pass "candle-graph upload --key signs on the fly" || fail "upload --key: $(cat "$T/u3.err")"
  make_bundle "$T/u2" run-u2
  if "$CLI" upload "$T/u2" --server "$URL" --token "$UP" >"$T/u2.out" 2>"$T/u2.err"; then fail "unsigned upload succeeded"
  else grep -q signature_missing "$T/u2.err" && pass "candle-graph upload prints the error envelope" || fail "upload stderr: $(cat "$T/u2.err")"; fi
else
  fail "candle-graph upload command missing"
fi

# ---------------------------------------------------------------- fsck
FS=$("$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL") && jq -e '.clean and (.damaged | length) == 0' <<<"$FS" >/dev/null \
  && pass "fsck clean" || fail "fsck: $FS"
VICTIM=$(find "$SRV_DATA/blobs/sha256" -type f | head -1); cp "$VICTIM" "$T/victim"; chmod u+w "$VICTIM"; printf X >>"$VICTIM"
if "$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL" >"$T/fsck.json"; then fail "fsck missed a damaged blob"
else jq -e '.damaged | length == 1' "$T/fsck.json" >/dev/null && pass "fsck reports damage" || fail "fsck damage report: $(cat "$T/fsck.json")"; fi
cp "$T/victim" "$VICTIM"

# ---------------------------------------------------------------- second server: public read, 429, 507
srv_stop
srv_start public --public-read --max-uploads 1 --upload-wait-ms 0 --require-signature no
http GET /bundles; expect 200 "" "--public-read: GET /bundles without token"
head -c 400000 /dev/urandom >"$T/slow.tar"
curl -s -o /dev/null --limit-rate 100k -X POST -H "$(auth "$UP")" -H 'Content-Type: application/x-tar' --data-binary @"$T/slow.tar" "$URL/bundles" &
SLOW=$!
sleep 1
# issue 13 finding 4: the ingest slot is taken when a body is complete, so a slow
# sender holds none and this upload is served while it is still sending
upload "$T/b1.tar" "$UP"; expect 200 "" "--require-signature no accepts the unsigned re-upload of a known bundle (while a slow upload is still sending)"
wait $SLOW
srv_stop
srv_start noslots --public-read --max-uploads 0 --require-signature no
upload "$T/b1.tar" "$UP"; expect 429 too_many_requests "no free ingest slot → too_many_requests"
grep -qi '^Retry-After:' "$T/hdr" && pass "429 carries Retry-After" || fail "429 without Retry-After"
srv_stop
srv_start full --min-free-bytes 999999999999999999
upload "$T/b1.tar" "$UP" "$T/b1.sig.json"; expect 507 insufficient_storage "below the free-space watermark → insufficient_storage"
srv_stop

# ---------------------------------------------------------------- pg blob store (separate database)
psqlc "CREATE DATABASE blobpg" >/dev/null
DBURL_MAIN=$DBURL; DBURL="host=$PGSOCK dbname=blobpg user=cgtest"
TOKP=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token)
srv_start pgstore --blob-store pg --require-signature no
upload "$T/b1.tar.zst" "$TOKP"; expect 201 "" "pg blob store: upload → 201"
IDP=$(jq -r .id "$T/body")
http GET "/bundles/$IDP/files/trace.jsonl" -H "$(auth "$TOKP")"; expect 200 "" "pg blob store: GET file"
cmp -s "$T/body" "$T/b1/trace.jsonl" && pass "pg blob bytes exact" || fail "pg blob bytes differ"
http GET "/bundles/$IDP/archive" -H "$(auth "$TOKP")"; expect 200 "" "pg blob store: GET archive"
[ "$(blob_count)" = 0 ] && pass "pg blob store writes no fs blobs" || fail "pg store wrote fs blobs"
srv_stop
"$SERVER" fsck --data-dir "$SRV_DATA" --blob-store pg --database-url "$DBURL" | jq -e '.clean and .blobs_checked == 4' >/dev/null \
  && pass "fsck (pg store) clean" || fail "fsck pg store"
DBURL=$DBURL_MAIN

# schema_version is the highest migration number (numbers need not be dense: 0010_history.sql)
MIG_TOP=$(ls "$SRC"/migrations/ | sed -n 's/^\([0-9][0-9][0-9][0-9]\)_.*\.sql$/\1/p' | sort | tail -1)
"$SERVER" migrate --database-url "$DBURL" | jq -e --argjson v "$((10#$MIG_TOP))" '.schema_version == $v' >/dev/null && pass "migrate (idempotent)" || fail "migrate"

# ---------------------------------------------------------------- deleting a bundle row
# the bulk fact tables have no row-level foreign key (0013): a trigger on
# bundles deletes their rows, as ON DELETE CASCADE did, and no other bundle's
# (the rows name their bundle by bundles.seq since 0014: counted by seq, which
# outlives the row)
fact_rows() { # SEQ → "paths totals tensor_stats"
  psqlc "SELECT (SELECT count(*) FROM bundle_span_paths WHERE bundle_seq = $1) || ' ' ||
                (SELECT count(*) FROM bundle_span_totals WHERE bundle_seq = $1) || ' ' ||
                (SELECT count(*) FROM bundle_tensor_stats WHERE bundle_seq = $1)"
}
GONE=$(psqlc "SELECT seq FROM bundles WHERE run_id = 'run-camp'")
KEPT=$(psqlc "SELECT seq FROM bundles WHERE seq <> $GONE AND seq IN (SELECT bundle_seq FROM bundle_span_paths) LIMIT 1")
BEFORE=$(fact_rows "$GONE") KEPT_BEFORE=$(fact_rows "$KEPT")
psqlc "DELETE FROM bundles WHERE seq = $GONE" >/dev/null || fail "DELETE of a bundles row failed"
read -r p t s <<<"$BEFORE"
[ "$p" -ge 1 ] && [ "$t" -ge 1 ] && [ "$s" -ge 1 ] && [ "$(fact_rows "$GONE")" = "0 0 0" ] \
  && [ "$(fact_rows "$KEPT")" = "$KEPT_BEFORE" ] \
  && pass "deleting a bundles row deletes its span paths, totals and tensor stats ($BEFORE rows) and no other bundle's" \
  || fail "fact rows after deleting $GONE: $(fact_rows "$GONE") (before: $BEFORE); other bundle $KEPT_BEFORE → $(fact_rows "$KEPT")"
[ "$(psqlc "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid IN
            ('bundle_span_paths'::regclass, 'bundle_span_totals'::regclass, 'bundle_tensor_stats'::regclass)")" = 0 ] \
  && pass "bulk fact tables carry no per-row foreign key check" || fail "a bulk fact table still has a foreign key"

# ---------------------------------------------------------------- schema newer than the binary
psqlc "INSERT INTO schema_migrations (version, name, sha256) VALUES (9999, '9999_future.sql', 'x')" >/dev/null
if "$SERVER" serve --data-dir "$T/refuse" --listen 127.0.0.1:0 --database-url "$DBURL" >"$T/refuse.log" 2>&1; then
  fail "server started on a newer schema"
else grep -q 'newer than this candle-graph-server' "$T/refuse.log" && pass "refuses a newer schema" || fail "refusal message: $(cat "$T/refuse.log")"; fi

[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all server API checks passed"
