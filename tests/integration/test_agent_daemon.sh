#!/usr/bin/env bash
# candle-graph daemon against the real candle-graph-server and PostgreSQL
# (shared harness tests/support/server_lib.sh): 100 signed bundles written by
# `capture --spool` (stand-in libcuda/libcupti), plus one whose run_id is
# already held by another bundle, arrive exactly once while the server is
# stopped and restarted twice and the daemon is killed (SIGKILL) once and
# restarted. Of the two bundles sharing a run id, the one that arrives second
# lands in rejected/ with the server's 409 error body. SIGTERM stops the
# daemon cleanly (exit 0). Exactly once = the server lists 100 bundles, one per
# sent/ receipt, and bundles has 100 rows.
#
# When candle-graph-server is not built (no libmicrohttpd/libpq), the same
# scenario runs against the scripted ingest server
# tests/integration/test_agent_daemon_server.py (same POST /bundles contract,
# 503/429 answers first, state kept across restarts).
set -euo pipefail
B="${CG_BINARY_DIR:?}"
SRC="${CG_SOURCE_DIR:-$(pwd)}"
CGBIN="$B/agent/candle-graph"
APP="$B/agent/cupti/cg_stub_app"
if [ ! -e "$B/agent/cupti/libcandlegraph-cupti.so" ]; then
  echo "SKIP: libcandlegraph-cupti.so not built (CUPTI headers absent, see the CMake message)"
  exit 0
fi
export CG_CUPTI_LIBRARY="$B/agent/cupti/libfakecupti.so" CG_CUDA_LIBRARY="$B/agent/cupti/libfakecuda.so"

DAEMON_PID=""
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT"
if [ -x "$B/server/candle-graph-server" ]; then
  BACKEND=real
  # shellcheck source=../support/server_lib.sh
  . "$SRC/tests/support/server_lib.sh"
  set +u
  srv_setup                           # real PostgreSQL in $T, trap srv_cleanup
  set -u
  cleanup() { [ -n "$DAEMON_PID" ] && kill -KILL "$DAEMON_PID" 2>/dev/null; srv_cleanup; }
  trap cleanup EXIT
else
  BACKEND=scripted
  echo "note: candle-graph-server is not built: using the scripted ingest server"
  T="$(mktemp -d)"
  SRV_PID=""
  cleanup() {
    [ -n "$DAEMON_PID" ] && kill -KILL "$DAEMON_PID" 2>/dev/null
    [ -n "$SRV_PID" ] && kill -KILL "$SRV_PID" 2>/dev/null
    rm -rf "$T"
  }
  trap cleanup EXIT
fi
URL="http://127.0.0.1:$PORT"
die_() {
  echo "FAIL: $*" >&2
  echo "--- daemon log (tail)" >&2; tail -n 30 "$T/daemon.log" >&2 || true
  exit 1
}

