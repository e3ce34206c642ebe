#!/usr/bin/env bash
# `make run`: builds everything (done by make), then shows the system end to end.
# With the server built, it starts candle-graph-server with its embedded PostgreSQL on
# 127.0.0.1:8080, creates an admin token and a signer key, records and uploads demo
# bundles (replicates of two implementations of the toy workload) and prints the URLs.
# Without the server, it records a demo trace with the capture API and prints its summary.
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CG="$BUILD/agent/candle-graph"
TOY="$BUILD/agent/toy_train"
SERVER="$BUILD/server/candle-graph-server"

if [ -x "$SERVER" ] && [ -x scripts/demo-server.sh ]; then
  exec bash scripts/demo-server.sh "$BUILD"
fi

DEMO="${CG_DEMO_DIR:-$ROOT/var/demo}"
mkdir -p "$DEMO"
rm -f "$DEMO/trace.jsonl"
if [ ! -x "$TOY" ]; then
  echo "make run: $TOY was not built" >&2
  exit 1
fi
"$TOY" --out "$DEMO/trace.jsonl" --step 3
echo "== recorded $DEMO/trace.jsonl ($(wc -l < "$DEMO/trace.jsonl") records)"
echo "== candle-graph summary $DEMO/trace.jsonl"
"$CG" summary "$DEMO/trace.jsonl"
