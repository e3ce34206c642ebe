#!/usr/bin/env bash
# Real-size captures (issue 14): every command on generated traces of 10k, 100k, 1M
# and 5M records, each command's wall time as a ratio to the crate's JSON stack
# (shared/peers/serde-trace-reader, measured in the same run on the same file) and
# its peak RSS as a ratio to the trace file, plus time per record relative to the
# 100k run. Prints one table; nothing is asserted (timing never is).
#
# Commands: parse+health (bench_parse_health), summary, import, overview, query,
# report, view, export (on the trace); verify --semantic, pack, compare (on the
# size's `report` bundle); series --bundle over CG_SCALE_SERIES_BUNDLES bundles of
# the size (the report bundle plus `report`s of copies of the trace whose meta
# record says capture_step 2, 3, … and run_id bench-run-2, …); upload of the
# report bundle to a fresh candle-graph-server per size (embedded PostgreSQL,
# default limits, loopback, data under this run's temporary directory, stopped
# afterwards). The upload row is the CLI process (pack + send + waiting for the
# server's answer); the server's own figures (its request time from its log, its
# peak RSS) are printed on the line after it.
#
# usage: bench/scale/run.sh [BUILD_DIR]                      (default: build)
# env:   CG_SCALE_SIZES   record counts (default "10000 100000 1000000 5000000")
#        CG_SCALE_MEM_GB  address-space limit per command in GiB (default 16): a
#                         command that needs more fails and is reported as such
#        CG_SCALE_CMDS    commands to run (default: all below)
#        CG_SCALE_PEER    a serde-trace-reader binary already built (skips the cargo build)
#        CG_SCALE_TRACE_<N>  an existing trace of N records to use instead of generating one
#                         (kept; e.g. CG_SCALE_TRACE_1000000=/data/t1000000.jsonl)
#        CG_SCALE_SERIES_BUNDLES  bundles in the series row (default 3; each extra one is
#                         one more `report` of the size, not timed)
#        CG_SCALE_REPEAT  runs of each command (default 1). With N > 1 the peer runs right
#                         before each of them (interleaved, so both see the same machine) and
#                         a row gives medians: wall, the median of the per-pair ratios to the
#                         peer, CPU, and the largest peak RSS; the serde-peer row gives the
#                         median of all the size's peer runs
# Columns: wall seconds, their ratio to the peer's wall seconds, CPU seconds
# (user + system) and their ratio to the peer's (steadier than wall time on a
# loaded machine), peak RSS and its ratio to the file, ns per record (wall) and
# its ratio to the 100k run; then (added in session 6) system CPU seconds, the
# number of runs, the min..max of the wall seconds and of the ratio to the peer
# over them, and user CPU ns per record with its ratio to the 100k run.
#
# System time is where this VM's cost of fresh memory lands: its free memory is
# handed back to the host (virtio-balloon free page reporting), and the first
# touch of such a page (zeroing a new heap page, copying into a new page-cache
# page) waits for the host, 1-50 us a page depending on the host's load. A
# command that needs GBs of fresh memory (report's 3.9 GB bundle stays cached)
# then takes 2-3x its usual time, so single runs are bimodal: use
# CG_SCALE_REPEAT and the user-time column (docs/benchmarks.md, Session 6).
# Before each run the previous command's outputs are deleted and synced, so no
# writeback of theirs overlaps it.
set -uo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CG="$BUILD/agent/candle-graph"
GEN="$BUILD/bench/trace_ingest/bench_gen_trace"
PH="$BUILD/bench/trace_ingest/bench_parse_health"
SIZES="${CG_SCALE_SIZES:-10000 100000 1000000 5000000}"
MEM_GB="${CG_SCALE_MEM_GB:-16}"
SERVER="$BUILD/server/candle-graph-server"
KNOWN_CMDS="parse+health summary import overview query report view verify-semantic pack export compare series upload"
CMDS="${CG_SCALE_CMDS:-$KNOWN_CMDS}"
N_SERIES="${CG_SCALE_SERIES_BUNDLES:-3}"
REPEAT="${CG_SCALE_REPEAT:-1}"
case "$REPEAT" in ''|*[!0-9]*|0) echo "scale: CG_SCALE_REPEAT must be a positive integer" >&2; exit 1 ;; esac
for exe in "$CG" "$GEN" "$PH"; do
  [ -x "$exe" ] || { echo "scale: $exe is not built (cmake --build $BUILD)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "scale: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
case " $CMDS " in
  *" upload "*)
    [ -x "$SERVER" ] || { echo "scale: $SERVER is not built (needed by upload)" >&2; exit 1; }
    for t in curl jq python3; do command -v "$t" >/dev/null || { echo "scale: $t is missing (needed by upload)" >&2; exit 1; }; done ;;
