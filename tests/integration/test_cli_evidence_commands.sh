#!/usr/bin/env bash
# Spec conformance of the evidence-reading commands (protocol-trace-evidence.md §13,
# protocol-bundles-comparison.md §7):
#  - any file whose parent directory holds bundle.json is read as that verified bundle
#    (not only bundle/trace.jsonl);
#  - graph query kinds on a failed capture fail with the exact spec message, the others work;
#  - --label/--label-prefix only for spans, tensors, tensor-stats and gradients.
set -euo pipefail
# shellcheck source=../support/cli_lib.sh
. "${CG_SOURCE_DIR:-$(pwd)}/tests/support/cli_lib.sh"
GOOD="$SRC/tests/fixtures/bundles/semantic_good_trace_only/trace.jsonl"
FAILED="$SRC/tests/fixtures/trace/capture_failed/trace.jsonl"

"$CG" report "$GOOD" --bundle b -o receipt.json

# §7: "A file whose parent has bundle.json (e.g. bundle/trace.jsonl) -> verified bundle of the parent."
for f in trace.jsonl report.md evidence.json; do
    "$CG" summary "b/$f" -o "s_${f}.json" 2>err.txt || fail "summary b/$f: $(cat err.txt)"
    [ "$(json "s_${f}.json" input.kind)" = verified_bundle ] || fail "b/$f not read as a verified bundle"
    [ "$(json "s_${f}.json" input.evidence_source)" = verified_evidence_json ] || fail "b/$f evidence_source"
done

# §7: "packet.provenance must equal the trace meta" is TraceRunMeta (struct) equality: a defaulted
# field written with its default (e.g. the trace/10 partition lists as []) equals an absent one.
cp -r b b2
edit_evidence b2 '
cc = ev["provenance"]["capture_contract"]
cc["gpu_expected_semantic_labels"] = []
cc["cpu_only_semantic_labels"] = []
ev["provenance"]["comparison_identity"]["pair_id"] = None'
"$CG" verify b2 -o v2.json || fail "re-hashed bundle b2 does not verify"
"$CG" summary b2 -o s2.json 2>err.txt || fail "summary of a bundle whose provenance writes defaulted fields: $(cat err.txt)"
# a real difference is still refused
cp -r b b3
edit_evidence b3 'ev["provenance"]["capture_contract"]["gpu_expected_semantic_labels"] = ["x"]'
if "$CG" summary b3 -o s3.json 2>err.txt; then fail "a differing provenance was accepted"; fi
grep -qF "verified evidence packet provenance does not match its trace metadata" err.txt || fail "b3 message: $(cat err.txt)"

# §13: graph kinds need a complete, structurally valid capture
for k in slowest-host slowest-device heaviest spans tensors gradients; do
    if "$CG" query "$FAILED" --kind "$k" >out.json 2>err.txt; then fail "query --kind $k on a failed capture succeeded"; fi
    grep -qF "query requires a complete, structurally valid capture" err.txt || fail "query --kind $k message: $(cat err.txt)"
done
for k in memory tensor-stats capabilities gpu-status gpu-correlation gpu-phases gpu-kernels gpu-attribution-gaps; do
    "$CG" query "$FAILED" --kind "$k" -o q.json 2>err.txt || fail "query --kind $k on a failed capture: $(cat err.txt)"
    [ "$(json q.json schema)" = candle-graph/trace-query/5 ] || fail "query schema"
    [ "$(json q.json kind)" = "$k" ] || fail "query kind"
done

# §13: --label / --label-prefix apply to spans, tensors, tensor-stats, gradients only
if "$CG" query "$GOOD" --kind memory --label x >/dev/null 2>&1; then fail "--label accepted for memory"; fi
"$CG" query "$GOOD" --kind tensor-stats --label-prefix "" -o q.json || fail "--label-prefix for tensor-stats"
echo "review cli: ok"
