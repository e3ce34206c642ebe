#!/usr/bin/env bash
# candle-graph-server under faults: PostgreSQL stopped mid-run (503 unavailable,
# readyz 503, recovery without a server restart), kill -9 during uploads (every
# 201 bundle retrievable byte for byte after restart, fsck clean), the janitor
# collecting orphans and stale temp files after its grace period, and graceful
# SIGTERM finishing an in-flight upload.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup

TOK=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "bootstrap failed"
srv_start main --require-signature no --pool-size 4

# ---------------------------------------------------------------- database outage
make_bundle "$T/a" run-a; pack "$T/a" "$T/a.tar"
upload "$T/a.tar" "$TOK"; expect 201 "" "upload before the outage"
pg_down fast
http GET /readyz; expect 503 unavailable "readyz while PostgreSQL is down"
grep -qi '^Retry-After:' "$T/hdr" && pass "503 carries Retry-After" || fail "503 without Retry-After"
http GET /healthz; expect 200 "" "healthz while PostgreSQL is down"
make_bundle "$T/b" run-b; pack "$T/b" "$T/b.tar"
upload "$T/b.tar" "$TOK"; expect 503 unavailable "upload while PostgreSQL is down"
http GET /bundles -H "$(auth "$TOK")"; expect 503 unavailable "read while PostgreSQL is down"
pg_up
ok=""
for i in $(seq 1 50); do http GET /readyz; [ "$CODE" = 200 ] && { ok=1; break; }; sleep 0.1; done
[ -n "$ok" ] && pass "readyz recovers by itself" || fail "readyz did not recover"
upload "$T/b.tar" "$TOK"; expect 201 "" "upload after PostgreSQL returned (no server restart)"
http GET /bundles -H "$(auth "$TOK")"; expect 200 "" "read after PostgreSQL returned"
[ "$(jq '.items | length' "$T/body")" = 2 ] && pass "both bundles listed" || fail "list after recovery: $BODY"

# ---------------------------------------------------------------- the upload client retries through an outage
make_bundle "$T/r" run-retry
pg_down fast
"$CLI" upload "$T/r" --server "$URL" --token "$TOK" --retries 10 >"$T/r.out" 2>"$T/r.err" &
UPID=$!
sleep 1.5
pg_up
if wait $UPID && jq -e '.status == "published"' "$T/r.out" >/dev/null; then pass "candle-graph upload retried through a database outage"
else fail "upload through outage: $(cat "$T/r.err")"; fi
grep -q 'retrying in' "$T/r.err" && pass "upload client reported its retries" || fail "no retry lines: $(cat "$T/r.err")"

# ---------------------------------------------------------------- client abort: temp files go away
head -c 3000000 /dev/urandom >"$T/abort.tar"
curl -s -o /dev/null --max-time 0.5 --limit-rate 500k -X POST -H "$(auth "$TOK")" -H 'Content-Type: application/x-tar' \
  --data-binary @"$T/abort.tar" "$URL/bundles" || true
sleep 0.3
[ -z "$(ls "$SRV_DATA/tmp")" ] && pass "client abort: upload temp file removed" || fail "client abort left $(ls "$SRV_DATA/tmp")"

# ---------------------------------------------------------------- kill -9 during uploads
N=16
for i in $(seq 1 $N); do
  make_bundle "$T/k$i" "run-k$i"
  head -c 2000000 /dev/urandom >"$T/k$i/report.md"   # enough bytes that uploads overlap the kill
  manifest "$T/k$i" "run-k$i"
  pack "$T/k$i" "$T/k$i.tar"
done
PIDS=""
for i in $(seq 1 $N); do
  rate=""; [ $((i % 2)) = 0 ] && rate="--limit-rate 400k"   # half of them are still sending at the kill
  curl -s $rate -o "$T/k$i.out" -w '%{http_code}' -X POST -H "$(auth "$TOK")" -H 'Content-Type: application/x-tar' \
    --data-binary @"$T/k$i.tar" "$URL/bundles" >"$T/k$i.code" 2>/dev/null &
  PIDS="$PIDS $!"
done
# kill once some uploads were acknowledged while the slow half is still sending
for w in $(seq 1 80); do cat "$T"/k*.code 2>/dev/null | grep -q 201 && break; sleep 0.1; done
srv_kill9
wait $PIDS 2>/dev/null
acked=""
for i in $(seq 1 $N); do [ "$(cat "$T/k$i.code")" = 201 ] && acked="$acked $i"; done
note "acknowledged before kill -9:${acked:- none}"
[ -n "$acked" ] || fail "no upload was acknowledged before the kill (the check below would be vacuous)"
[ "$(echo $acked | wc -w)" -lt $N ] || note "note: every upload finished before the kill"
srv_start main --require-signature no
for i in $acked; do
  id=$(jq -r .id "$T/k$i.out")
  for f in bundle.json trace.jsonl evidence.json report.md; do
    http GET "/bundles/$id/files/$f" -H "$(auth "$TOK")"
    [ "$CODE" = 200 ] && cmp -s "$T/body" "$T/k$i/$f" || fail "acknowledged bundle k$i: $f not retrievable byte for byte"
  done