esac
TMP="$(mktemp -d --tmpdir cg-scale.XXXXXX)"
chmod 755 "$TMP" # the server's embedded PostgreSQL runs below it
SRV_PID=""
stop_server() {
  [ -n "$SRV_PID" ] && { kill -TERM "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; }
  SRV_PID=""
}
trap 'stop_server; rm -rf "$TMP"' EXIT

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

# run NAME CMD…: one run's wall seconds, CPU seconds (user + system), system
# seconds and max RSS (KiB) in W, C, S and R; W="-" on failure.
run() {
  local name="$1" t0 t1
  shift
  t0=$(date +%s%N)
  if (ulimit -v $((MEM_GB * 1024 * 1024)); /usr/bin/time -f '%M %U %S' -o "$TMP/rss" "$@" >/dev/null 2>"$TMP/err"); then
    t1=$(date +%s%N)
    W=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    R=$(tail -n 1 "$TMP/rss" | cut -d' ' -f1)
    C=$(tail -n 1 "$TMP/rss" | awk '{ printf "%.2f", $2 + $3 }')
    S=$(tail -n 1 "$TMP/rss" | awk '{ printf "%.2f", $3 }')
  else
    W="-"; R="-"; C="-"; S="-"
    echo "  $name failed: $(tail -n 2 "$TMP/err" | tr '\n' ' ')" >&2
  fi
}

# start_server DIR: a fresh candle-graph-server with its data in DIR on a free
# loopback port; sets URL, TOKEN and SRV_PID (URL empty when it did not start).
start_server() {
  local dir="$1" port
  mkdir -p "$dir/data"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$SERVER" serve --data-dir "$dir/data" --listen "127.0.0.1:$port" --require-signature no >"$dir/server.log" 2>&1 &
  SRV_PID=$!
  URL="http://127.0.0.1:$port"
  for _ in $(seq 240); do curl -fsS "$URL/readyz" >/dev/null 2>&1 && break; sleep 0.25; done
  TOKEN=$("$SERVER" admin bootstrap --data-dir "$dir/data" 2>/dev/null | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
  if [ -z "$TOKEN" ]; then
    echo "  server did not start: $(tail -n 2 "$dir/server.log" | tr '\n' ' ')" >&2
    stop_server; URL=""
  fi
}

# series_bundles N: bundles 2..N of the series row next to $TMP/bundle (capture
# step 1): the trace with its meta record's capture_step and run_id changed,
# reported; sets SERIES (the --bundle arguments), empty when one failed.
series_bundles() {
  local k v
  SERIES=(--bundle "$TMP/bundle")
  for k in $(seq 2 "$N_SERIES"); do
    v="$TMP/series/t$k.jsonl"
    mkdir -p "$TMP/series"
    sed '1s/"run_id":"bench-run-1"/"run_id":"bench-run-'"$k"'"/; 1s/"capture_step":1,/"capture_step":'"$k"',/' "$trace" >"$v"
    if ! head -n 1 "$v" | grep -q '"capture_step":'"$k"','; then
      echo "  series: the generator's meta record has no capture_step 1 to change" >&2; SERIES=(); return
    fi
    "$CG" report "$v" --bundle "$TMP/series/b$k" >/dev/null 2>&1 || { echo "  series: report of $v failed" >&2; SERIES=(); return; }
    rm -f "$v"
    SERIES+=(--bundle "$TMP/series/b$k")
  done
}

# stats V…: "median min max" of the numbers given ("- - -" when none).
stats() {
  printf '%s\n' "$@" | grep -v '^-$' | sort -g | awk '
    { v[NR] = $1 }
    END {
      if (!NR) { print "- - -"; exit }
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      print m, v[1], v[NR]
    }'
}

# fresh_out: the previous command's outputs deleted and the deletion synced.
fresh_out() {
  rm -rf "$TMP/out"
  mkdir -p "$TMP/out"
  sync
}

# run_cmd CMD: one run of the row CMD (W="-" when it cannot run); upload starts
# a fresh server (stopped by the caller) and notes its figures in SRV_LINE.
run_cmd() {
  case "$1" in
    parse+health) run "$1" "$PH" "$trace" ;;
    summary) run "$1" "$CG" summary "$trace" ;;
    import) run "$1" "$CG" import "$trace" -o "$TMP/out/import.json" ;;
    overview) run "$1" "$CG" overview "$trace" ;;
    query) run "$1" "$CG" query "$trace" --kind spans ;;
    report) run "$1" "$CG" report "$trace" --bundle "$TMP/out/b" ;;
    view)
      run "$1" "$CG" view "$trace" --output "$TMP/out/v.html"
      [ -f "$TMP/out/v.html" ] && VIEWER_KIB=$(($(stat -c %s "$TMP/out/v.html") >> 10)) ;;
    verify-semantic) if [ -d "$TMP/bundle" ]; then run "$1" "$CG" verify "$TMP/bundle" --semantic; else W="-"; fi ;;
    pack) if [ -d "$TMP/bundle" ]; then run "$1" "$CG" pack "$TMP/bundle" -o "$TMP/out/b.tar.zst"; else W="-"; fi ;;
    export) run "$1" "$CG" export "$trace" --format chrome -o "$TMP/out/chrome.json" ;;
    compare) if [ -d "$TMP/bundle" ]; then run "$1" "$CG" compare --baseline "$TMP/bundle" --candidate "$TMP/bundle"; else W="-"; fi ;;
    series) if [ ${#SERIES[@]} -gt 0 ]; then run "$1" "$CG" series "${SERIES[@]}"; else W="-"; fi ;;
    upload)
      W="-"; URL=""; SRV_LINE=""
      rm -rf "$TMP/srv"
      [ -d "$TMP/bundle" ] && start_server "$TMP/srv"
      [ -n "$URL" ] && CANDLE_GRAPH_TOKEN="$TOKEN" run "$1" "$CG" upload "$TMP/bundle" --server "$URL" --retries 0
      if [ -n "$SRV_PID" ]; then
        local hwm req
        hwm=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$SRV_PID/status")
        req=$(jq -Rr 'fromjson? | select(.msg == "request" and .method == "POST" and .path == "/bundles") | "\(.status) \(.ms)"' \
          "$TMP/srv/server.log" | awk '{ printf "%s%s in %.2f s", (NR > 1 ? ", " : ""), $1, $2 / 1000 }')
        SRV_LINE="POST /bundles ${req:-not logged}; server peak RSS $((hwm / 1024)) MiB"
      fi ;;
  esac
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 <= 0) print "-"; else printf "%.2f", a / b }'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, memory limit per command ${MEM_GB} GiB, runs per command ${REPEAT}"
REPORTED=/sys/module/page_reporting/parameters/reported_kib
# the guest's free memory handed back to the host: what makes sys_s vary (see the header)
[ -r "$REPORTED" ] && echo "free page reporting to the host: on, $(($(cat "$REPORTED") >> 20)) GiB reported since boot"
printf '%-9s %-16s %9s %9s %8s %7s %10s %9s %12s %7s %4s %15s %11s %14s\n' records command seconds x_serde cpu_s x_cpu rss_MiB x_file ns_per_rec sys_s runs s_min..max x_min..max usr_ns_rec
declare -A per100k usr100k
for n in $SIZES; do
  trace_var="CG_SCALE_TRACE_$n"
  trace="${!trace_var:-$TMP/t$n.jsonl}"
  [ -n "${!trace_var:-}" ] || "$GEN" --records "$n" --out "$trace"
  bytes=$(stat -c %s "$trace")
  PEER_W=(); PEER_C=(); PEER_S=()
  # run_peer: one peer run, its figures in ps/pc and appended to the size's lists
  run_peer() {
    ps="-"; pc="-"
    [ -n "$PEER" ] || return 0
    run peer "$PEER" "$trace"
    ps="$W"; pc="$C"
    PEER_W+=("$W"); PEER_C+=("$C"); PEER_S+=("$S")
  }
  run_peer; peer_s="$ps"; peer_c="$pc"
  rm -rf "$TMP/bundle" "$TMP/out" "$TMP/series" "$TMP/srv"; mkdir -p "$TMP/out"
  "$CG" report "$trace" --bundle "$TMP/bundle" >/dev/null 2>&1 || true
  SERIES=()
  case " $CMDS " in *" series "*) [ -d "$TMP/bundle" ] && series_bundles ;; esac
  VIEWER_KIB=""
  ROWS=()
  for cmd in $CMDS; do
    case " $KNOWN_CMDS " in
      *" $cmd "*) ;;
      *) echo "scale: unknown command $cmd" >&2; continue ;;
    esac
    ws=(); xss=(); cs=(); xcs=(); ss=(); us=(); rmax="-"; srv_lines=()
    for _ in $(seq "$REPEAT"); do
      fresh_out
      # with one run the size's first peer run is every row's; with more, each
      # run is paired with a peer run just before it
      if [ "$REPEAT" -gt 1 ]; then run_peer; else ps="$peer_s"; pc="$peer_c"; fi
      W="-"; C="-"; S="-"; R="-"
      run_cmd "$cmd"
      if [ "$cmd" = upload ]; then
        [ -n "$SRV_LINE" ] && srv_lines+=("  server: $SRV_LINE")
        stop_server
      fi
      [ "$W" = "-" ] && continue
      ws+=("$W"); cs+=("$C"); ss+=("$S"); us+=("$(awk -v c="$C" -v s="$S" 'BEGIN { printf "%.2f", c - s }')")
      xss+=("$(ratio "$W" "$ps")"); xcs+=("$(ratio "$C" "$pc")")
      [ "$rmax" = "-" ] || [ "$R" -gt "$rmax" ] && rmax="$R"
    done
    read -r W wmin wmax <<<"$(stats "${ws[@]}")"
    read -r xs xmin xmax <<<"$(stats "${xss[@]}")"
    read -r C _ _ <<<"$(stats "${cs[@]}")"
    read -r xc _ _ <<<"$(stats "${xcs[@]}")"
    read -r S _ _ <<<"$(stats "${ss[@]}")"
    read -r U _ _ <<<"$(stats "${us[@]}")"
    R="$rmax"
    xf="-"; nspr="-"; mib="-"; range_s="-"; range_x="-"; usr="-"
    if [ "$W" != "-" ]; then
      W=$(awk -v w="$W" 'BEGIN { printf "%.3f", w }')
      [ "$C" != "-" ] && C=$(awk -v c="$C" 'BEGIN { printf "%.2f", c }')
      [ "$S" != "-" ] && S=$(awk -v c="$S" 'BEGIN { printf "%.2f", c }')
      [ "$xs" != "-" ] && xs=$(awk -v c="$xs" 'BEGIN { printf "%.2f", c }')
      [ "$xc" != "-" ] && xc=$(awk -v c="$xc" 'BEGIN { printf "%.2f", c }')
      range_s="$wmin..$wmax"
      [ "$xmin" != "-" ] && range_x="$xmin..$xmax"
      xf=$(awk -v r="$R" -v f="$bytes" 'BEGIN { printf "%.2f", r * 1024 / f }')
      mib=$((R / 1024))
      nspr=$(awk -v w="$W" -v n="$n" 'BEGIN { printf "%.0f", w * 1e9 / n }')
      [ "$n" = 100000 ] && per100k[$cmd]="$nspr"
      [ -n "${per100k[$cmd]:-}" ] && [ "$n" != 100000 ] && nspr="$nspr ($(awk -v a="$nspr" -v b="${per100k[$cmd]}" 'BEGIN { printf "%.2fx", a / b }'))"
      if [ "$U" != "-" ]; then
        usr=$(awk -v u="$U" -v n="$n" 'BEGIN { printf "%.0f", u * 1e9 / n }')
        [ "$n" = 100000 ] && usr100k[$cmd]="$usr"
        [ -n "${usr100k[$cmd]:-}" ] && [ "$n" != 100000 ] && [ "${usr100k[$cmd]}" != 0 ] &&
          usr="$usr ($(awk -v a="$usr" -v b="${usr100k[$cmd]}" 'BEGIN { printf "%.2fx", a / b }'))"
      fi
    fi
    ROWS+=("$(printf '%-9s %-16s %9s %9s %8s %7s %10s %9s %12s %7s %4s %15s %11s %14s' "$n" "$cmd" "$W" "$xs" "$C" "$xc" "$mib" "$xf" "$nspr" "$S" "${#ws[@]}" "$range_s" "$range_x" "$usr")")
    ROWS+=("${srv_lines[@]}") # upload: the server's figures of each run, after its row
  done
  # the peer row: every peer run of the size (one when CG_SCALE_REPEAT=1)
  read -r pw pwmin pwmax <<<"$(stats "${PEER_W[@]}")"
  read -r pcm _ _ <<<"$(stats "${PEER_C[@]}")"
  read -r psm _ _ <<<"$(stats "${PEER_S[@]}")"
  if [ "$pw" != "-" ]; then
    pw=$(awk -v w="$pw" 'BEGIN { printf "%.3f", w }'); pcm=$(awk -v c="$pcm" 'BEGIN { printf "%.2f", c }')
    psm=$(awk -v c="$psm" 'BEGIN { printf "%.2f", c }')
  fi
  printf '%-9s %-16s %9s %9s %8s %7s %10s %9s %12s %7s %4s %15s %11s   (file %d MiB)\n' "$n" serde-peer "$pw" 1.00 "$pcm" 1.00 - - - "$psm" "${#PEER_W[@]}" "$pwmin..$pwmax" - $((bytes >> 20))
  for row in "${ROWS[@]}"; do echo "$row"; done
  [ -n "$VIEWER_KIB" ] && echo "  viewer.html: $VIEWER_KIB KiB"
  [ -n "${!trace_var:-}" ] || rm -f "$trace"
  rm -rf "$TMP/bundle" "$TMP/out" "$TMP/series" "$TMP/srv"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -r "$REPORTED" ] && echo "free page reporting: $(($(cat "$REPORTED") >> 20)) GiB reported since boot"
