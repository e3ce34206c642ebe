#!/usr/bin/env bash
# GET /bundles/{id}/export?format=chrome against the real server and PostgreSQL:
# the answer is byte for byte what `candle-graph export BUNDLE --format chrome`
# writes for the same bundle (built from the stored trace, never from an uploaded
# file), a second request is served from the derived-view cache with the same
# bytes, and bad requests are precise 4xx answers.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start main --require-signature no

"$CLI" report "$SRC/tests/fixtures/trace/empty_gradient_event_id/trace.jsonl" --bundle "$T/b" >/dev/null || die "report"
pack "$T/b" "$T/b.tar"
upload "$T/b.tar" "$ADMIN"
expect 201 "" "upload a published bundle" || die "upload: $BODY"
ID=$(jq -r .id "$T/body")

"$CLI" export "$T/b" --format chrome -o "$T/cli.json" || die "cli export"
http GET "/bundles/$ID/export?format=chrome" -H "$(auth "$ADMIN")"
expect 200 "" "GET /export?format=chrome"
cmp -s "$T/body" "$T/cli.json" && pass "same bytes as candle-graph export" || fail "server export differs from the CLI's"
grep -qi '^Content-Type: application/json' "$T/hdr" && pass "JSON content type" || fail "content type: $(cat "$T/hdr")"
jq -e '.traceEvents | map(select(.ph == "X")) | length > 0' "$T/body" >/dev/null && pass "complete events present" || fail "no events"
cp "$T/body" "$T/first.json"
http GET "/bundles/${ID:0:16}/export?format=chrome" -H "$(auth "$ADMIN")"
expect 200 "" "GET /export by id prefix (cached)"
cmp -s "$T/body" "$T/first.json" && pass "cached answer is the same bytes" || fail "cached export differs"

http GET "/bundles/$ID/export?format=pprof" -H "$(auth "$ADMIN")"; expect 400 invalid_parameter "unknown format"
http GET "/bundles/$ID/export" -H "$(auth "$ADMIN")"; expect 400 invalid_parameter "missing format"
http GET "/bundles/$ID/export?format=chrome"; expect 401 unauthorized "export needs a read token"
http GET "/bundles/0000000000000000000000000000000000000000000000000000000000000000/export?format=chrome" -H "$(auth "$ADMIN")"
expect 404 not_found "unknown bundle"

srv_stop
[ "$FAILS" = 0 ] || exit 1
echo "server_export: all checks passed"
