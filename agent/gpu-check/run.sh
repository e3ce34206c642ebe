#!/usr/bin/env bash
# GPU check for libcandlegraph-cupti.so on real hardware (docs/gpu-validation.md).
# Needs: an NVIDIA GPU + driver, the CUDA 13 toolkit (nvcc, CUPTI), the build
# dependencies of candle-graph. Run from the repository root:
#   agent/gpu-check/run.sh [BUILD_DIR]
# Results go to $OUT/gpu-check/ when $OUT is set (else ./gpu-check-out/).
# Checks:
#  1. capture-API instrumented program: every kernel, memset and memcpy lands in
#     the span that launched it (forward: 4 kernels; backward: 1 kernel, 1
#     memset, 1 memcpy), two physical device-memory samples, no dropped records,
#     the bundle verifies.
#  2. the same work uninstrumented, with --nvtx-spans --measure step: spans come
#     from NVTX ranges and the kernels land in them (NVTX injection can crash on
#     CUPTI 13.0.0, NVIDIA/NVTX#125: a crash is reported, not hidden).
#  3. collector overhead on a 20,000-launch empty-kernel loop (launch + sync)
#     below 5 %: median of 5 runs with the collector vs 5 without.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build-gpu-check}"
RES="${OUT:-$ROOT/gpu-check-out}/gpu-check"
CUDA="${CUDA_HOME:-/usr/local/cuda}"
export PATH="$CUDA/bin:$PATH"
mkdir -p "$RES"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
status=0
log() { echo "$*" | tee -a "$RES/summary.txt"; }
bad() { log "FAIL: $*"; status=1; }
: >"$RES/summary.txt"

nvidia-smi -L >"$RES/nvidia-smi.txt" 2>&1 || { log "FAIL: no GPU visible (nvidia-smi)"; exit 1; }
log "gpu: $(head -1 "$RES/nvidia-smi.txt")"

# Build candle-graph, the collector and the check program.
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$RES/cmake.log" 2>&1 || { log "FAIL: cmake"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target candle-graph candlegraph-cupti >"$RES/build.log" 2>&1 \
  || { log "FAIL: build (see build.log)"; exit 1; }
LIBDIR="$BUILD/agent/cupti"
nvcc -O2 -c "$ROOT/agent/gpu-check/kernels.cu" -o "$W/kernels.o" >"$RES/nvcc.log" 2>&1 || { log "FAIL: nvcc"; exit 1; }
cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -I"$ROOT/lib" -I"$CUDA/include" "$ROOT/agent/gpu-check/gpu_check.c" \
  "$W/kernels.o" -L"$LIBDIR" -lcandlegraph-cupti -L"$CUDA/lib64" -lcudart -lstdc++ -ldl \
  -Wl,-rpath,"$LIBDIR" -Wl,-rpath,"$CUDA/lib64" -o "$W/gpu_check" >>"$RES/nvcc.log" 2>&1 || { log "FAIL: link"; exit 1; }
CG="$BUILD/agent/candle-graph"
export CG_CUPTI_COLLECTOR="$LIBDIR/libcandlegraph-cupti.so"

# 1. instrumented spans
if "$CG" capture --entrypoint gpu_check --step 1 --bundle "$W/b-spans" -- "$W/gpu_check" spans \
     >"$RES/capture-spans.json" 2>"$RES/capture-spans.err"; then
  cp "$W/b-spans/trace.jsonl" "$RES/trace-spans.jsonl"
  python3 - "$W/b-spans/trace.jsonl" "$RES/capture-spans.json" >>"$RES/summary.txt" 2>&1 <<'PY' || bad "span attribution (instrumented)"
import collections, json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = json.load(open(sys.argv[2]))
name = {r["id"]: r["name"] for r in recs if r["kind"] == "span_start"}
per = collections.Counter(name[r["span_id"]] for r in recs if r["kind"] == "device_interval")
print("intervals per span:", dict(per))
assert per["forward"] == 4, per           # 4 x gc_scale
assert per["backward"] == 3, per          # memset + gc_reduce + memcpy
assert all(r["backend"] == "cupti" and r["clock_id"].startswith("cupti-device-")
           for r in recs if r["kind"] == "device_interval")
mem = [r for r in recs if r["kind"] == "device_memory"]
assert len(mem) >= 2 and all("used_bytes" in m and "capacity_bytes" in m for m in mem), mem
assert out["collector"]["dropped_records"] == 0, out["collector"]
assert out["outcome"] == "complete" and out["health"]["structurally_valid"], out
print("instrumented: OK")
PY
  "$CG" verify "$W/b-spans" >"$RES/verify-spans.json" 2>&1 || bad "bundle (instrumented) does not verify"
else
  bad "capture (instrumented): $(tail -3 "$RES/capture-spans.err")"
fi

# 2. NVTX spans
if "$CG" capture --entrypoint gpu_check --step 1 --bundle "$W/b-nvtx" --nvtx-spans --measure step \
     -- "$W/gpu_check" nvtx >"$RES/capture-nvtx.json" 2>"$RES/capture-nvtx.err"; then
  cp "$W/b-nvtx/trace.jsonl" "$RES/trace-nvtx.jsonl"
  python3 - "$W/b-nvtx/trace.jsonl" >>"$RES/summary.txt" 2>&1 <<'PY' || bad "span attribution (NVTX)"
import collections, json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
spans = {r["id"]: r for r in recs if r["kind"] == "span_start"}
per = collections.Counter(spans[r["span_id"]]["name"] for r in recs if r["kind"] == "device_interval")
print("NVTX intervals per span:", dict(per))
assert [s["name"] for s in spans.values() if s["measured"]] == ["step"]
assert per["forward"] == 4 and per["backward"] == 3, per
assert recs[-1]["outcome"] == "complete", recs[-1]
print("nvtx: OK")
PY
else
  bad "capture (NVTX): $(tail -3 "$RES/capture-nvtx.err")"
fi

# 3. overhead: medians of 5 alternating runs
LOOP=20000
for i in 1 2 3 4 5; do
  "$W/gpu_check" loop $LOOP >>"$W/base.txt" || bad "baseline loop"
  CUDA_INJECTION64_PATH="$CG_CUPTI_COLLECTOR" CG_CUPTI_STATUS="$W/st$i.json" CG_CAPTURE_TRACE="$W/t$i.jsonl" \
    "$W/gpu_check" loop $LOOP >>"$W/coll.txt" || bad "collector loop"
done
cp "$W/base.txt" "$RES/loop-baseline-ns.txt"; cp "$W/coll.txt" "$RES/loop-collector-ns.txt"
[ -f "$W/st1.json" ] && cp "$W/st1.json" "$RES/loop-collector-status.json"
python3 - "$W/base.txt" "$W/coll.txt" "$W/t1.jsonl" $LOOP >>"$RES/summary.txt" 2>&1 <<'PY' || bad "collector overhead >= 5 % or loop not captured"
import json, statistics, sys
base = statistics.median(int(x) for x in open(sys.argv[1]))
coll = statistics.median(int(x) for x in open(sys.argv[2]))
n = sum(1 for l in open(sys.argv[3]) if '"device_interval"' in l)
over = (coll - base) / base * 100
print("loop: baseline %.0f ns, with collector %.0f ns, overhead %.2f %%, intervals %d" % (base, coll, over, n))
assert n == int(sys.argv[4]), "the collector did not record every launch"
assert over < 5.0
PY

[ "$status" = 0 ] && log "GPU CHECK PASSED" || log "GPU CHECK FAILED"
exit "$status"
