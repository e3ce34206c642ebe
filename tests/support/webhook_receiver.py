#!/usr/bin/env python3
"""Loopback webhook receiver for tests/integration/test_history_webhooks.sh.

Listens on 127.0.0.1 (port 0 → random; the bound port is written to
PORTFILE), answers the first FAIL_FIRST POSTs with 500 and every later one
with 200, and appends one JSON line per POST to LOG: the event id header, the
SHA-256 of the body, whether Candle-Graph-Signature-256 is the HMAC-SHA256 of
the body under SECRET, the status it answered and the body itself.
usage: webhook_receiver.py PORTFILE LOG SECRET FAIL_FIRST
"""
import hashlib
import hmac
import http.server
import json
import sys

portfile, log, secret, fail_first = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
seen = {"posts": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        seen["posts"] += 1
        status = 500 if seen["posts"] <= fail_first else 200
        want = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        got = self.headers.get("Candle-Graph-Signature-256", "")
        rec = {
            "event_id": self.headers.get("Candle-Graph-Event-Id"),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "hmac_valid": hmac.compare_digest(want, got),
            "status": status,
            "body": json.loads(body.decode()),
        }
        with open(log, "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402

os.replace(portfile + ".tmp", portfile)
srv.serve_forever()
