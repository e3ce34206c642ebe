#!/usr/bin/env bash
# `make run` with the server built: the whole system on this machine.
#  1. starts candle-graph-server with its embedded PostgreSQL on 127.0.0.1:8080
#     (data in var/server; CG_DEMO_LISTEN / CG_DEMO_DATA override),
#  2. creates an admin token and a demo signer key (registered with the server),
#  3. records replicated demo captures of two implementations of the toy workload
#     (5 baseline + 5 candidate runs, paired, production-equivalent), publishes,
#     signs and uploads each as a bundle, plus a small campaign,
#  4. prints the URLs and the token, and keeps the server in the foreground
#     until Ctrl-C (which stops the server and its PostgreSQL cleanly).
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CG="$ROOT/$BUILD/agent/candle-graph"
SERVER="$ROOT/$BUILD/server/candle-graph-server"
TOY="$ROOT/$BUILD/agent/toy_train"
LISTEN="${CG_DEMO_LISTEN:-127.0.0.1:8080}"
DATA="${CG_DEMO_DATA:-$ROOT/var/server}"
DEMO="$ROOT/var/demo"
URL="http://$LISTEN"

mkdir -p "$DATA" "$DEMO"
echo "== starting candle-graph-server on $URL (data: $DATA, log: $DATA/server.log)"
"$SERVER" serve --data-dir "$DATA" --listen "$LISTEN" 2>>"$DATA/server.log" &
SRV_PID=$!
cleanup() { kill -TERM "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; }
trap cleanup EXIT INT TERM

# The server's own reason (one `candle-graph-server: …` line: which directory or
# setting, why, what to do), else the log's tail; then how to pick another data dir.
start_failed() {
  echo "make run: candle-graph-server did not start (log: $DATA/server.log):" >&2
  if grep -q '^candle-graph-server: ' "$DATA/server.log"; then
    grep '^candle-graph-server: ' "$DATA/server.log" | tail -1 >&2
  else
    tail -20 "$DATA/server.log" >&2
  fi
  echo "make run: its data dir is $DATA; set CG_DEMO_DATA=<dir> to use another one" >&2
  exit 1
}
for _ in $(seq 120); do
  curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
  kill -0 "$SRV_PID" 2>/dev/null || start_failed
  sleep 0.5
done
curl -fsS "$URL/readyz" >/dev/null || { echo "server did not become ready" >&2; exit 1; }

TOKEN_JSON="$("$SERVER" admin bootstrap --data-dir "$DATA")"
TOKEN="$(printf '%s' "$TOKEN_JSON" | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')"
printf '%s\n' "$TOKEN" > "$DEMO/admin.token"
chmod 600 "$DEMO/admin.token"

KEY="$DEMO/signer.pem"
[ -f "$KEY" ] || "$CG" keygen --out "$KEY" >/dev/null
curl -fsS -X POST "$URL/keys" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  --data "$(printf '{"name":"demo-signer","public_key":%s}' "$(jq -Rs . < "$KEY.pub")")" >/dev/null || true

publish_upload() { # TRACE BUNDLE
  rm -rf "$2" "$2.sig.json"
  "$CG" report "$1" --bundle "$2" >/dev/null
  "$CG" upload "$2" --server "$URL" --token "$TOKEN" --key "$KEY" >/dev/null 2>>"$DEMO/upload.log"
}

echo "== recording and uploading demo bundles"
RUNS="$DEMO/runs"
rm -rf "$RUNS"; mkdir -p "$RUNS"
for i in 0 1 2 3 4; do
  "$TOY" --out "$RUNS/base-$i.jsonl" --step 3 --implementation toy-baseline --pair "pair-$i" --seed 42 --production >/dev/null 2>&1
  publish_upload "$RUNS/base-$i.jsonl" "$RUNS/base-$i"
  "$TOY" --out "$RUNS/cand-$i.jsonl" --step 3 --implementation toy-slow --pair "pair-$i" --seed 42 --production --slow >/dev/null 2>&1
  publish_upload "$RUNS/cand-$i.jsonl" "$RUNS/cand-$i"
done
# a campaign over capture steps 1..4 (step 4 left missing on purpose)
CAMPAIGN='{"schema":"candle-graph/campaign/1","campaign_id":"toy-nightly","entrypoint":"toy::train::update","planned":[{"capture_step":1,"bundle":"step-1"},{"capture_step":2,"bundle":"step-2"},{"capture_step":3,"bundle":"step-3"},{"capture_step":4,"bundle":"step-4"}]}'
curl -fsS -X PUT "$URL/campaigns/toy-nightly" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' --data "$CAMPAIGN" >/dev/null 2>&1 || true
for s in 1 2 3; do
  "$TOY" --out "$RUNS/step-$s.jsonl" --step "$s" --implementation toy-nightly --seed 7 --production >/dev/null 2>&1
  rm -rf "$RUNS/step-$s"; "$CG" report "$RUNS/step-$s.jsonl" --bundle "$RUNS/step-$s" >/dev/null
  "$CG" pack "$RUNS/step-$s" -o "$RUNS/step-$s.tar.zst" >/dev/null
  "$CG" sign "$RUNS/step-$s" --key "$KEY" >/dev/null
  curl -fsS -X POST "$URL/bundles?campaign=toy-nightly&planned=step-$s" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/zstd' \
    -H "Candle-Graph-Signature: $(base64 -w0 < "$RUNS/step-$s.sig.json")" \
    --data-binary @"$RUNS/step-$s.tar.zst" >/dev/null 2>&1 || true
done

IDS_A="$(curl -fsS "$URL/bundles?implementation_id=toy-baseline&capture_step=3&limit=5" -H "Authorization: Bearer $TOKEN" | jq -r '[.items[].id[0:16]]|join(",")')"
IDS_B="$(curl -fsS "$URL/bundles?implementation_id=toy-slow&limit=5" -H "Authorization: Bearer $TOKEN" | jq -r '[.items[].id[0:16]]|join(",")')"
cat <<MSG

candle-graph is running.
  Web app:        $URL/
  Admin token:    $TOKEN   (also in $DEMO/admin.token)
  Bundles:        curl -H "Authorization: Bearer \$TOKEN" $URL/bundles
  Compare:        $URL/#/compare?a=implementation:toy-baseline&b=implementation:toy-slow
                  curl -H "Authorization: Bearer \$TOKEN" "$URL/compare?a=$IDS_A&b=$IDS_B"
  Campaign:       $URL/#/campaigns/toy-nightly
  API:            $URL/openapi.json
Press Ctrl-C to stop (the embedded PostgreSQL stops with the server).
MSG
wait "$SRV_PID"