start_server() { # $1 = requests answered 503 first (scripted backend only)
  if [ "$BACKEND" = real ]; then
    SRV_LOG="$T/srv.log"
    local skip=0
    if [ -f "$SRV_LOG" ]; then skip=$(wc -l <"$SRV_LOG"); fi
    "$SERVER" serve --data-dir "$T/srv" --listen "127.0.0.1:$PORT" --database-url "$DBURL" >>"$SRV_LOG" 2>&1 &
    SRV_PID=$!
    for _ in $(seq 1 300); do
      tail -n +$((skip + 1)) "$SRV_LOG" | grep -q '"msg":"listening"' && return 0
      kill -0 "$SRV_PID" 2>/dev/null || die_ "server exited during start: $(tail -5 "$SRV_LOG")"
      sleep 0.05
    done
    die_ "server did not start"
  else
    FAIL_FIRST="$1" python3 "$SRC/tests/integration/test_agent_daemon_server.py" "$PORT" "$(cat "$T/token")" \
      "$T/server-state.json" "$T/server-requests.log" >>"$T/server.log" 2>&1 &
    SRV_PID=$!
    for _ in $(seq 1 200); do
      [ "$(grep -c ready "$T/server.log" 2>/dev/null)" -ge "${STARTS:-1}" ] && { STARTS=$(( ${STARTS:-1} + 1 )); return 0; }
      sleep 0.05
    done
    die_ "scripted server did not start"
  fi
}
stop_server() { kill -TERM "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; SRV_PID=""; }
start_daemon() {
  "$CGBIN" daemon --spool "$T/spool" --server "$URL" --token-file "$T/token" --concurrency 4 \
    --poll-ms 100 --backoff-base-ms 50 --max-backoff-ms 400 --timeout 60 >>"$T/daemon.log" 2>&1 &
  DAEMON_PID=$!
}
count() { find "$T/spool/$1" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }
wait_sent() { # until at least $1 entries are in sent/
  for _ in $(seq 1 1200); do [ "$(count sent)" -ge "$1" ] && return 0; sleep 0.1; done
  die_ "only $(count sent) of $1 bundles reached sent/"
}

# Credentials: a signing key the server knows, a token with the upload scope.
"$CGBIN" keygen --out "$T/key" >/dev/null
if [ "$BACKEND" = real ]; then
  "$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token >"$T/token"
  start_server 0
  curl -sf -o /dev/null -X POST "$URL/keys" -H "Authorization: Bearer $(cat "$T/token")" \
    -H 'Content-Type: application/json' -d "$(jq -n --rawfile k "$T/key.pub" '{name:"daemon-test", public_key:$k}')" \
    || die_ "cannot register the signing key"
  stop_server
else
  echo "test-token-0123456789abcdef0123456789abcdef" >"$T/token"
fi

# 100 signed bundles with distinct run ids, then one reusing run 1's id
for i in $(seq 1 100); do
  "$CGBIN" capture --entrypoint "train_$i" --step 1 --bundle "$T/bundles/b$i" --nvtx-spans \
    --measure train_step --sign "$T/key" --spool "$T/spool" -- "$APP" 0 >/dev/null 2>"$T/cap.err" \
    || die_ "capture $i: $(cat "$T/cap.err")"
done
run1="$(head -1 "$T/bundles/b1/trace.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')"
sed "s/\"entrypoint\":\"train_1\"/\"entrypoint\":\"conflict\"/" "$T/bundles/b1/trace.jsonl" >"$T/conflict.jsonl"
grep -q "\"run_id\":\"$run1\"" "$T/conflict.jsonl" || die_ "conflict trace lost its run id"
"$CGBIN" report "$T/conflict.jsonl" --bundle "$T/bundles/conflict" >/dev/null || die_ "publish conflict bundle"
"$CGBIN" sign "$T/bundles/conflict" --key "$T/key" >/dev/null || die_ "sign conflict bundle"
# the spool takes any published bundle; name it to sort last
mkdir -p "$T/spool/ready/99999999999999999999-1-conflict"
cp -r "$T/bundles/conflict" "$T/spool/ready/99999999999999999999-1-conflict/bundle"
cp "$T/bundles/conflict.sig.json" "$T/spool/ready/99999999999999999999-1-conflict/bundle.sig.json"
[ "$(count ready)" = 101 ] || die_ "expected 101 spooled entries, got $(count ready)"

start_server 5             # scripted: 5 × 503, then 429
start_daemon
wait_sent 25
stop_server                # outage 1
sleep 1
grep -q "retry entry=.* status=0 " "$T/daemon.log" || { sleep 1; grep -q "retry entry=.* status=0 " "$T/daemon.log" || die_ "no retry logged during the outage"; }
start_server 0
wait_sent 50
kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true   # crash
start_daemon
wait_sent 75
stop_server                # outage 2
sleep 0.5
start_server 0
for _ in $(seq 1 1200); do [ "$(count ready)" = 0 ] && break; sleep 0.1; done
[ "$(count ready)" = 0 ] || die_ "$(count ready) entries still in ready/"
kill -TERM "$DAEMON_PID"
set +e; wait "$DAEMON_PID"; drc=$?; set -e
DAEMON_PID=""
[ "$drc" = 0 ] || die_ "daemon exit status $drc after SIGTERM"
grep -q "stopped pending=0" "$T/daemon.log" || die_ "no clean stop line"

[ "$(count sent)" = 100 ] || die_ "sent/ has $(count sent) entries, want 100"
[ "$(count rejected)" = 1 ] || die_ "rejected/ has $(count rejected) entries, want 1"
if [ "$BACKEND" = real ]; then
  curl -sf "$URL/bundles?limit=500" -H "Authorization: Bearer $(cat "$T/token")" >"$T/list.json" || die_ "GET /bundles"
  rows="$(psql -X -q -t -A "$DBURL" -c "SELECT count(*) FROM bundles")"
  [ "$rows" = 100 ] || die_ "bundles table has $rows rows, want 100"
fi
python3 - "$T/spool" "$BACKEND" "$T" <<'PY' || die_ "spool/server check"
import glob, hashlib, json, sys
spool, backend, t = sys.argv[1], sys.argv[2], sys.argv[3]
ids = set()
for d in glob.glob(spool + "/sent/*"):
    r = json.load(open(d + "/receipt.json"))
    assert r["schema"] == "candle-graph/ingest/1" and r["status"] in ("published", "already_published"), r
    want = hashlib.sha256(open(d + "/bundle/bundle.json", "rb").read()).hexdigest()
    assert r["id"] == want, (r["id"], want)
    ids.add(r["id"])
assert len(ids) == 100, len(ids)
(rej,) = glob.glob(spool + "/rejected/*")
j = json.load(open(rej + "/rejection.json"))
assert j["status"] == 409 and j["body"]["error"]["code"] == "run_id_conflict", j
# whichever of the two bundles sharing run 1's id arrived second is the one refused
assert rej.endswith("-conflict") or rej.endswith("-b1"), rej
if backend == "real":
    listed = {item["id"] for item in json.load(open(t + "/list.json"))["items"]}
    assert listed == ids, "server list differs from sent/: %d vs %d" % (len(listed), len(ids))
else:
    st = json.load(open(t + "/server-state.json"))
    assert set(st["ids"]) == ids, "server store differs from sent/"
    reqs = [l.split() for l in open(t + "/server-requests.log")]
    new = [i for s, i in reqs if s == "201"]
    assert len(new) == 100 and len(set(new)) == 100, "a bundle was stored twice or lost"
    # identical re-uploads happen only for uploads cut off by the two outages
    # and the kill (at most 4 in flight each time)
    again = [i for s, i in reqs if s == "200"]
    assert len(again) <= 12, "more identical re-uploads than uploads in flight: %d" % len(again)
print("server: %d bundles, each once" % len(ids))
PY
grep -Eq "rejected entry=[0-9]+-[0-9]+-(conflict|b1) status=409 " "$T/daemon.log" || die_ "rejection not logged"
echo "PASS ($BACKEND server)"
