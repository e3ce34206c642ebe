#!/usr/bin/env bash
# `candle-graph upload` against servers that are slow in the two ways that
# matter: one takes the whole body and answers only after 65 s (a large
# bundle's ingest takes minutes: the client must wait for the answer, not call
# the quiet connection a stall), and one never reads the body (a real stall:
# the client gives up after 60 s with a retryable "upload stalled" failure).
# Both run at once, so the test takes about 70 s of wall time and no CPU. The
# servers are small Python HTTP servers on loopback; no PostgreSQL.
set -uo pipefail
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
T=$(mktemp -d --tmpdir cg-upload-stall.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
command -v python3 >/dev/null || die "python3 is not installed"

cat >"$T/slow.py" <<'EOF'
import http.server, socket, sys, time
mode, portfile = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        if mode == "deaf":           # never read the body
            time.sleep(150)
            return
        left = int(self.headers.get("Content-Length", "0"))
        while left > 0:
            chunk = self.rfile.read(min(left, 65536))
            if not chunk:
                return
            left -= len(chunk)
        time.sleep(65)               # the body is in; the "ingest" is slow
        b = b'{"schema":"candle-graph/ingest/1","status":"published"}\n'
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
class S(http.server.HTTPServer):
    def server_bind(self):
        if mode == "deaf":           # a small receive window, so the sender stalls soon
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        super().server_bind()
s = S(("127.0.0.1", 0), H)
open(portfile, "w").write(str(s.server_address[1]))
s.serve_forever()
EOF

start() { # start MODE: sets PORT
  python3 "$T/slow.py" "$1" "$T/$1.port" &
  PIDS+=($!)
  for _ in $(seq 100); do [ -s "$T/$1.port" ] && break; sleep 0.1; done
  PORT=$(cat "$T/$1.port" 2>/dev/null) || die "the $1 server did not start"
}

make_bundle "$T/small" run-stall-small
make_bundle "$T/big" run-stall-big
head -c 8000000 /dev/urandom >"$T/big/report.md" # 8 MB that zstd cannot shrink
manifest "$T/big" run-stall-big

start late
"$CLI" upload "$T/small" --server "http://127.0.0.1:$PORT" --token t --retries 0 >"$T/late.out" 2>"$T/late.err" &
LATE=$!
start deaf
"$CLI" upload "$T/big" --server "http://127.0.0.1:$PORT" --token t --retries 0 >"$T/deaf.out" 2>"$T/deaf.err" &
DEAF=$!

if wait $LATE && jq -e '.status == "published"' "$T/late.out" >/dev/null; then
  pass "upload waited 65 s for the answer of a server that had the whole body"
else
  fail "slow answer: $(cat "$T/late.err")"
fi
if wait $DEAF; then
  fail "upload to a server that never reads the body succeeded: $(cat "$T/deaf.out")"
elif grep -q 'upload stalled: less than 60 KiB of the bundle sent in the last 60 seconds' "$T/deaf.err"; then
  pass "a body send that stalls for 60 s is abandoned"
else
  fail "stalled body send: $(cat "$T/deaf.err")"
fi

[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all upload stall checks passed"
