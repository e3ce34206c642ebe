#!/usr/bin/env bash
# A command over a verified bundle reads its evidence.json (analysis/evidence_read:
# lazy arrays, no DOM of the large lists); over the bundle's trace as a raw input it
# rebuilds the evidence. Both must print the same bytes, except the `input` member
# that names the input: import, summary, overview, query (every kind) and view, over
# every fixture bundle that loads and whose trace rebuilds its evidence.json byte for
# byte, and over a generated 100,000-record bundle.
# Exit status must agree too. import over any bundle prints its evidence.json's bytes.
set -euo pipefail
CG="${CG_BINARY_DIR:?}/agent/candle-graph"
GEN="${CG_BINARY_DIR:?}/bench/trace_ingest/bench_gen_trace"
SRC="${CG_SOURCE_DIR:-$(pwd)}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

KINDS="slowest-host slowest-device heaviest memory spans tensors tensor-stats gradients capabilities gpu-status
gpu-correlation gpu-phases gpu-kernels gpu-attribution-gaps"

# the output with its top-level "input" member cut out (pretty JSON: the member runs
# from its key line to the line closing it at the same indentation)
strip_input() {
    awk 'skip && /^  }/ { skip = 0; next } skip { next } /^  "input": \{/ { skip = 1; next } { print }' "$1"
}

# same(command, bundle, raw-trace): one command both ways
compared=0
same() {
    local what="$1" bundle="$2" raw="$3"
    shift 3
    local rb=0 rr=0
    # shellcheck disable=SC2086
    "$CG" $what "$bundle" >"$T/b.out" 2>"$T/b.err" || rb=$?
    # shellcheck disable=SC2086
    "$CG" $what "$raw" "$@" >"$T/r.out" 2>"$T/r.err" || rr=$?
    [ "$rb" = "$rr" ] || fail "$what $bundle: exit $rb (bundle) vs $rr (raw trace): $(head -c 300 "$T/b.err")"
    if [ "$rb" = 0 ]; then
        if [ "$what" = import ]; then
            cmp -s "$T/b.out" "$T/r.out" || fail "import $bundle: packet differs from the rebuilt one"
        else
            strip_input "$T/b.out" >"$T/b.cut"
            strip_input "$T/r.out" >"$T/r.cut"
            grep -q '^  "input": ' "$T/b.cut" && fail "$what $bundle: input member not cut"
            cmp -s "$T/b.cut" "$T/r.cut" || fail "$what $bundle: output differs from the raw-trace output"
        fi
    else
        # the messages name the input; the bundle's must still be a message
        [ -s "$T/b.err" ] || fail "$what $bundle: failed without a message"
    fi
    compared=$((compared + 1))
}

check_bundle() {
    local b="$1" kinds="$2"
    local raw="$T/raw/trace.jsonl"
    rm -rf "$T/raw"
    mkdir -p "$T/raw"
    cp "$b/trace.jsonl" "$raw"
    same import "$b" "$raw"
    same summary "$b" "$raw"
    same overview "$b" "$raw"
    for k in $kinds; do same "query --kind $k" "$b" "$raw"; done
    "$CG" view "$b" -o "$T/b.html" >/dev/null 2>&1 || fail "view $b"
    "$CG" view "$raw" -o "$T/r.html" >/dev/null 2>&1 || fail "view of the trace of $b"
    cmp -s "$T/b.html" "$T/r.html" || fail "view $b: viewer.html differs from the raw-trace one"
}

# A bundle with Nsight evidence (its packet quotes the Nsight paths it was published
# from) or published by another tool version has no raw twin: every command must still
# work over it.
check_read_only() {
    local b="$1"
    for what in summary overview "query --kind spans" "query --kind gpu-kernels" "query --kind memory"; do
        # shellcheck disable=SC2086
        "$CG" $what "$b" >"$T/b.out" 2>"$T/b.err" || fail "$what $b: $(head -c 300 "$T/b.err")"
    done
    "$CG" view "$b" -o "$T/b.html" >/dev/null 2>&1 || fail "view $b"
}

bundles=0 other_bundles=0
while IFS= read -r manifest; do
    b="$(dirname "$manifest")"
    # only bundles that load (many fixtures are damaged on purpose); import prints the
    # published evidence.json as read
    "$CG" import "$b" >"$T/pub.json" 2>/dev/null || continue
    cmp -s "$T/pub.json" "$b/evidence.json" || fail "import $b: not the bytes of its evidence.json"
    mkdir -p "$T/twin"
    cp "$b/trace.jsonl" "$T/twin/trace.jsonl"
    if [ -d "$b/nsight" ] || ! "$CG" import "$T/twin/trace.jsonl" 2>/dev/null | cmp -s - "$b/evidence.json"; then
        check_read_only "$b"
        other_bundles=$((other_bundles + 1))
        continue
    fi
    check_bundle "$b" "$KINDS"
    bundles=$((bundles + 1))
done < <(find "$SRC/tests/fixtures" -name bundle.json | sort)
[ "$bundles" -ge 10 ] || fail "only $bundles fixture bundles were compared"

"$GEN" --records 100000 --out "$T/gen.jsonl"
"$CG" report "$T/gen.jsonl" --bundle "$T/gen" >/dev/null
check_bundle "$T/gen" "slowest-host heaviest memory spans tensor-stats gradients"
echo "ok: $bundles fixture bundles + a 100k-record bundle, $compared command pairs identical; $other_bundles bundles without a raw twin read"
