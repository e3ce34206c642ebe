#!/usr/bin/env bash
# Review checks of CLI input loading against spec §7 (bundles-comparison):
#  - a file whose parent directory holds bundle.json loads the verified bundle of
#    that parent (not only trace.jsonl: any file beside bundle.json, e.g. evidence.json);
#  - a raw directory with evidence.json but no bundle.json is still refused.
set -euo pipefail
CG="${CG_BINARY_DIR:?}/agent/candle-graph"
SRC="${CG_SOURCE_DIR:-$(pwd)}"
TRACE="$SRC/tests/fixtures/bundles/semantic_good_trace_only/trace.jsonl"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
kind() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["input"]["kind"], d["input"]["bundle_root"])' "$1"; }
cd "$T"
"$CG" report "$TRACE" --bundle b >/dev/null

for f in trace.jsonl evidence.json report.md bundle.json; do
  "$CG" summary "b/$f" -o "s_$f.json" 2>err.txt || fail "summary b/$f: $(cat err.txt)"
  [ "$(kind "s_$f.json")" = "verified_bundle b" ] || fail "b/$f did not load the verified bundle: $(kind "s_$f.json")"
done

# raw: evidence.json beside a trace, no bundle.json → refused
mkdir raw && cp "$TRACE" raw/trace.jsonl && cp b/evidence.json raw/evidence.json
if "$CG" summary raw/trace.jsonl 2>err.txt >/dev/null; then fail "raw dir with evidence.json accepted"; fi
grep -q "refusing to discard unverified GPU evidence" err.txt || fail "raw refusal message: $(cat err.txt)"
echo "PASS"
