#!/usr/bin/env bash
# The library's layers are enforced by the build (lib/CMakeLists.txt): each area
# compiles against an include root that holds only itself and the areas below it.
# For every pair of areas this checks that a header of a lower (or the same) area
# compiles from an area's root and one of a higher area does not.
set -euo pipefail
SRC="${CG_SOURCE_DIR:?}"
LAYERS="${CG_BINARY_DIR:?}/lib/layers"
CC="${CC:-cc}"
ORDER=(base trace capture nsight analysis render bundle comparison campaign)
# allowed[area] = the areas it may include (from ARCHITECTURE.md's order)
declare -A allowed=(
  [base]="base" [trace]="base trace" [capture]="base trace capture" [nsight]="base trace nsight"
  [analysis]="base trace nsight analysis" [render]="base trace nsight analysis render"
  [bundle]="base trace capture nsight analysis render bundle"
  [comparison]="base trace capture nsight analysis render bundle comparison"
  [campaign]="base trace capture nsight analysis render bundle campaign")
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
ok=0 refused=0
for area in "${ORDER[@]}"; do
  [ -d "$LAYERS/$area" ] || { echo "FAIL: no include root $LAYERS/$area" >&2; exit 1; }
  for other in "${ORDER[@]}"; do
    header="$(cd "$SRC/lib" && ls "$other"/*.h | head -n 1)"
    printf '#include "%s"\n' "$header" >"$T/probe.c"
    if "$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -fsyntax-only -I "$LAYERS/$area" "$T/probe.c" 2>"$T/err"; then
      [[ " ${allowed[$area]} " == *" $other "* ]] || { echo "FAIL: $area can include $header (an upward include)" >&2; exit 1; }
      ok=$((ok + 1))
    else
      [[ " ${allowed[$area]} " != *" $other "* ]] || { echo "FAIL: $area cannot include $header:" >&2; cat "$T/err" >&2; exit 1; }
      grep -q "No such file" "$T/err" || { echo "FAIL: $area / $header failed for another reason:" >&2; cat "$T/err" >&2; exit 1; }
      refused=$((refused + 1))
    fi
  done
done
echo "build layers: $ok includes allowed, $refused upward includes refused"
