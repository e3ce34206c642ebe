#!/usr/bin/env bash
# candle-graph capture end to end on the stand-in libcuda/libcupti
# (tests/support/cupti_stub): the stand-in cuInit injects the real collector,
# the stub program opens NVTX ranges and "launches" kernels, copies and sets.
#  0. exported symbols: InitializeInjection and the capture API only.
#  1. --nvtx-spans --measure: complete capture; kernels in the right NVTX spans,
#     device memory samples, collector status as meta tags, bundle verifies,
#     signed (--sign), spooled (--spool).
#  1b. dropped records: stderr, tag, gap, device_timing partial in the evidence.
#  2. the program exits 3: published as a failed capture with the reason.
#  3. the program aborts (no atexit flush, no terminal): failed capture.
#  4. an "instrumented" program that never writes $CG_CAPTURE_TRACE: failed capture.
#  4b. SIGTERM to capture: forwarded to the program, failed capture published.
#  5. usage errors: destination exists, --measure without --nvtx-spans.
#  6. --nsys with a fake nsys: nsight/ artifacts + capture-manifest.json bound.
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

# 0. the collector exports only InitializeInjection and the capture API
if command -v nm >/dev/null; then
  extra="$(nm -D --defined-only "$B/agent/cupti/libcandlegraph-cupti.so" | awk '{print $3}' \
    | grep -v -E '^(InitializeInjection|cg_session_[a-z0-9_]+|cg_profile_run_[a-z0-9_]+|cg_capture_selector_[a-z0-9_]+|cg_span_wire_id|cg_tensor_stats_f32)$' || true)"
  [ -z "$extra" ] || fail "libcandlegraph-cupti.so exports more than the injection entry and the capture API: $extra"
  nm -D --defined-only "$B/agent/cupti/libcandlegraph-cupti.so" | grep -q " T InitializeInjection$" || fail "no InitializeInjection"
  nm -D --defined-only "$B/agent/cupti/libcandlegraph-cupti.so" | grep -q " T cg_session_open$" || fail "no cg_session_open"
fi

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

# 1b. dropped records are never silent: stderr line, meta tag, capture gap,
#     device_timing coverage partial → the evidence's nested_device_time gap.
"$CG" capture --entrypoint demo --step 1 --bundle "$T/b1d" --nvtx-spans --measure train_step \
  -- "$APP" 0 drop >"$T/out1d.json" 2>"$T/err1d" || fail "capture 1d: $(cat "$T/err1d")"
grep -q "candle-graph-cupti: 5 activity records dropped" "$T/err1d" || fail "no dropped line on stderr"
py "$T/out1d.json" "$T/b1d" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
b = sys.argv[2]
assert out["collector"]["dropped_records"] == 5, out["collector"]
assert "5 CUPTI activity records were dropped: device timing is incomplete" in out["gaps"], out["gaps"]
meta = json.loads(open(b + "/trace.jsonl").readline())
assert meta["tags"]["cupti.dropped_records"] == "5", meta["tags"]
assert meta["capture_contract"]["device_timing"] == "partial", meta["capture_contract"]
ev = json.load(open(b + "/evidence.json"))
assert ev["capabilities"]["nested_device_time"]["level"] == "partial", ev["capabilities"]["nested_device_time"]
assert any(g == "producer declared partial device timing" for g in ev["gaps"]), ev["gaps"]
PY
py "$T/b1/trace.jsonl" "$T/b1/evidence.json" <<'PY'
import json, sys
meta = json.loads(open(sys.argv[1]).readline())
assert meta["capture_contract"]["device_timing"] == "complete", meta["capture_contract"]
ev = json.load(open(sys.argv[2]))
assert ev["capabilities"]["nested_device_time"]["level"] == "complete", ev["capabilities"]["nested_device_time"]
PY

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

# 4b. SIGTERM to capture reaches the program; the run is still published (failed)
"$CG" capture --entrypoint demo --step 1 --bundle "$T/b9" -- sleep 30 >"$T/out9.json" 2>"$T/err9" &
cpid=$!
sleep 0.5
kill -TERM "$cpid"
set +e; wait "$cpid"; crc=$?; set -e
[ "$crc" = 0 ] || fail "capture after SIGTERM exited $crc: $(cat "$T/err9")"
py "$T/out9.json" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
assert out["outcome"] == "failed" and out["exit_status"] == 143, out
PY
grep -q "killed by signal 15" "$T/b9/trace.jsonl" || fail "no signal reason in the failed trace"

