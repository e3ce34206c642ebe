#!/usr/bin/env bash
# candle-graph-server against the attacks of issue 13 (each block names its
# finding), over real HTTP on 127.0.0.1 with a real PostgreSQL: debug writes to
# /tmp, slow heads and bodies, upload slots held by slow senders, conflicting
# message framing, cache headers of token-guarded answers, file permissions,
# decompression bombs by ratio, invalid UTF-8 in answers and logs, loose request
# bodies and parameters, and every command's --help. Raw-socket probes are a
# small Python helper (bounded: every socket has a timeout, every wait a cap).
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
command -v python3 >/dev/null || die "python3 is not installed"
srv_setup

TOK=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "bootstrap failed"

# probe SCRIPT ARGS…: runs a Python snippet with HOST/PORT set and raw(data, wait) defined
probe() {
  local code=$1; shift
  python3 - "$URL" "$@" <<PY
import socket, sys, time, json
host, port = sys.argv[1][7:].split(':'); port = int(port)
ARGS = sys.argv[2:]
def raw(data, wait=5.0):
    s = socket.create_connection((host, port), timeout=wait)
    s.sendall(data)
    out = b''
    try:
        while True:
            b = s.recv(65536)
            if not b:
                out += b'<EOF>'
                break
            out += b
    except socket.timeout:
        out += b'<TIMEOUT>'
    except ConnectionResetError:
        out += b'<EOF>'
    s.close()
    return out
$code
PY
}

# ---------------------------------------------------------------- help of every command
for c in serve admin fsck migrate routes; do
  if "$SERVER" $c --help >"$T/help.out" 2>&1 && grep -q "usage: candle-graph-server $c" "$T/help.out"; then
    pass "candle-graph-server $c --help"
  else fail "$c --help: $(head -3 "$T/help.out")"; fi
done

# ---------------------------------------------------------------- finding 2: no debug writes under /tmp
if grep -rn --include='*.c' --include='*.h' '"/tmp/' "$SRC/server" "$SRC/lib" >"$T/tmp.grep"; then
  fail "server/lib sources name a path under /tmp: $(head -3 "$T/tmp.grep")"
else pass "no source writes a fixed path under /tmp"; fi
# the built binary carries no such path either (a planted /tmp/perf2b symlink is
# not used here: /tmp is shared with other servers of the machine, whose writes
# could not be told from ours)
if grep -aq '/tmp/perf2b' "$SERVER"; then fail "the server binary still names /tmp/perf2b"
else pass "the server binary names no /tmp/perf2b"; fi

srv_start main --require-signature no --max-connections 16 --per-ip-connections 200 \
  --header-timeout 2 --body-timeout 1 --min-body-rate 4000 --max-uploads 2 --upload-wait-ms 0
make_bundle "$T/a" run-a; pack "$T/a" "$T/a.tar"; pack "$T/a" "$T/a.tar.zst" zstd
upload "$T/a.tar.zst" "$TOK"; expect 201 "" "upload (zstd)"
ID=$(jq -r .id "$T/body")

# ---------------------------------------------------------------- finding 3: slowloris
probe '
slow = []
for i in range(24):   # more than the 16 connection slots
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    slow.append(s)
served = 0
for i in range(6):
    for attempt in range(3):   # a client retries a refused connect, as browsers do
        try:
            r = raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        except OSError:
            r = b""
        if r.startswith(b"HTTP/1.1 200"):
            served += 1
            break
        time.sleep(0.1)
    for s in slow:
        try: s.sendall(b"a")      # one header byte at a time: never idle
        except OSError: pass
    time.sleep(0.2)
print("served", served)
closed = set()
deadline = time.time() + 20
while len(closed) < len(slow) and time.time() < deadline:
    for i, s in enumerate(slow):
        if i in closed: continue
        try:
            s.sendall(b"a")
            s.settimeout(0.05)
            if s.recv(100) == b"": closed.add(i)
        except socket.timeout:
            pass
        except OSError:
            closed.add(i)
    time.sleep(0.2)
print("closed", len(closed))
' >"$T/slow.out"
grep -q '^served 6$' "$T/slow.out" && pass "others are served while 24 slow heads trickle (16 slots)" \
  || fail "slowloris starved normal requests: $(cat "$T/slow.out")"
grep -q '^closed 24$' "$T/slow.out" && pass "every slow head is closed at the header deadline" \
  || fail "slow heads left open: $(cat "$T/slow.out")"
grep -q 'request head not complete within the header deadline' "$SRV_LOG" && pass "header deadline logged" \
  || fail "no header-deadline log line"

# slow body below the minimum rate
probe '
s = socket.create_connection((host, port), timeout=5)
s.sendall(("POST /bundles HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/x-tar\r\n"
           "Content-Length: 100000\r\n\r\n" % ARGS[0]).encode())
