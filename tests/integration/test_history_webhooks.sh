#!/usr/bin/env bash
# Issue 15 webhooks against a real PostgreSQL and candle-graph-server: a
# loopback receiver that fails its first answers gets every alert event
# (alert.opened from a planted shift, alert.updated from triage) exactly once
# per event id with a valid HMAC-SHA256 signature, across a server restart in
# the middle of the retries (the outbox lives in PostgreSQL); every attempt of
# one event carries the same body; a dead receiver keeps its deliveries
# pending with the error logged; admin scope, validation, delete.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
. "${CG_SOURCE_DIR:-.}/tests/support/history_lib.sh"
srv_setup
command -v python3 >/dev/null || die "missing python3"
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start main --require-signature no
H=$(auth "$ADMIN")
http POST /tokens -H "$H" -H 'Content-Type: application/json' -d '{"name":"ci","scopes":["upload","read"]}'
UP=$(jq -r .token "$T/body")
W=$T/work; mkdir -p "$W"

python3 "$SRC/tests/support/webhook_receiver.py" "$T/port" "$T/received.jsonl" s3cret 3 &
RECV_PID=$!
trap 'rc=$?; kill $RECV_PID 2>/dev/null; (exit $rc); srv_cleanup' EXIT
for i in $(seq 1 100); do [ -s "$T/port" ] && break; sleep 0.05; done
RPORT=$(cat "$T/port")

# ---------------------------------------------------------------- registration
http POST /webhooks -H "$(auth "$UP")" -H 'Content-Type: application/json' -d '{"url":"http://127.0.0.1:1/","secret":"x","events":["alert.opened"]}'
expect 403 forbidden "POST /webhooks needs admin"
http POST /webhooks -H "$H" -H 'Content-Type: application/json' -d '{"url":"ftp://x/","secret":"x","events":["alert.opened"]}'
expect 400 invalid_parameter "non-http URL refused"
http POST /webhooks -H "$H" -H 'Content-Type: application/json' -d '{"url":"http://127.0.0.1:1/","secret":"x","events":["bundle.created"]}'
expect 400 invalid_parameter "unknown event refused"
http POST /webhooks -H "$H" -H 'Content-Type: application/json' \
  -d "{\"url\":\"http://127.0.0.1:$RPORT/hook\",\"secret\":\"s3cret\",\"events\":[\"alert.opened\",\"alert.updated\"]}"
expect 201 "" "POST /webhooks"; WH=$(jq -r .id "$T/body")
# a receiver that never answers (nothing listens on that port)
DEADPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
http POST /webhooks -H "$H" -H 'Content-Type: application/json' \
  -d "{\"url\":\"http://127.0.0.1:$DEADPORT/\",\"secret\":\"dead\",\"events\":[\"alert.opened\"]}"
expect 201 "" "POST /webhooks (dead receiver)"; DEAD=$(jq -r .id "$T/body")
http GET /webhooks -H "$H"; expect 200 "" "GET /webhooks"
jq -e 'all(.items[]; has("secret") | not) and (.items | length) == 2' "$T/body" >/dev/null && pass "list without secrets" || fail "list: $BODY"

# ---------------------------------------------------------------- a planted shift → alert.opened
for n in $(seq 1 12); do
  level=1000000; [ "$n" -ge 6 ] && level=1200000
  for i in 1 2 3 4 5; do
    d=$W/c$n-$i
    hist_bundle "$d" "run-w-$n-$i" "$(hist_sha "w$n")" main "$(hist_time "$n")" $((level + level * $(hist_noise "w$n$i") / 1000)) hist-w
    hist_upload_dir "$d" "$ADMIN" || true
    [ "$CODE" = 201 ] || fail "upload $n/$i: $CODE"
  done
