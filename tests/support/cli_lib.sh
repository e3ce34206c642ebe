# cli_lib.sh — shared preamble of the CLI integration tests that drive
# candle-graph against its fixtures (test_bundle_cli.sh,
# test_cli_evidence_commands.sh). Source it after `set -euo pipefail`; it sets
# CG (the CLI) and SRC (the source root), makes a temp dir T removed on exit
# and enters it, and defines:
#   fail MSG               print "FAIL: MSG" and exit 1
#   json FILE KEY.PATH     print one value of a JSON file
#   edit_evidence DIR PY   run the Python statements PY on `ev` (DIR's
#                          evidence.json, parsed), write it back pretty and
#                          re-declare its sha256/bytes in DIR/bundle.json
CG="${CG_BINARY_DIR:?}/agent/candle-graph"
SRC="${CG_SOURCE_DIR:-$(pwd)}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d[k]
print(d)' "$1" "$2"; }
edit_evidence() {
  python3 - "$1" "$2" <<'PY'
import hashlib, json, os, sys
root = sys.argv[1]
ev = json.load(open(os.path.join(root, "evidence.json")))
exec(sys.argv[2])
raw = (json.dumps(ev, indent=2, ensure_ascii=False) + "\n").encode()
open(os.path.join(root, "evidence.json"), "wb").write(raw)
m = json.load(open(os.path.join(root, "bundle.json")))
for f in m["files"]:
    if f["path"] == "evidence.json":
        f["sha256"], f["bytes"] = hashlib.sha256(raw).hexdigest(), len(raw)
open(os.path.join(root, "bundle.json"), "w").write(json.dumps(m, indent=2) + "\n")
PY
}
cd "$T"