closed = False
deadline = time.time() + 20
while not closed and time.time() < deadline:
    try:
        s.sendall(b"x" * 10)
        s.settimeout(0.3)
        closed = s.recv(100) == b""
    except socket.timeout:
        pass
    except OSError:
        closed = True
print("closed" if closed else "open")
' "$TOK" >"$T/body.out"
grep -q '^closed$' "$T/body.out" && pass "a body below the minimum rate is closed" || fail "slow body kept open"
for i in $(seq 1 50); do [ -z "$(ls -A "$SRV_DATA/tmp")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$SRV_DATA/tmp")" ] && pass "slow body: its temp file is removed" || fail "slow body left $(ls "$SRV_DATA/tmp")"

# ---------------------------------------------------------------- finding 4: slots are taken when the body is complete
head -c 300000 /dev/urandom >"$T/slowup.tar"
SLOWS=""
for i in 1 2 3 4; do   # twice the 2 ingest slots, each at 20 kB/s (over the 4 kB/s minimum)
  curl -s -o /dev/null --max-time 60 --limit-rate 20k -X POST -H "$(auth "$TOK")" -H 'Content-Type: application/x-tar' \
    --data-binary @"$T/slowup.tar" "$URL/bundles" &
  SLOWS="$SLOWS $!"
done
sleep 1
make_bundle "$T/b" run-b; pack "$T/b" "$T/b.tar"
upload "$T/b.tar" "$TOK"; expect 201 "" "an upload while 4 slow uploads are still sending (2 slots) → 201"
wait $SLOWS 2>/dev/null

# ---------------------------------------------------------------- finding 7: request smuggling
probe '
body = b"{\"name\":\"smuggle\",\"scopes\":[\"read\"]}"
hidden = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
head = b"POST /tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ARGS[0].encode() + b"\r\nContent-Type: application/json\r\n"
chunked = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
cases = {
  "two_cl": head + b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(body), len(body) + len(hidden)) + body + hidden,
  "cl_te": head + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + hidden,
  "te_gzip": head + b"Transfer-Encoding: gzip\r\n\r\n" + body,
  "te_list": head + b"Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked,
  "http10_te": head.replace(b"HTTP/1.1", b"HTTP/1.0") + b"Transfer-Encoding: chunked\r\n\r\n" + chunked,
}
for name, data in cases.items():
    r = raw(data, 5)
    status = r.split(b" ", 2)[1].decode() if r.startswith(b"HTTP/1.1") else "none"
    answers = r.count(b"HTTP/1.1 ")
    closed = r.endswith(b"<EOF>")
    code = json.loads(r.split(b"\r\n\r\n", 1)[1].rsplit(b"<", 1)[0])["error"]["code"] if status != "none" else ""
    print(name, status, code, answers, "closed" if closed else "open")
' "$TOK" >"$T/smuggle.out"
for want in "two_cl 400 bad_request 1 closed" "cl_te 400 bad_request 1 closed" "te_gzip 501 not_implemented 1 closed" \
            "te_list 501 not_implemented 1 closed" "http10_te 400 bad_request 1 closed"; do
  grep -qx "$want" "$T/smuggle.out" && pass "framing: $want" || fail "framing: want $want, got $(grep "^${want%% *} " "$T/smuggle.out")"
done
[ "$(psqlc "SELECT count(*) FROM api_tokens WHERE name = 'smuggle'")" = 0 ] && pass "no smuggled body created a token" \
  || fail "a request with conflicting framing was executed"

# ---------------------------------------------------------------- finding 9: cache headers
http GET "/bundles/$ID/files/trace.jsonl" -H "$(auth "$TOK")"; expect 200 "" "file with a token"
grep -qi '^Cache-Control: private, max-age=31536000, immutable' "$T/hdr" && pass "token-guarded file: Cache-Control private" \
  || fail "file cache header: $(grep -i '^Cache-Control' "$T/hdr")"
http GET "/bundles/$ID/manifest" -H "$(auth "$TOK")"
grep -qi '^Cache-Control: private' "$T/hdr" && pass "token-guarded manifest: Cache-Control private" \
  || fail "manifest cache header: $(grep -i '^Cache-Control' "$T/hdr")"
make_bundle "$T/v" run-viewer
printf '<!doctype html><title>v</title><script>document.title="x"</script>\n' >"$T/v/viewer.html"
cp "$T/v/viewer.html" "$T/v/page.html"; manifest "$T/v" run-viewer; pack "$T/v" "$T/v.tar"
upload "$T/v.tar" "$TOK"; expect 201 "" "bundle with viewer.html and another .html file"
VID=$(jq -r .id "$T/body")
for p in viewer files/viewer.html files/page.html; do
  http GET "/bundles/$VID/$p" -H "$(auth "$TOK")"
  csp=$(grep -i '^Content-Security-Policy:' "$T/hdr" | tr -d '\r')
  case "$csp" in *"sandbox allow-scripts"*"frame-ancestors 'none'"*) pass "/$p: CSP sandbox + frame-ancestors 'none'" ;;
    *) fail "/$p CSP: $csp" ;; esac