done
pass "every acknowledged bundle retrievable byte for byte after kill -9"
# whatever was not acknowledged can be uploaded now (idempotent retry)
for i in $(seq 1 $N); do
  upload "$T/k$i.tar" "$TOK"
  [ "$CODE" = 201 ] || [ "$CODE" = 200 ] || fail "retry of k$i after restart: $CODE"
done
[ "$(bundle_count)" = $((N + 3)) ] && pass "retries after the crash: one row per bundle" || fail "rows: $(bundle_count)"
srv_stop
FS=$("$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL") && jq -e '.clean' <<<"$FS" >/dev/null \
  && pass "fsck clean after kill -9" || fail "fsck after kill -9: $FS"

# ---------------------------------------------------------------- janitor
ORPHAN=$T/orphan.bin; head -c 1000 /dev/urandom >"$ORPHAN"
OH=$(sha256sum "$ORPHAN" | cut -d' ' -f1)
mkdir -p "$SRV_DATA/blobs/sha256/${OH:0:2}"; cp "$ORPHAN" "$SRV_DATA/blobs/sha256/${OH:0:2}/$OH"
touch -d '2 hours ago' "$SRV_DATA/blobs/sha256/${OH:0:2}/$OH"
printf stale >"$SRV_DATA/tmp/upload-stale1"; touch -d '2 hours ago' "$SRV_DATA/tmp/upload-stale1"
mkdir -p "$SRV_DATA/staging/deadbeef/bundle"; touch -d '2 hours ago' "$SRV_DATA/staging/deadbeef"
"$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL" | jq -e --arg h "$OH" '.clean and (.orphans | index($h))' >/dev/null \
  && pass "fsck lists the orphan (and stays clean)" || fail "fsck orphan listing"
srv_start main --require-signature no --janitor-interval 1 --janitor-grace 3600
gone=""
for i in $(seq 1 40); do
  [ ! -e "$SRV_DATA/blobs/sha256/${OH:0:2}/$OH" ] && [ ! -e "$SRV_DATA/tmp/upload-stale1" ] && [ ! -e "$SRV_DATA/staging/deadbeef" ] && { gone=1; break; }
  sleep 0.1
done
[ -n "$gone" ] && pass "janitor removed the orphan blob and stale temp/staging entries" || fail "janitor left leftovers"
http GET "/bundles/$(jq -r .id "$T/k1.out" 2>/dev/null || true)/files/trace.jsonl" -H "$(auth "$TOK")"
FS=$("$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL") && jq -e '.clean and (.orphans | length) == 0' <<<"$FS" >/dev/null \
  && pass "janitor kept every referenced blob (fsck clean, no orphans)" || fail "fsck after janitor: $FS"

# ---------------------------------------------------------------- whole-request deadline (slow bodies)
srv_stop
srv_start main --require-signature no --request-timeout 1
before=$(ls "$SRV_DATA/tmp" | sort)
if curl -s -o /dev/null --max-time 10 --limit-rate 100k -X POST -H "$(auth "$TOK")" -H 'Content-Type: application/x-tar' \
  --data-binary @"$T/abort.tar" "$URL/bundles"; then fail "a body slower than the request deadline was answered"
else pass "a body slower than the request deadline is cut off"; fi
sleep 0.3
[ "$(ls "$SRV_DATA/tmp" | sort)" = "$before" ] && pass "deadline: upload temp file removed" || fail "deadline left temp files"
grep -q 'request deadline exceeded' "$SRV_LOG" && pass "deadline logged" || fail "deadline not logged"
srv_stop
srv_start main --require-signature no

# ---------------------------------------------------------------- SIGTERM finishes an in-flight upload
make_bundle "$T/s" run-s; head -c 400000 /dev/urandom >"$T/s/report.md"; manifest "$T/s" run-s; pack "$T/s" "$T/s.tar"
curl -s -o "$T/s.out" -w '%{http_code}' --limit-rate 200k -X POST -H "$(auth "$TOK")" -H 'Content-Type: application/x-tar' \
  --data-binary @"$T/s.tar" "$URL/bundles" >"$T/s.code" &
CP=$!
sleep 0.7
kill -TERM "$SRV_PID"
wait "$CP"
wait "$SRV_PID"; SRC_RC=$?; SRV_PID=""
[ "$(cat "$T/s.code")" = 201 ] && pass "in-flight upload finished during graceful shutdown" || fail "in-flight upload: $(cat "$T/s.code")"
[ "$SRC_RC" = 0 ] && pass "server exited 0 on SIGTERM" || fail "server exit status $SRC_RC"
[ "$(psqlc "SELECT count(*) FROM bundles WHERE run_id = 'run-s'")" = 1 ] && pass "the shutdown upload is committed" || fail "shutdown upload not committed"

[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all server fault checks passed"
