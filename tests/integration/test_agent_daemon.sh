#!/usr/bin/env bash
# candle-graph daemon: 100 spooled bundles (written by `capture --spool` on the
# stand-in libcuda/libcupti) plus one whose run_id is already taken by another
# bundle arrive exactly once while the server is stopped and restarted twice,
# answers 503/429 at first, and the daemon is killed (SIGKILL) once and
# restarted; the conflicting bundle lands in rejected/ with the server's 409
# error body; SIGTERM stops the daemon cleanly (exit 0).
#
# Server backend: the real candle-graph-server (+ PostgreSQL) when it is built
# (CG_BINARY_DIR/server/candle-graph-server), otherwise the scripted ingest
# server tests/integration/test_agent_daemon_server.py, which implements the
# same POST /bundles contract (auth, content-addressed ids, 200 identical,
# 409 run_id_conflict, error envelope) with state persisted across restarts.
set -euo pipefail
B="${CG_BINARY_DIR:?}"
SRC="${CG_SOURCE_DIR:-$(pwd)}"
CG="$B/agent/candle-graph"
APP="$B/agent/cupti/cg_stub_app"
if [ ! -e "$B/agent/cupti/libcandlegraph-cupti.so" ]; then
  echo "SKIP: libcandlegraph-cupti.so not built (CUPTI headers absent, see the CMake message)"
  exit 0
fi
export CG_CUPTI_LIBRARY="$B/agent/cupti/libfakecupti.so" CG_CUDA_LIBRARY="$B/agent/cupti/libfakecuda.so"
T="$(mktemp -d)"
SERVER_PID="" DAEMON_PID=""
cleanup() {
  [ -n "$DAEMON_PID" ] && kill -KILL "$DAEMON_PID" 2>/dev/null || true
  [ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- daemon log (tail)" >&2; tail -n 30 "$T/daemon.log" >&2 || true
  exit 1
}
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT"

REAL="$B/server/candle-graph-server"
if [ -x "$REAL" ]; then
  BACKEND=real
  "$REAL" admin bootstrap --data-dir "$T/var" >"$T/admin.json"
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$T/admin.json" >"$T/token"
else
  BACKEND=scripted
  echo "note: candle-graph-server is not built: using the scripted ingest server"
  echo "test-token-0123456789abcdef0123456789abcdef" >"$T/token"
fi
start_server() { # $1 = requests answered 503 first (scripted backend)
  if [ "$BACKEND" = real ]; then
    "$REAL" serve --data-dir "$T/var" --listen "127.0.0.1:$PORT" >>"$T/server.log" 2>&1 &
  else
    FAIL_FIRST="$1" python3 "$SRC/tests/integration/test_agent_daemon_server.py" "$PORT" "$(cat "$T/token")" \
      "$T/server-state.json" "$T/server-requests.log" >>"$T/server.log" 2>&1 &
  fi
  SERVER_PID=$!
  for _ in $(seq 1 200); do
    curl -s -o /dev/null "$URL/healthz" && return 0
    [ "$BACKEND" = scripted ] && grep -q ready "$T/server.log" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "server did not start"
}
stop_server() { kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }
start_daemon() {
  "$CG" daemon --spool "$T/spool" --server "$URL" --token-file "$T/token" --concurrency 4 \
    --poll-ms 100 --backoff-base-ms 50 --max-backoff-ms 400 --timeout 30 >>"$T/daemon.log" 2>&1 &
  DAEMON_PID=$!
}
count() { find "$T/spool/$1" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }
wait_sent() { # until at least $1 entries are in sent/
  for _ in $(seq 1 600); do [ "$(count sent)" -ge "$1" ] && return 0; sleep 0.1; done
  fail "only $(count sent) of $1 bundles reached sent/"
}

# 100 bundles with distinct run ids, then one reusing run 1's id
for i in $(seq 1 100); do
  "$CG" capture --entrypoint "train_$i" --step 1 --bundle "$T/bundles/b$i" --nvtx-spans \
    --measure train_step --spool "$T/spool" -- "$APP" 0 >/dev/null 2>"$T/cap.err" || fail "capture $i: $(cat "$T/cap.err")"
done
run1="$(head -1 "$T/bundles/b1/trace.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')"
sed "s/\"entrypoint\":\"train_1\"/\"entrypoint\":\"conflict\"/" "$T/bundles/b1/trace.jsonl" >"$T/conflict.jsonl"
grep -q "\"run_id\":\"$run1\"" "$T/conflict.jsonl" || fail "conflict trace lost its run id"
"$CG" report "$T/conflict.jsonl" --bundle "$T/bundles/conflict" >/dev/null || fail "publish conflict bundle"
# the spool takes any published bundle; name it to sort last
mkdir -p "$T/spool/ready/99999999999999999999-1-conflict"
cp -r "$T/bundles/conflict" "$T/spool/ready/99999999999999999999-1-conflict/bundle"
[ "$(count ready)" = 101 ] || fail "expected 101 spooled entries, got $(count ready)"

start_server 5             # 5 × 503, then 429
start_daemon
wait_sent 25
stop_server                # outage 1
sleep 1
grep -q "retry entry=.* status=0 " "$T/daemon.log" || { sleep 1; grep -q "retry entry=.* status=0 " "$T/daemon.log" || fail "no retry logged during the outage"; }
start_server 0
wait_sent 50
kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true   # crash
start_daemon
wait_sent 75
stop_server                # outage 2
sleep 0.5
start_server 0
for _ in $(seq 1 600); do [ "$(count ready)" = 0 ] && break; sleep 0.1; done
[ "$(count ready)" = 0 ] || fail "$(count ready) entries still in ready/"
kill -TERM "$DAEMON_PID"
set +e; wait "$DAEMON_PID"; drc=$?; set -e
DAEMON_PID=""
[ "$drc" = 0 ] || fail "daemon exit status $drc after SIGTERM"
grep -q "stopped pending=0" "$T/daemon.log" || fail "no clean stop line"

[ "$(count sent)" = 100 ] || fail "sent/ has $(count sent) entries, want 100"
[ "$(count rejected)" = 1 ] || fail "rejected/ has $(count rejected) entries, want 1"
python3 - "$T/spool" "$BACKEND" "$T" <<'PY'
import glob, hashlib, json, os, sys
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
if backend == "scripted":
    st = json.load(open(t + "/server-state.json"))
    assert set(st["ids"]) == ids, "server store differs from sent/"
    reqs = [l.split() for l in open(t + "/server-requests.log")]
    new = [i for s, i in reqs if s == "201"]
    assert len(new) == 100 and len(set(new)) == 100, "a bundle was stored twice or lost"
    again = [i for s, i in reqs if s == "200"]
    # identical re-uploads happen only for uploads cut off by the two outages
    # and the kill (at most 4 in flight each time)
    assert len(again) <= 12, "more identical re-uploads than uploads in flight: %d" % len(again)
print("store: %d bundles, each once" % len(ids))
PY
grep -Eq "rejected entry=[0-9]+-[0-9]+-(conflict|b1) status=409 " "$T/daemon.log" || fail "rejection not logged"
echo "PASS ($BACKEND server)"