# 5. refusals
if "$CG" capture --entrypoint demo --step 1 --bundle "$T/b1" -- true 2>"$T/err5"; then fail "existing destination accepted"; fi
grep -q "already exists" "$T/err5" || fail "no 'already exists' message"
set +e
"$CG" capture --entrypoint demo --step 1 --bundle "$T/b6" --measure x -- true 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "--measure without --nvtx-spans: exit $rc, want 2"
[ ! -e "$T/b6" ] || fail "usage error left a bundle"
# 6. --nsys (a fake nsys: runs the program, writes a raw report, stats copies
#    fixture CSVs and leaves a .sqlite): the instrumented toy_train writes the
#    host trace, nsight/ holds the raw report, the five CSVs and a
#    capture-manifest.json that binds ("bound") to the trace.
mkdir -p "$T/bin"
cat >"$T/bin/nsys" <<'NSYS'
#!/usr/bin/env bash
set -u
FIX="${FAKE_NSYS_FIXTURES:?}"
case "$1" in
  --version) echo "NVIDIA Nsight Systems version 2025.3.1-fake" ;;
  profile)
    shift; out=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --output) out="$2"; shift 2 ;;
        --trace|--sample|--cpuctxsw|--force-overwrite) shift 2 ;;
        *) break ;;
      esac
    done
    [ -z "${CUDA_INJECTION64_PATH:-}" ] || { echo "fake nsys: the collector was injected beside nsys" >&2; exit 99; }
    "$@"; rc=$?
    printf 'fake nsys raw report\n' >"$out.nsys-rep"
    exit $rc ;;
  stats)
    shift; rep=""; out=""; report=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --report) report="$2"; shift 2 ;;
        --output) out="$2"; shift 2 ;;
        --format|--force-export) shift 2 ;;
        *) rep="$1"; shift ;;
      esac
    done
    [ -f "$rep" ] || exit 1
    cp "$FAKE_NSYS_FIXTURES/report_$report.csv" "${out}_$report.csv"
    : >"${out}.sqlite" ;;
  *) exit 2 ;;
esac
NSYS
chmod +x "$T/bin/nsys"
TOY="$B/agent/toy_train"
if [ -x "$TOY" ]; then
  PATH="$T/bin:$PATH" FAKE_NSYS_FIXTURES="${CG_SOURCE_DIR:-$(pwd)}/tests/fixtures/nsight/spec_fixture_bound/input" \
    "$CG" capture --entrypoint toy::train::update --step 3 --bundle "$T/b7" --nsys \
    -- sh -c 'exec "$0" --out "$CG_CAPTURE_TRACE" --step 3 --contract' "$TOY" >"$T/out7.json" 2>"$T/err7" \
    || fail "capture --nsys: $(cat "$T/err7")"
  py "$T/out7.json" "$T/b7" <<'PY'
import json, os, sys
out = json.load(open(sys.argv[1]))   # stdout is only our JSON (program output went to stderr)
b = sys.argv[2]
assert out["outcome"] == "complete", out
files = sorted(os.listdir(b + "/nsight"))
assert files == ["capture-manifest.json", "capture.nsys-rep", "capture_cuda_api_sum.csv",
                 "capture_cuda_gpu_kern_sum.csv", "capture_cuda_gpu_mem_time_sum.csv",
                 "capture_cuda_gpu_trace.csv", "capture_nvtx_gpu_proj_trace.csv"], files
m = json.load(open(b + "/nsight/capture-manifest.json"))
assert m["schema"] == "candle-graph/nsight-capture/1" and m["tool"] == {"name": "nsys", "version": "2025.3.1-fake"}
assert len(m["commands"]) == 6 and " profile " in m["commands"][0]
assert [a["path"] for a in m["artifacts"]] == files[1:]
meta = json.loads(open(b + "/trace.jsonl").readline())
assert m["run"]["id"] == meta["run_id"] and m["correlation"]["id"] == meta["correlation_id"]
assert meta["tags"]["capture.collector"] == "nsys"
ev = json.load(open(b + "/evidence.json"))
assert ev["gpu"]["status"] == "available", ev["gpu"]["status"]
assert ev["gpu"]["provenance"]["binding"] == "bound", ev["gpu"]["provenance"]
PY
  "$CG" verify "$T/b7" >/dev/null || fail "nsys bundle does not verify"
else
  echo "note: toy_train not built: --nsys section skipped"
fi
set +e
PATH="$T/bin:$PATH" "$CG" capture --entrypoint demo --step 1 --bundle "$T/b8" --nsys --nvtx-spans -- true 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "--nsys with --nvtx-spans: exit $rc, want 2"
echo "PASS"
