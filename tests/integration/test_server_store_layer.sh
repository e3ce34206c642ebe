#!/usr/bin/env bash
# The store layer (issue 13): server/store_*.c own every SQL statement, and no
# handler holds a pooled connection while it computes.
# 1. Structural: no SQL text in any other server/*.c file — none is exempt,
#    not the offline commands (migrate.c, pgembed.c), the pool and its fault
#    driver, nor the blob store, whose statements are store_schema.c's,
#    store_session.c's and store_blobs.c's — and no handler takes a pooled
#    connection itself (srv_pool_get only in the store, pool.c and the
#    janitor). The check is run on a planted copy too, so it is known to bite.
# 2. Behaviour: against a real PostgreSQL, every read and write route of the
#    moved paths runs (bundles, files, derived views, campaigns, compare,
#    series, timeline, tokens, keys, ingest accepted and refused), then
#    /metrics must report cg_db_pool_held_at_reply_total 0 — the server counts
#    each answer queued while the request's thread still holds a connection.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"

# ---------------------------------------------------------------- 1. structure
SQL_RE='"[^"]*\<(SELECT|INSERT INTO|UPDATE [a-z_]+ (d )?SET|DELETE FROM|CREATE (TABLE|DATABASE|INDEX)|ALTER TABLE|DROP (TABLE|INDEX)|BEGIN|COMMIT|ROLLBACK)\>'
# sql_outside DIR: prints "file:line:text" for SQL text in DIR/*.c outside store_*.c
sql_outside() {
  local f
  for f in "$1"/*.c; do
    case "$(basename "$f")" in store_*.c) continue ;; esac
    grep -nE "$SQL_RE" "$f" | grep -vE '^[0-9]+:\s*(/?\*|//)' | sed "s|^|$(basename "$f"):|" || true
  done
}
hits=$(sql_outside "$SRC/server")
[ -z "$hits" ] && pass "no SQL outside server/store_*.c (no file exempt)" || { fail "SQL outside server/store_*.c:"; printf '%s\n' "$hits" >&2; }
store_stmts=0
for f in "$SRC"/server/store_*.c; do
  store_stmts=$((store_stmts + $(grep -cE '^static const char SQL_[A-Z0-9_]+\[\]' "$f")))
done
[ "$store_stmts" -ge 50 ] && pass "store modules name $store_stmts statements (static const char SQL_*[])" \
  || fail "only $store_stmts named statements in server/store_*.c"
# the check bites: a copy of server/ with one statement planted in a driver file
PLANT=$(mktemp -d --tmpdir cgstore.XXXXXX)
cp "$SRC"/server/*.c "$PLANT"/
printf '%s\n' 'static void f(PGconn *c) { PQclear(PQexec(c, "ROLLBACK")); }' >>"$PLANT/pool.c"
planted=$(sql_outside "$PLANT"); rm -rf "$PLANT"
[ "$(printf '%s\n' "$planted" | grep -c '^pool.c:')" = 1 ] && pass "a statement planted in pool.c is caught" \
  || fail "planted statement not caught: ${planted:-nothing}"
# handlers never take a pooled connection themselves
takers=$(grep -lE 'srv_pool_get\(' "$SRC"/server/*.c | xargs -n1 basename | grep -vE '^(store_.*|pool|janitor)\.c$' || true)
[ -z "$takers" ] && pass "no handler calls srv_pool_get (only the store and background jobs)" \
  || fail "srv_pool_get outside the store: $takers"
# the probe itself must catch an inline statement
probe='static void f(PGconn *c) { srv_q(c, "SELECT 1 FROM bundles", 0, 0, 0, 0, 0); }'
grep -qE "$SQL_RE" <<<"$probe" && pass "the SQL pattern catches an inline statement" || fail "SQL pattern misses an inline statement"

# ---------------------------------------------------------------- 2. behaviour
srv_setup
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start main --require-signature no
H=$(auth "$ADMIN")
for i in 1 2 3 4; do make_bundle "$T/b$i" "run-store-$i" "host-$i"; pack "$T/b$i" "$T/b$i.tar"; done
cat >"$T/camp.json" <<'JSON'
{"schema": "candle-graph/campaign/1", "campaign_id": "storecamp", "entrypoint": "toy::train::update",
 "planned": [{"capture_step": 3, "bundle": "p1"}, {"capture_step": 4, "bundle": "p2"}]}
JSON
http PUT /campaigns/storecamp -H "$H" -H 'Content-Type: application/json' --data-binary @"$T/camp.json"
expect 201 "" "PUT /campaigns/storecamp"
upload "$T/b1.tar" "$ADMIN" "" ; expect 201 "" "upload b1"
upload "$T/b2.tar" "$ADMIN" "" ; expect 201 "" "upload b2"
http POST "/bundles?campaign=storecamp&planned=p1" -H "$H" -H 'Content-Type: application/x-tar' --data-binary @"$T/b3.tar"
expect 201 "" "upload b3 for a planned capture"
upload "$T/b1.tar" "$ADMIN" ""; expect 200 "" "identical re-upload → 200"
make_bundle "$T/c1" run-store-1; printf 'other\n' >>"$T/c1/report.md"; manifest "$T/c1" run-store-1; pack "$T/c1" "$T/c1.tar"
upload "$T/c1.tar" "$ADMIN" ""; expect 409 run_id_conflict "same run_id, other bytes → 409"
cp -r "$T/b4" "$T/b4bad"; printf 'x' >>"$T/b4bad/report.md"; pack "$T/b4bad" "$T/b4bad.tar"
http POST "/bundles?campaign=storecamp&planned=p2" -H "$H" -H 'Content-Type: application/x-tar' --data-binary @"$T/b4bad.tar"
expect 422 "" "a damaged bundle for a planned capture → 422"
http POST "/bundles?campaign=storecamp&planned=nope" -H "$H" -H 'Content-Type: application/x-tar' --data-binary @"$T/b4.tar"
expect 404 not_found "an unknown planned capture → 404"
ID1=$(sha256sum "$T/b1/bundle.json" | cut -d' ' -f1); ID2=$(sha256sum "$T/b2/bundle.json" | cut -d' ' -f1)

http GET "/bundles?limit=2" -H "$H"; expect 200 "" "GET /bundles page 1"
CUR=$(jq -r .next_cursor "$T/body")
http GET "/bundles?limit=2&cursor=$CUR" -H "$H"; expect 200 "" "GET /bundles page 2"
[ "$(jq '.items | length' "$T/body")" = 1 ] && pass "three bundles over two pages" || fail "page 2: $BODY"
http GET "/bundles?host=x&campaign=storecamp" -H "$H"; expect 200 "" "GET /bundles filtered by campaign"
[ "$(jq -r '.items[0].run_id' "$T/body")" = run-store-3 ] && pass "campaign filter selects b3" || fail "campaign filter: $BODY"
http GET "/bundles?since=yesterday-ish" -H "$H"; expect 400 invalid_parameter "bad since → 400 naming it"
[ "$(jq -r .error.detail.parameter "$T/body")" = since ] && pass "class-22 error names the parameter" || fail "detail: $BODY"
for p in "" /manifest /files/trace.jsonl /evidence /graph /viewer /archive "/export?format=chrome" /timeline; do
  http GET "/bundles/${ID1:0:16}$p" -H "$H"; expect 200 "" "GET /bundles/{id}$p"
done
http GET "/bundles/$ID1/signature" -H "$H"; expect 404 not_found "unsigned bundle has no signature"
http GET "/bundles/$ID1/files/none" -H "$H"; expect 404 not_found "unknown file → 404"
http GET /bundles/0123456789abcdef -H "$H"; expect 404 not_found "unknown bundle → 404"
http GET /campaigns -H "$H"; expect 200 "" "GET /campaigns"
http GET /campaigns/storecamp/status -H "$H"; expect 200 "" "GET /campaigns/{id}/status"
[ "$(jq -c '[.captures[] | .state.state]' "$T/body")" = '["published","verification_failed"]' ] \
  && pass "status: published and verification_failed from the store's rows" || fail "status: $(jq -c . "$T/body")"
http GET "/series?bundles=$ID1" -H "$H"; expect 200 "" "GET /series"
http GET "/series?bundles=$ID1,$ID2" -H "$H"; expect 400 invalid_parameter "two bundles at one capture step → ambiguous series"
http GET "/compare?a=$ID1&b=$ID2" -H "$H"; expect 200 "" "GET /compare"
http GET "/compare/spans?a=$ID1&b=$ID2" -H "$H"; expect 200 "" "GET /compare/spans"
http GET "/compare?a=implementation:none&b=$ID2" -H "$H"; expect 404 not_found "empty selector cohort → 404"
http GET /tokens -H "$H"; expect 200 "" "GET /tokens"
http GET /keys -H "$H"; expect 200 "" "GET /keys"
http POST /webhooks -H "$H" -H 'Content-Type: application/json' -d '{"url":"http://127.0.0.1:9/hook","secret":"s3cret-s3cret","events":["alert.opened"]}'
expect 201 "" "POST /webhooks"
WH=$(jq -r .id "$T/body")
http GET /webhooks -H "$H"; expect 200 "" "GET /webhooks"
http GET "/webhooks/$WH/deliveries" -H "$H"; expect 200 "" "GET /webhooks/{id}/deliveries"
http GET /webhooks/wh_none/deliveries -H "$H"; expect 404 not_found "deliveries of an unknown webhook → 404"
http DELETE "/webhooks/$WH" -H "$H"; expect 200 "" "DELETE /webhooks/{id}"
http DELETE "/webhooks/$WH" -H "$H"; expect 404 not_found "second DELETE → 404"
http GET "/alerts?state=open&workload_id=w&branch=main&metric=outer_wall_time_ns&limit=5" -H "$H"
expect 200 "" "GET /alerts with every filter"
http PATCH /alerts/999 -H "$H" -H 'Content-Type: application/json' -d '{"state":"resolved"}'
expect 404 not_found "PATCH an unknown alert → 404"
http GET /readyz; expect 200 "" "GET /readyz"

http GET /metrics; expect 200 "" "GET /metrics"
held=$(awk '$1 == "cg_db_pool_held_at_reply_total" {print $2}' "$T/body")
in_use=$(awk '$1 == "cg_db_pool_in_use" {print $2}' "$T/body")
[ "$held" = 0 ] && pass "no answer was queued while a pooled connection was held (cg_db_pool_held_at_reply_total 0)" \
  || fail "answers queued while holding a connection: ${held:-missing}"
[ "$in_use" = 0 ] && pass "every connection went back (cg_db_pool_in_use 0)" || fail "cg_db_pool_in_use ${in_use:-missing}"
srv_stop
[ $FAILS = 0 ] || exit 1
echo "store layer: $store_stmts named statements; structure and behaviour checks passed"
