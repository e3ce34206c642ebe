#!/usr/bin/env python3
"""Scripted stand-in for candle-graph-server's POST /bundles (API.md), used by
tests/integration/test_agent_daemon.sh (scripted backend).

It implements the parts of the ingest contract the daemon depends on:
Bearer auth (401), tar or tar.zst bodies, id = sha256(bundle.json), 201 new /
200 already_published, 409 run_id_conflict for a different bundle with a known
run_id, and the error envelope. State (published ids, run ids) persists in
STATE_FILE across restarts, like the database; every request is appended to
LOG_FILE as "status id". FAIL_FIRST=N answers the first N requests of this
process with 503 + Retry-After: 1, then one 429.

usage: ingest_server.py PORT TOKEN STATE_FILE LOG_FILE
"""
import hashlib, io, json, os, subprocess, sys, tarfile, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, TOKEN, STATE, LOG = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
FAIL_FIRST = int(os.environ.get("FAIL_FIRST", "0"))
lock = threading.Lock()
count = [0]
state = {"ids": {}, "runs": {}}
if os.path.exists(STATE):
    state = json.load(open(STATE))


def save():
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, STATE)


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body, extra=None):
        data = (json.dumps(body) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, code, msg, extra=None):
        self.reply(status, {"error": {"code": code, "message": msg}}, extra)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if self.path.split("?")[0] != "/bundles":
            return self.error(404, "not_found", "no such route")
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            return self.error(401, "unauthorized", "missing or unknown token")
        with lock:
            count[0] += 1
            k = count[0]
        if k <= FAIL_FIRST:
            return self.error(503, "unavailable", "database not reachable", {"Retry-After": "1"})
        if k == FAIL_FIRST + 1 and FAIL_FIRST:
            return self.error(429, "too_many_requests", "slow down", {"Retry-After": "0"})
        if body[:4] == b"\x28\xb5\x2f\xfd":
            body = subprocess.run(["zstd", "-dc"], input=body, capture_output=True, check=True).stdout
        try:
            tar = tarfile.open(fileobj=io.BytesIO(body))
            manifest = tar.extractfile("bundle.json").read()
            trace = tar.extractfile("trace.jsonl").read()
        except Exception as e:  # noqa: BLE001
            return self.error(400, "malformed_archive", str(e))
        bid = hashlib.sha256(manifest).hexdigest()
        run_id = json.loads(trace.split(b"\n", 1)[0])["run_id"]
        with lock:
            if bid in state["ids"]:
                status, st = 200, "already_published"
            elif run_id in state["runs"]:
                status = 409
            else:
                state["ids"][bid] = run_id
                state["runs"][run_id] = bid
                save()
                status, st = 201, "published"
            with open(LOG, "a") as f:
                f.write("%d %s\n" % (status, bid))
        if status == 409:
            return self.error(409, "run_id_conflict",
                              "a different bundle already holds run_id %s" % run_id)
        self.reply(status, {"schema": "candle-graph/ingest/1", "status": st, "id": bid, "run_id": run_id},
                   {"Location": "/bundles/" + bid})


ThreadingHTTPServer.allow_reuse_address = True
srv = ThreadingHTTPServer(("127.0.0.1", PORT), H)
print("ready", flush=True)
srv.serve_forever()
