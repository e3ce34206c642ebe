#!/usr/bin/env bash
# Browser test of the offline viewer (viewer/5): renders the fixture payloads with
# agent/examples/render_viewer_payload (plus the illustrative analysis trace through
# `candle-graph view`) and drives them in headless Chromium through
# playwright-core (tests/browser/viewer.test.mjs). Screenshots go to
# $CG_SCREENSHOT_DIR (default $CG_BINARY_DIR/screenshots; the committed ones in
# docs/screenshots/ come from CG_SCREENSHOT_DIR=docs/screenshots).
set -euo pipefail
ROOT="${CG_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
BIN="${CG_BINARY_DIR:-$ROOT/build}"
RENDER="$BIN/agent/render_viewer_payload"
CHROMIUM="${CG_CHROMIUM:-/usr/bin/chromium}"

[ -x "$RENDER" ] || { echo "FAIL: $RENDER not built" >&2; exit 1; }
[ -x "$BIN/agent/candle-graph" ] || { echo "FAIL: $BIN/agent/candle-graph not built" >&2; exit 1; }
command -v node >/dev/null || { echo "FAIL: node is not installed (run scripts/bootstrap.sh)" >&2; exit 1; }
if [ ! -x "$CHROMIUM" ]; then
  echo "chromium missing; installing it" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
if [ ! -d "$ROOT/web/node_modules/playwright-core" ]; then
  echo "web/node_modules missing; running npm ci" >&2
  (cd "$ROOT/web" && npm ci --no-audit --no-fund --loglevel=error)
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"$RENDER" "$ROOT/tests/fixtures/viewer/sample_payload.json" "$TMP/sample.html"
"$RENDER" "$ROOT/tests/fixtures/viewer/failed_payload.json" "$TMP/failed.html"
# The real pipeline: trace -> evidence/4 -> viewer payload -> HTML through the CLI.
"$BIN/agent/candle-graph" view "$ROOT/tests/fixtures/analysis/illustrative/trace.jsonl" --output "$TMP/real.html"

# A bounded viewer of a large generated trace (20,000 records, ~13,000 graph nodes):
# every list is cut to its limit and the cut is stated; kept nodes are the heaviest.
GEN="$BIN/bench/trace_ingest/bench_gen_trace"
[ -x "$GEN" ] || { echo "FAIL: $GEN not built" >&2; exit 1; }
"$GEN" --records 20000 --out "$TMP/big.jsonl"
"$BIN/agent/candle-graph" view "$TMP/big.jsonl" --output "$TMP/big.html"
"$BIN/agent/candle-graph" import "$TMP/big.jsonl" -o "$TMP/big.evidence.json"
python3 - "$TMP/big.html" "$TMP/big.evidence.json" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
ev = json.load(open(sys.argv[2]))
packet = ev.get("evidence", ev)
m = re.search(r'<script id="cg-payload" type="application/json">(.*?)</script>', html, re.S)
p = json.loads(m.group(1).replace("<\\/", "</"))
t = p["truncation"]
spans = packet["graph"]["spans"]
nodes = p["views"]["trace"]["nodes"]
assert len(spans) > 2000, len(spans)
assert t["views.trace.nodes"] == {"total": len(spans), "displayed": len(nodes), "truncated": True,
                                  "order": "heaviest by host total time, with their ancestors"}, t["views.trace.nodes"]
ids = {n["id"] for n in nodes}
assert all(n["parent_id"] is None or n["parent_id"] in ids for n in nodes), "ancestors kept"
kept_min = sorted(n["host_total_time_ns"] for n in nodes)[-2000]
dropped_max = max(s["host_total_time_ns"] for s in spans if s["id"] not in ids)
assert kept_min >= dropped_max, (kept_min, dropped_max)
costs = p["views"]["span_costs"]["items"]
assert [c["host_total_time_ns"] for c in costs] == sorted((c["host_total_time_ns"] for c in costs), reverse=True)
assert all(e["from"] in ids and e["to"] in ids for e in p["views"]["trace"]["edges"]), "edges between kept nodes"
tl = packet["memory"]["logical"]["timeline"]
got = p["views"]["memory"]["logical"]["timeline"]
assert len(tl) > 2000 and len(got) <= 2000, (len(tl), len(got))
assert t["views.memory.logical.timeline"]["total"] == len(tl) and t["views.memory.logical.timeline"]["truncated"]
assert max(x["live_bytes"] for x in got) == max(x["live_bytes"] for x in tl), "the peak survives downsampling"
assert got[0] == tl[0] and got[-1] == tl[-1]
assert len(html) < 20 * 1024 * 1024
print(f"bounded viewer: {len(spans)} nodes -> {len(nodes)}, timeline {len(tl)} -> {len(got)}, {len(html)} bytes")
PY

# The rendered files themselves reference no network address.
if grep -Eiq 'https?://' "$TMP/sample.html" "$TMP/failed.html" "$TMP/real.html"; then
  echo "FAIL: rendered viewer contains an http(s):// reference" >&2
  exit 1
fi

export CG_VIEWER_SAMPLE_HTML="$TMP/sample.html" CG_VIEWER_FAILED_HTML="$TMP/failed.html" CG_VIEWER_REAL_HTML="$TMP/real.html"
export CG_VIEWER_BIG_HTML="$TMP/big.html"
export CG_SCREENSHOT_DIR="${CG_SCREENSHOT_DIR:-$BIN/screenshots}" CG_CHROMIUM="$CHROMIUM"
cd "$ROOT"
node --test --test-reporter=spec tests/browser/viewer.test.mjs
