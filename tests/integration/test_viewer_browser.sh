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

# The rendered files themselves reference no network address.
if grep -Eiq 'https?://' "$TMP/sample.html" "$TMP/failed.html" "$TMP/real.html"; then
  echo "FAIL: rendered viewer contains an http(s):// reference" >&2
  exit 1
fi

export CG_VIEWER_SAMPLE_HTML="$TMP/sample.html" CG_VIEWER_FAILED_HTML="$TMP/failed.html" CG_VIEWER_REAL_HTML="$TMP/real.html"
export CG_SCREENSHOT_DIR="${CG_SCREENSHOT_DIR:-$BIN/screenshots}" CG_CHROMIUM="$CHROMIUM"
cd "$ROOT"
node --test --test-reporter=spec tests/browser/viewer.test.mjs