done

# ---------------------------------------------------------------- finding 10: permissions
mode() { stat -c %a "$1"; }
BLOB=$(find "$SRV_DATA/blobs/sha256" -type f | head -1)
[ "$(mode "$BLOB")" = 600 ] && pass "blob mode 0600" || fail "blob mode $(mode "$BLOB")"
bad=""
for d in "$SRV_DATA" "$SRV_DATA/tmp" "$SRV_DATA/staging" "$SRV_DATA/blobs" "$SRV_DATA/blobs/tmp" "$SRV_DATA/blobs/sha256" "$(dirname "$BLOB")"; do
  [ "$(mode "$d")" = 700 ] || bad="$bad $d=$(mode "$d")"
done
[ -z "$bad" ] && pass "data, temp, staging and blob directories 0700" || fail "directory modes:$bad"
[ -z "$(find "$SRV_DATA" -perm /077 2>/dev/null | head -1)" ] && pass "nothing under the data dir is group/world accessible" \
  || fail "group/world bits: $(find "$SRV_DATA" -perm /077 | head -3)"

# ---------------------------------------------------------------- finding 11: decompression ratio
mkdir -p "$T/bomb"; cp "$T/a/trace.jsonl" "$T/a/evidence.json" "$T/a/report.md" "$T/bomb/"
mkdir -p "$T/bomb/nsight"; head -c 67108864 /dev/zero >"$T/bomb/nsight/zeros.csv"
manifest "$T/bomb" run-bomb; pack "$T/bomb" "$T/bomb.tar.zst" zstd
BLOBS0=$(blob_count); N0=$(bundle_count)
note "bomb: $(stat -c %s "$T/bomb.tar.zst") compressed bytes → 64 MiB"
upload "$T/bomb.tar.zst" "$TOK"; expect 413 payload_too_large "64 MiB from a few KB of zstd → 413"
[ "$(jq -r .error.detail.limit "$T/body")" = decompression_ratio ] && pass "detail.limit names decompression_ratio" \
  || fail "ratio detail: $BODY"
[ "$(blob_count)" = "$BLOBS0" ] && [ "$(bundle_count)" = "$N0" ] && pass "nothing stored from the bomb" || fail "bomb stored something"

# ---------------------------------------------------------------- finding 12: every answer and log line valid UTF-8 JSON
probe '
tok = ARGS[0].encode()
reqs = [
  b"PUT /campaigns/c1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok + b"\r\nContent-Type: text/\xff\xfe\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
  b"GET /campaigns/\xff\xfe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok + b"\r\nConnection: close\r\n\r\n",
  b"GET /bundles?device=%ff HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok + b"\r\nConnection: close\r\n\r\n",
  b"GET /nope/\xc0\xaf HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
]
for q in reqs:
    r = raw(q)
    body = r.split(b"\r\n\r\n", 1)[1].rsplit(b"<", 1)[0]
    try:
        v = json.loads(body.decode("utf-8", "strict"))
        print(r.split(b" ", 2)[1].decode(), v["error"]["code"])
    except Exception as e:
        print("invalid", repr(body[:120]))
' "$TOK" >"$T/utf8.out"
grep -q "^invalid " "$T/utf8.out" && fail "an answer is not valid UTF-8 JSON: $(grep "^invalid " "$T/utf8.out")" \
  || pass "answers to requests carrying 0xff bytes are valid UTF-8 JSON ($(tr '\n' ' ' <"$T/utf8.out"))"
grep -q '^400 invalid_parameter' "$T/utf8.out" && pass "%ff in a parameter → 400 invalid_parameter" || fail "utf8 codes: $(cat "$T/utf8.out")"
python3 - "$SRV_LOG" >"$T/log.out" <<'PY'
import json, sys
bad = 0
for n, line in enumerate(open(sys.argv[1], "rb"), 1):
    try:
        json.loads(line.decode("utf-8", "strict"))
    except Exception:
        bad += 1
        print("line", n, repr(line[:100]))
print("bad", bad)
PY
grep -q '^bad 0$' "$T/log.out" && pass "every server log line is valid UTF-8 JSON" || fail "log lines: $(head -3 "$T/log.out")"

# ---------------------------------------------------------------- finding 13: loose bodies and parameters
http POST /tokens -H "$(auth "$TOK")" -H 'Content-Type: application/json' \
  --data '{"name":"a","scopes":["read"],"scopes":["admin","upload","read"]}'
