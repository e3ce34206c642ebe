#!/usr/bin/env bash
# Real-size captures (issue 14): every command on generated traces of 10k, 100k, 1M
# and 5M records, each command's wall time as a ratio to the crate's JSON stack
# (shared/peers/serde-trace-reader, measured in the same run on the same file) and
# its peak RSS as a ratio to the trace file, plus time per record relative to the
# 100k run. Prints one table; nothing is asserted (timing never is).
#
# usage: bench/scale/run.sh [BUILD_DIR]                      (default: build)
# env:   CG_SCALE_SIZES   record counts (default "10000 100000 1000000 5000000")
#        CG_SCALE_MEM_GB  address-space limit per command in GiB (default 16): a
#                         command that needs more fails and is reported as such
#        CG_SCALE_CMDS    commands to run (default: all below)
#        CG_SCALE_PEER    a serde-trace-reader binary already built (skips the cargo build)
# Columns: wall seconds, their ratio to the peer's wall seconds, CPU seconds
# (user + system) and their ratio to the peer's (steadier than wall time on a
# loaded machine), peak RSS and its ratio to the file, ns per record (wall) and
# its ratio to the 100k run.
set -uo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CG="$BUILD/agent/candle-graph"
GEN="$BUILD/bench/trace_ingest/bench_gen_trace"
PH="$BUILD/bench/trace_ingest/bench_parse_health"
SIZES="${CG_SCALE_SIZES:-10000 100000 1000000 5000000}"
MEM_GB="${CG_SCALE_MEM_GB:-16}"
CMDS="${CG_SCALE_CMDS:-parse+health summary import overview query report view verify-semantic pack export compare}"
for exe in "$CG" "$GEN" "$PH"; do
  [ -x "$exe" ] || { echo "scale: $exe is not built (cmake --build $BUILD)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "scale: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
TMP="$(mktemp -d "${TMPDIR:-/tmp}/cg-scale.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# The peer, built outside shared/ (read-only in CI) from Debian's crate sources.
PEER="$TMP/peer/release/serde-trace-reader"
PEER_DIR="$ROOT/../shared/peers/serde-trace-reader"
if [ -n "${CG_SCALE_PEER:-}" ]; then
  PEER="$CG_SCALE_PEER"
  [ -x "$PEER" ] || { echo "scale: CG_SCALE_PEER=$PEER is not executable" >&2; exit 1; }
elif [ -d "$PEER_DIR" ] && command -v cargo >/dev/null; then
  mkdir -p "$TMP/cargo"
  printf '[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "/usr/share/cargo/registry"\n[net]\noffline = true\n' >"$TMP/cargo/config.toml"
  (cd "$PEER_DIR" && CARGO_HOME="$TMP/cargo" CARGO_TARGET_DIR="$TMP/peer" cargo build --release -q 2>"$TMP/peer.log") ||
    { echo "scale: serde-trace-reader did not build (see below); ratios to it are not printed" >&2; cat "$TMP/peer.log" >&2; PEER=""; }
else
  echo "scale: serde-trace-reader peer missing (no cargo or no shared/peers); ratios to it are not printed" >&2
  PEER=""
fi

# run NAME CMD…: best-of-one wall seconds, CPU seconds and max RSS (KiB) in W, C
# and R; W="-" on failure.
run() {
  local name="$1" t0 t1
  shift
  t0=$(date +%s%N)
  if (ulimit -v $((MEM_GB * 1024 * 1024)); /usr/bin/time -f '%M %U %S' -o "$TMP/rss" "$@" >/dev/null 2>"$TMP/err"); then
    t1=$(date +%s%N)
    W=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    R=$(tail -n 1 "$TMP/rss" | cut -d' ' -f1)
    C=$(tail -n 1 "$TMP/rss" | awk '{ printf "%.2f", $2 + $3 }')
  else
    W="-"; R="-"; C="-"
    echo "  $name failed: $(tail -n 2 "$TMP/err" | tr '\n' ' ')" >&2
  fi
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, memory limit per command ${MEM_GB} GiB"
printf '%-9s %-16s %9s %9s %8s %7s %10s %9s %12s\n' records command seconds x_serde cpu_s x_cpu rss_MiB x_file ns_per_rec
declare -A per100k
for n in $SIZES; do
  trace="$TMP/t$n.jsonl"
  "$GEN" --records "$n" --out "$trace"
  bytes=$(stat -c %s "$trace")
  peer_s=""; peer_c=""
  if [ -n "$PEER" ]; then run peer "$PEER" "$trace"; peer_s="$W"; peer_c="$C"; fi
  printf '%-9s %-16s %9s %9s %8s %7s %10s %9s %12s   (file %d MiB)\n' "$n" serde-peer "${peer_s:--}" 1.00 "${peer_c:--}" 1.00 - - - $((bytes >> 20))
  rm -rf "$TMP/bundle" "$TMP/out"; mkdir -p "$TMP/out"
  "$CG" report "$trace" --bundle "$TMP/bundle" >/dev/null 2>&1 || true
  for cmd in $CMDS; do
    case "$cmd" in
      parse+health) run "$cmd" "$PH" "$trace" ;;
      summary) run "$cmd" "$CG" summary "$trace" ;;
      import) run "$cmd" "$CG" import "$trace" -o "$TMP/out/import.json" ;;
      overview) run "$cmd" "$CG" overview "$trace" ;;
      query) run "$cmd" "$CG" query "$trace" --kind spans ;;
      report) rm -rf "$TMP/out/b"; run "$cmd" "$CG" report "$trace" --bundle "$TMP/out/b" ;;
      view) run "$cmd" "$CG" view "$trace" --output "$TMP/out/v.html" ;;
      verify-semantic) if [ -d "$TMP/bundle" ]; then run "$cmd" "$CG" verify "$TMP/bundle" --semantic; else W="-"; R="-"; fi ;;
      pack) if [ -d "$TMP/bundle" ]; then run "$cmd" "$CG" pack "$TMP/bundle" -o "$TMP/out/b.tar.zst"; else W="-"; R="-"; fi ;;
      export) run "$cmd" "$CG" export "$trace" --format chrome -o "$TMP/out/chrome.json" ;;
      compare) if [ -d "$TMP/bundle" ]; then run "$cmd" "$CG" compare --baseline "$TMP/bundle" --candidate "$TMP/bundle"; else W="-"; R="-"; fi ;;
      *) echo "scale: unknown command $cmd" >&2; continue ;;
    esac
    xs="-"; xc="-"; xf="-"; nspr="-"; mib="-"
    if [ "$W" != "-" ]; then
      [ -n "$peer_s" ] && [ "$peer_s" != "-" ] && xs=$(awk -v a="$W" -v b="$peer_s" 'BEGIN { printf "%.2f", a / b }')
      [ -n "$peer_c" ] && [ "$peer_c" != "-" ] && xc=$(awk -v a="$C" -v b="$peer_c" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
      xf=$(awk -v r="$R" -v f="$bytes" 'BEGIN { printf "%.2f", r * 1024 / f }')
      mib=$((R / 1024))
      nspr=$(awk -v w="$W" -v n="$n" 'BEGIN { printf "%.0f", w * 1e9 / n }')
      [ "$n" = 100000 ] && per100k[$cmd]="$nspr"
      [ -n "${per100k[$cmd]:-}" ] && [ "$n" != 100000 ] && nspr="$nspr ($(awk -v a="$nspr" -v b="${per100k[$cmd]}" 'BEGIN { printf "%.2fx", a / b }'))"
    fi
    printf '%-9s %-16s %9s %9s %8s %7s %10s %9s %12s\n' "$n" "$cmd" "$W" "$xs" "$C" "$xc" "$mib" "$xf" "$nspr"
  done
  if [ -f "$TMP/out/v.html" ]; then echo "  viewer.html: $(( $(stat -c %s "$TMP/out/v.html") >> 10 )) KiB"; fi
  rm -f "$trace"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
