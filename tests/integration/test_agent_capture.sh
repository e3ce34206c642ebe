#!/usr/bin/env bash
# candle-graph capture end to end on the stand-in libcuda/libcupti
# (tests/support/cupti_stub): the stand-in cuInit injects the real collector,
# the stub program opens NVTX ranges and "launches" kernels, copies and sets.
#  1. --nvtx-spans --measure: complete capture; kernels in the right NVTX spans,
#     device memory samples, collector status as meta tags, bundle verifies,
#     signed (--sign), spooled (--spool).
#  2. the program exits 3: published as a failed capture with the reason.
#  3. the program aborts (no atexit flush, no terminal): failed capture.
#  4. an "instrumented" program that never writes $CG_CAPTURE_TRACE: failed capture.
#  5. usage errors: destination exists, --measure without --nvtx-spans.
set -euo pipefail
B="${CG_BINARY_DIR:?}"
CG="$B/agent/candle-graph"
APP="$B/agent/cupti/cg_stub_app"
if [ ! -e "$B/agent/cupti/libcandlegraph-cupti.so" ]; then
  echo "SKIP: libcandlegraph-cupti.so not built (CUPTI headers absent, see the CMake message)"
  exit 0
fi
export CG_CUPTI_LIBRARY="$B/agent/cupti/libfakecupti.so" CG_CUDA_LIBRARY="$B/agent/cupti/libfakecuda.so"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py() { python3 - "$@"; }

# 1. complete capture
"$CG" keygen --out "$T/key" >/dev/null
"$CG" capture --entrypoint demo --step 1 --bundle "$T/b1" --nvtx-spans --measure train_step \
  --sign "$T/key" --spool "$T/spool" -- "$APP" 0 >"$T/out1.json" 2>"$T/err1" || fail "capture 1: $(cat "$T/err1")"
py "$T/out1.json" "$T/b1/trace.jsonl" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
assert out["outcome"] == "complete", out
assert out["exit_status"] == 0
assert out["health"] == {"structurally_valid": True, "capture_complete": True}, out["health"]
assert out["collector"]["dropped_records"] == 0
assert out["signature"] and out["signature"].endswith("b1.sig.json")
assert "/spool/ready/" in out["spool_entry"]
recs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
meta = recs[0]
assert meta["entrypoint"] == "demo" and meta["capture_step"] == 1
tags = meta["tags"]
assert tags["cupti.dropped_records"] == "0" and tags["cupti.active"] == "true", tags
spans = {r["id"]: r for r in recs if r["kind"] == "span_start"}
name = {i: s["name"] for i, s in spans.items()}
measured = [s for s in spans.values() if s["measured"]]
assert len(measured) == 1 and measured[0]["name"] == "train_step", measured
iv = sorted((r["start_ns"], name[r["span_id"]], r["backend"], r["clock_id"], r["stream_id"])
            for r in recs if r["kind"] == "device_interval")
assert iv == [(1000, "demo", "cupti", "cupti-device-0", "7"),
              (2000, "forward", "cupti", "cupti-device-0", "7"),
              (3000, "backward", "cupti", "cupti-device-0", "7"),
              (4000, "backward", "cupti", "cupti-device-0", "8")], iv
mem = [r for r in recs if r["kind"] == "device_memory"]
assert len(mem) == 2 and all("capacity_bytes" in m and "used_bytes" in m for m in mem), mem
assert recs[-1]["kind"] == "terminal" and recs[-1]["outcome"] == "complete"
PY
"$CG" verify "$T/b1" >/dev/null || fail "bundle 1 does not verify"
"$CG" verify-signature "$T/b1" --public-key "$T/key.pub" >/dev/null || fail "signature 1"
entry="$(ls "$T/spool/ready")"
[ -f "$T/spool/ready/$entry/bundle/bundle.json" ] || fail "spool entry has no bundle"
[ -f "$T/spool/ready/$entry/bundle.sig.json" ] || fail "spool entry has no signature"
cmp "$T/b1/bundle.json" "$T/spool/ready/$entry/bundle/bundle.json" || fail "spooled bundle differs"

# 2. non-zero exit: failed capture, still published
"$CG" capture --entrypoint demo --step 1 --bundle "$T/b2" --nvtx-spans --measure train_step \
  -- "$APP" 3 >"$T/out2.json" 2>"$T/err2" || fail "capture 2: $(cat "$T/err2")"
grep -q "published .* as a failed capture: command exited with status 3" "$T/err2" || fail "no failed-capture note"
py "$T/out2.json" "$T/b2/trace.jsonl" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
assert out["outcome"] == "failed" and out["exit_status"] == 3, out
recs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert recs[-1] == {"kind": "terminal", "outcome": "failed", "timestamp_ns": recs[-1]["timestamp_ns"],
                    "reason": "command exited with status 3"}, recs[-1]
assert sum(r["kind"] == "device_interval" for r in recs) == 4
PY
"$CG" verify "$T/b2" >/dev/null || fail "failed bundle 2 does not verify"

# 3. abort: no exit handlers ran, the trace has no terminal
"$CG" capture --entrypoint demo --step 1 --bundle "$T/b3" --nvtx-spans -- "$APP" 0 crash \
  >"$T/out3.json" 2>"$T/err3" || fail "capture 3: $(cat "$T/err3")"
py "$T/out3.json" "$T/b3/trace.jsonl" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
assert out["outcome"] == "failed" and out["exit_status"] == 134, out
recs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert recs[-1]["kind"] == "terminal" and recs[-1]["reason"] == "command was killed by signal 6", recs[-1]
PY

# 4. a program that writes no trace
"$CG" capture --entrypoint train --step 2 --infer --bundle "$T/b4" -- true >"$T/out4.json" 2>"$T/err4" \
  || fail "capture 4: $(cat "$T/err4")"
py "$T/out4.json" "$T/b4/trace.jsonl" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
assert out["outcome"] == "failed", out
recs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert recs[0]["phase"] == "infer" and recs[0]["capture_step"] == 2
assert "without writing a trace" in recs[-1]["reason"], recs[-1]
PY

# 5. refusals
if "$CG" capture --entrypoint demo --step 1 --bundle "$T/b1" -- true 2>"$T/err5"; then fail "existing destination accepted"; fi
grep -q "already exists" "$T/err5" || fail "no 'already exists' message"
set +e
"$CG" capture --entrypoint demo --step 1 --bundle "$T/b6" --measure x -- true 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "--measure without --nvtx-spans: exit $rc, want 2"
[ ! -e "$T/b6" ] || fail "usage error left a bundle"
echo "PASS"