expect 400 duplicate_key "token body with a duplicate key → 400 duplicate_key"
[ "$(jq -r .error.detail.key "$T/body")" = scopes ] && pass "duplicate_key names the key" || fail "dup detail: $BODY"
CAMP='{"schema":"candle-graph/campaign/1","campaign_id":"dup","entrypoint":"toy::train::update","planned":[{"capture_step":3,"bundle":"b1"}],"campaign_id":"other"}'
http PUT /campaigns/dup -H "$(auth "$TOK")" -H 'Content-Type: application/json' --data "$CAMP"
expect 400 duplicate_key "campaign body with a duplicate key → 400 duplicate_key"
for cid in . ..; do
  http PUT "/campaigns/$cid" --path-as-is -H "$(auth "$TOK")" -H 'Content-Type: application/json' \
    --data "{\"schema\":\"candle-graph/campaign/1\",\"campaign_id\":\"$cid\",\"entrypoint\":\"e\",\"planned\":[{\"capture_step\":1,\"bundle\":\"b\"}]}"
  expect 400 invalid_parameter "campaign id '$cid' → 400 invalid_parameter"
done
http POST /keys -H "$(auth "$TOK")" -H 'Content-Type: application/json' \
  --data "{\"name\":\"zero\",\"public_key\":\"$(head -c 32 /dev/zero | base64 -w0)\"}"
expect 400 invalid_parameter "all-zero (low-order) Ed25519 key → 400"
http GET /tokens -H "Authorization: bearer $TOK"; expect 200 "" "bearer scheme matched case-insensitively"
http GET /tokens -H "Authorization: BEARER   $TOK"; expect 200 "" "BEARER with several spaces"
Q=$(python3 -c 'print("&".join("p%d=1" % i for i in range(8000)))')
http GET "/bundles?$Q" -H "$(auth "$TOK")"; expect 431 too_many_parameters "8,000 query parameters → 431"
http GET "/bundles?since=yesterday-ish" -H "$(auth "$TOK")"; expect 400 invalid_parameter "bad since → 400"
[ "$(jq -r .error.detail.parameter "$T/body")" = since ] && pass "names since" || fail "since detail: $BODY"
http GET "/bundles?since=2020-01-01&until=13/45/2020" -H "$(auth "$TOK")"; expect 400 invalid_parameter "bad until → 400"
[ "$(jq -r .error.detail.parameter "$T/body")" = until ] && pass "names until (not since)" || fail "until detail: $BODY"
# capture_step is stored exactly as a u64: 2^63 .. 2^64-1 are valid filters, 2^64 is not
http GET "/bundles?capture_step=9223372036854775808" -H "$(auth "$TOK")"; expect 200 "" "capture_step = 2^63 is a valid filter"
http GET "/bundles?capture_step=18446744073709551615" -H "$(auth "$TOK")"; expect 200 "" "capture_step = 2^64-1 is a valid filter"
http GET "/bundles?capture_step=18446744073709551616" -H "$(auth "$TOK")"; expect 400 invalid_parameter "capture_step = 2^64 → 400"
[ "$(jq -r .error.detail.parameter "$T/body")" = capture_step ] && pass "names capture_step" || fail "capture_step detail: $BODY"
http GET "/compare?a=implementation:x&b=implementation:y&since=nope" -H "$(auth "$TOK")"; expect 400 invalid_parameter "compare: bad since → 400"
[ "$(jq -r .error.detail.parameter "$T/body")" = since ] && pass "compare names since" || fail "compare detail: $BODY"

# empty run_id, NUL inside a trace string
make_bundle "$T/e" ""
pack "$T/e" "$T/e.tar"; upload "$T/e.tar" "$TOK"; expect 422 invalid_run_id "empty run_id → 422 invalid_run_id"
make_bundle "$T/n" run-nul
sed -i 's/"toy::train::update","phase"/"toy::train\\u0000::hidden","phase"/' "$T/n/trace.jsonl"
grep -q 'u0000' "$T/n/trace.jsonl" || die "NUL fixture not made"
manifest "$T/n" run-nul; pack "$T/n" "$T/n.tar"; upload "$T/n.tar" "$TOK"
expect 422 trace_invalid "a NUL inside a trace string → 422 trace_invalid"
srv_stop

# ---------------------------------------------------------------- --public-read: public caching
srv_start main --public-read --require-signature no
http GET "/bundles/$ID/files/trace.jsonl"; expect 200 "" "--public-read file"
grep -qi '^Cache-Control: public, max-age=31536000, immutable' "$T/hdr" && pass "--public-read: Cache-Control public" \
  || fail "public cache header: $(grep -i '^Cache-Control' "$T/hdr")"
srv_stop

[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all server hardening checks passed"
