#!/usr/bin/env bash
# prep.sh GEN RECORDS RUN_ID IMPL PAIR JITTER OUT — one bench trace: gen_trace's
# synthetic trace with a comparison identity and production_equivalent scope in
# its meta line, tensor_stats kept for the first 8 blocks only (the rest become
# copies of the block's device_memory sample, so the record count is unchanged
# and the comparison's tensor-stat table does not grow with the trace), and
# JITTER ns added to the measured span (and its enclosing root span, call edge
# and terminal) so runs differ.
set -euo pipefail
GEN=$1 RECORDS=$2 RUN=$3 IMPL=$4 PAIR=$5 J=$6 OUT=$7
"$GEN" --records "$RECORDS" --run-id "$RUN" | awk -v impl="$IMPL" -v pair="$PAIR" -v j="$J" '
function bump(line, key,   m, v) {
  if (match(line, "\"" key "\":[0-9]+")) {
    v = substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 3) + j
    line = substr(line, 1, RSTART - 1) "\"" key "\":" v substr(line, RSTART + RLENGTH)
  }
  return line
}
NR == 1 {
  sub(/"measurement_scope":"profiled_work"/, "\"measurement_scope\":\"production_equivalent\"")
  sub(/,"tags":/, ",\"comparison_identity\":{\"implementation_id\":\"" impl "\",\"workload_id\":\"bench\",\"model_id\":\"bench-model\",\"config_id\":\"bench-config\",\"data_id\":\"bench-data\",\"seed_policy\":\"fixed-1\",\"physical_batch\":16,\"accumulation_steps\":1,\"precision\":\"f32\",\"device_state\":\"bench\",\"pair_id\":\"" pair "\"},\"tags\":")
  print; next
}
/^\{"kind":"device_memory"/ { dm = $0 }
/^\{"kind":"tensor_stats"/ { if (++ts > 8) { print dm; next } }
/^\{"kind":"span_end","id":"s[12]",/ { print bump($0, "duration_ns"); next }
/^\{"kind":"edge","edge_kind":"call","from_span":"s1","to_span":"s2"/ { print bump($0, "host_duration_ns"); next }
/^\{"kind":"terminal"/ { print bump($0, "timestamp_ns"); next }
{ print }' >"$OUT"