done
[ "$(psqlc "SELECT count(*) FROM alerts")" = 1 ] && pass "one alert opened" || fail "alerts: $(psqlc "SELECT count(*) FROM alerts")"
# wait for the first failed attempt, then restart the server mid-retries
for i in $(seq 1 100); do [ -s "$T/received.jsonl" ] && break; sleep 0.1; done
srv_stop
[ "$(jq -s '[.[] | select(.status == 200)] | length' "$T/received.jsonl")" = 0 ] && pass "nothing accepted before the restart" || note "accepted before restart"
srv_start main --require-signature no
AID=$(psqlc "SELECT id FROM alerts LIMIT 1")
http PATCH "/alerts/$AID" -H "$(auth "$UP")" -H 'Content-Type: application/json' -d '{"state":"resolved","note":"reverted"}'
expect 200 "" "triage → alert.updated"

accepted() { jq -s '[.[] | select(.status == 200)] | length' "$T/received.jsonl" 2>/dev/null || echo 0; }
for i in $(seq 1 300); do [ "$(accepted)" -ge 2 ] && break; sleep 0.1; done
sleep 2 # any duplicate would arrive now
R=$T/received.jsonl
[ "$(accepted)" = 2 ] && pass "two events accepted" || fail "accepted: $(accepted)"
[ "$(jq -s '[.[] | select(.status == 200) | .event_id] | unique | length' "$R")" = 2 ] && pass "exactly once per event id" || fail "duplicates: $(jq -c '[.event_id, .status]' "$R")"
jq -s -e 'all(.[]; .hmac_valid)' "$R" >/dev/null && pass "every attempt has a valid HMAC-SHA256 signature" || fail "HMAC"
jq -s -e 'group_by(.event_id) | all(.[]; (map(.body_sha256) | unique | length) == 1)' "$R" >/dev/null \
  && pass "the same event id always carries the same body" || fail "bodies differ"
jq -s -e '[.[] | select(.status == 200) | .body.type] | sort == ["alert.opened", "alert.updated"]' "$R" >/dev/null \
  && pass "event types" || fail "types: $(jq -c .body.type "$R")"
jq -s -e --arg a "$AID" '.[] | select(.status == 200 and .body.type == "alert.updated") | .body.alert.state == "resolved"
      and (.body.alert.id | tostring) == $a and .body.id == .event_id and (.body.created_at | test("Z$"))' "$R" >/dev/null \
  && pass "event body {id, type, created_at, alert}" || fail "body: $(tail -1 "$R")"
[ "$(jq -s 'length' "$R")" -ge 4 ] && pass "failed answers were retried ($(jq -s length "$R") POSTs)" || fail "retries: $(jq -s length "$R")"

http GET "/webhooks/$WH/deliveries" -H "$H"; expect 200 "" "GET /webhooks/{id}/deliveries"
jq -e 'all(.items[]; .state == "delivered" and .last_status == 200) and (.items | length) == 2 and
       (.items | map(.attempts) | add) == (3 + 2)' "$T/body" >/dev/null && pass "delivery log: delivered, attempts counted" || fail "log: $BODY"
http GET "/webhooks/$DEAD/deliveries" -H "$H"
jq -e '(.items | length) == 1 and .items[0].state == "pending" and .items[0].attempts >= 1 and .items[0].last_error != null' \
  "$T/body" >/dev/null && pass "dead receiver: pending with the error logged" || fail "dead log: $BODY"
http GET "/webhooks/wh_nope/deliveries" -H "$H"; expect 404 not_found "unknown webhook deliveries"
http DELETE "/webhooks/$DEAD" -H "$H"; expect 200 "" "DELETE /webhooks/{id}"
http DELETE "/webhooks/$DEAD" -H "$H"; expect 404 not_found "DELETE twice → not_found"
http GET /webhooks -H "$H"
[ "$(jq '.items | length' "$T/body")" = 1 ] && pass "deleted webhook no longer listed" || fail "after delete: $BODY"

srv_stop
exit $((FAILS > 0))
