#!/usr/bin/env bash
# Bundle page tabs from verified data only (issue 14), in headless Chromium
# against the real server and PostgreSQL (tests/support/server_lib.sh):
#   - a bundle published by `candle-graph report` (evidence.json rederived_match,
#     nsight/ exports) whose viewer.html payload was then edited to fabricated
#     names and numbers (the manifest re-digested, so the upload is accepted);
#   - a synthetic trace of 3,000 spans for the virtualized, server-paged tables.
# The browser checks live in tests/browser/views.test.mjs.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
CHROMIUM="${CG_CHROMIUM:-/usr/bin/chromium}"
TOY=$BIN/agent/toy_train
[ -x "$TOY" ] && [ -x "$CLI" ] || die "missing $TOY or $CLI (build toy_train and candle-graph)"
command -v node >/dev/null || die "node is not installed (make bootstrap)"
[ -x "$CHROMIUM" ] || die "chromium is not installed at $CHROMIUM (make bootstrap)"
[ -d "$SRC/web/node_modules/playwright-core" ] || (cd "$SRC/web" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed"
srv_setup
ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
srv_start webviews --require-signature no

up() { pack "$1" "$1.tar"; upload "$1.tar" "$ADMIN"; [ "$CODE" = 201 ] || die "upload $1: $CODE $BODY"; jq -r .id "$T/body"; }

"$TOY" --out "$T/toy.jsonl" --step 3 --production >/dev/null 2>&1 || die "toy_train failed"
"$CLI" report "$T/toy.jsonl" --bundle "$T/fake" --nsight-dir "$SRC/tests/fixtures/nsight/display_caps/input" >/dev/null \
  || die "candle-graph report failed"
# every name/label/summary of the embedded payload becomes FABRICATED, every ns/bytes figure 987654321
node -e '
  const fs = require("fs"), f = process.argv[1], html = fs.readFileSync(f, "utf8");
  const m = html.match(/(<script[^>]*id="cg-payload"[^>]*>)([\s\S]*?)(<\/script>)/);
  if (!m) process.exit(2);
  const walk = (v) => { if (Array.isArray(v)) return v.map(walk); if (!v || typeof v !== "object") return v;
    for (const k of Object.keys(v)) {
      if (typeof v[k] === "string" && /^(name|label|short_label|summary|entrypoint)$/.test(k)) v[k] = "FABRICATED";
      else if (typeof v[k] === "number" && /(_ns|_bytes|count)$/.test(k)) v[k] = 987654321;
      else v[k] = walk(v[k]); }
    return v; };
  const p = walk(JSON.parse(m[2]));
  fs.writeFileSync(f, html.replace(m[0], () => m[1] + JSON.stringify(p).replace(/</g, "\\u003c") + m[3]));' "$T/fake/viewer.html" \
  || die "cannot edit the viewer payload"
grep -q FABRICATED "$T/fake/viewer.html" || die "payload not edited"
manifest "$T/fake" "$(head -1 "$T/toy.jsonl" | jq -r .run_id)"
FAKE_ID=$(up "$T/fake")
http GET "/bundles/$FAKE_ID" -H "$(auth "$ADMIN")"
jq -e '.semantic.status == "rederived_match"' "$T/body" >/dev/null && pass "evidence.json verified at ingest (rederived_match)" \
  || fail "semantic status: $(jq -c .semantic "$T/body")"
mkdir -p "$T/big"
node "$SRC/bench/web_timeline/gen_trace.mjs" 12000 "$T/big/trace.jsonl" run-web-views
printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$T/big/evidence.json"; printf '# report\n' >"$T/big/report.md"
manifest "$T/big" run-web-views
BIG_ID=$(up "$T/big")
pass "uploaded 2 bundles"

export CG_WEB_URL="$URL" CG_WEB_TOKEN="$ADMIN" CG_WEB_FAKE="$FAKE_ID" CG_WEB_BIG="$BIG_ID" CG_CHROMIUM="$CHROMIUM"
export CG_SCREENSHOT_DIR="${CG_SCREENSHOT_DIR:-$BIN/screenshots}"
(cd "$SRC" && node --test --test-reporter=spec tests/browser/views.test.mjs) || fail "browser tests (views)"
srv_stop
[ $FAILS -eq 0 ] || exit 1
