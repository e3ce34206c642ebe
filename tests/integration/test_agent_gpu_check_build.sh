#!/usr/bin/env bash
# Build check of the prepared GPU check (agent/gpu-check): run.sh parses, the
# CUDA kernels compile with nvcc and the host program links against
# libcandlegraph-cupti.so and libcudart. Running it needs a GPU
# (docs/gpu-validation.md); without one the program must fail cleanly (exit 2
# with a CUDA error), never crash.
set -euo pipefail
B="${CG_BINARY_DIR:?}"
SRC="${CG_SOURCE_DIR:-$(pwd)}"
CUDA="${CUDA_HOME:-/usr/local/cuda}"
bash -n "$SRC/agent/gpu-check/run.sh"
if [ ! -x "$CUDA/bin/nvcc" ] || [ ! -e "$B/agent/cupti/libcandlegraph-cupti.so" ]; then
  echo "SKIP: nvcc or libcandlegraph-cupti.so absent: only run.sh was checked"
  exit 0
fi
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
"$CUDA/bin/nvcc" -O2 -c "$SRC/agent/gpu-check/kernels.cu" -o "$T/kernels.o"
cc -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -I"$SRC/lib" -I"$CUDA/include" \
  "$SRC/agent/gpu-check/gpu_check.c" "$T/kernels.o" -L"$B/agent/cupti" -lcandlegraph-cupti \
  -L"$CUDA/lib64" -lcudart -lstdc++ -ldl -Wl,-rpath,"$B/agent/cupti" -Wl,-rpath,"$CUDA/lib64" -o "$T/gpu_check"
if nvidia-smi -L >/dev/null 2>&1; then
  echo "a GPU is visible: run agent/gpu-check/run.sh for the hardware check"
else
  set +e
  "$T/gpu_check" loop 1 >/dev/null 2>"$T/err"; rc=$?
  set -e
  [ "$rc" = 2 ] || { echo "FAIL: gpu_check without a GPU exited $rc (want 2)"; cat "$T/err"; exit 1; }
fi
echo PASS
