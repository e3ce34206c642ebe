#!/usr/bin/env bash
# bench/bundle_verify.sh — throughput of `candle-graph verify` on a bundle holding a
# ~200 MB synthetic trace, as a ratio to `sha256sum` over the same files in the same run.
#   ratio = sha256sum seconds / verify seconds   (target >= 0.9)
# Usage: bench/bundle_verify.sh [BUILD_DIR] [SIZE_MB]   (defaults: build, 200)
# Both tools read from the page cache (one warm-up run each); best of 5 runs is reported.
set -euo pipefail
BUILD="${1:-${CG_BINARY_DIR:-build}}"
MB="${2:-200}"
CG="$BUILD/agent/candle-graph"
[ -x "$CG" ] || { echo "candle-graph not built at $CG" >&2; exit 1; }
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
B="$T/bundle"
mkdir -p "$B"

python3 - "$B" "$MB" <<'PY'
import hashlib, json, os, sys
root, mb = sys.argv[1], int(sys.argv[2])
meta = {"kind": "meta", "schema": "candle-graph/trace/10", "run_id": "run-bench-1"}
line = json.dumps({"kind": "op", "span_id": "s2", "op_name": "matmul", "duration_ns": 123456,
                   "inputs": [{"shape": [1024, 1024], "dtype": "f32"}]}, separators=(",", ":")) + "\n"
target = mb * 1000 * 1000
with open(os.path.join(root, "trace.jsonl"), "w") as f:
    f.write(json.dumps(meta, separators=(",", ":")) + "\n")
    chunk = line * 4096
    written = 0
    while written < target:
        f.write(chunk); written += len(chunk)
    f.write('{"kind":"terminal","outcome":"complete","timestamp_ns":1}\n')
for name, body in [("evidence.json", '{\n  "schema": "candle-graph/evidence/4"\n}\n'), ("report.md", "# bench\n")]:
    open(os.path.join(root, name), "w").write(body)
files = []
for p in sorted(["evidence.json", "report.md", "trace.jsonl"]):
    h = hashlib.sha256(); n = 0
    with open(os.path.join(root, p), "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b: break
            h.update(b); n += len(b)
    files.append({"path": p, "bytes": n, "sha256": h.hexdigest()})
open(os.path.join(root, "bundle.json"), "w").write(json.dumps(
    {"schema": "candle-graph/bundle/1", "run_id": "run-bench-1", "files": files}, indent=2) + "\n")
PY

FILES=("$B/bundle.json" "$B/evidence.json" "$B/report.md" "$B/trace.jsonl")
best() { # best wall seconds of 5 runs of "$@"
  local b=""
  for _ in 1 2 3 4 5; do
    local s e
    s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
    b=$(python3 -c "import sys; t=float(sys.argv[2])-float(sys.argv[1]); b=sys.argv[3]; print(t if not b or t<float(b) else b)" "$s" "$e" "$b")
  done
  echo "$b"
}
"$CG" verify "$B" >/dev/null     # warm-up (page cache) + correctness
sha256sum "${FILES[@]}" >/dev/null
v=$(best "$CG" verify "$B")
s=$(best sha256sum "${FILES[@]}")
bytes=$(cat "${FILES[@]}" | wc -c)
python3 - "$v" "$s" "$bytes" <<'PY'
import sys
v, s, n = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
mb = n / 1e6
print(f"bundle_verify: {mb:.1f} MB  candle-graph verify {v:.3f} s ({mb/v:.0f} MB/s)  "
      f"sha256sum {s:.3f} s ({mb/s:.0f} MB/s)  ratio {s/v:.2f}x (target >= 0.9x)")
PY
