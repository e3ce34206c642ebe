# history_lib.sh — synthetic revision-tagged bundles for the issue 15 tests
# (tests/integration/test_history_*.sh, test_gate_cli.sh). Source after
# server_lib.sh. hist_bundle writes a bundle/1 directory whose trace has one
# closed measured span of the given duration, a comparison identity and the
# vcs.* tags; evidence.json is a placeholder (not_rederivable at ingest).

# hist_bundle DIR RUN_ID COMMIT BRANCH COMMIT_TIME DURATION_NS [WORKLOAD] [IMPL]
hist_bundle() {
  local d=$1 run=$2 commit=$3 branch=$4 ctime=$5 dur=$6 wl=${7:-hist-wl} impl=${8:-impl-$3}
  mkdir -p "$d"
  cat >"$d/trace.jsonl" <<JSONL
{"kind":"meta","schema":"candle-graph/trace/10","run_id":"$run","correlation_id":"hist::bench/update-3","entrypoint":"hist::bench","phase":"train","timestamp":"2026-11-30T00:00:00.000Z","capture_step":3,"warmup_steps":2,"device":"cpu","measured_region_device_synchronized":false,"timing_mode":"host","capture_contract":{"measurement_scope":"production_equivalent","operations":"none","tensors":"none","gradients":"none","logical_memory":"none","physical_memory":"none","device_timing":"none","required_semantic_labels":[]},"comparison_identity":{"implementation_id":"$impl","workload_id":"$wl","model_id":"m","config_id":"c","data_id":"d","seed_policy":"fixed","physical_batch":8,"accumulation_steps":1,"precision":"f32","device_state":"idle"},"tags":{"ci.run_url":"https://ci.example/run/$run","vcs.branch":"$branch","vcs.commit":"$commit","vcs.commit_time":"$ctime"}}
{"kind":"span_start","id":"s1","name":"hist::bench","start_ns":0,"span_kind":"function"}
{"kind":"span_start","id":"s2","parent_id":"s1","name":"step","start_ns":10,"span_kind":"function","measured":true}
{"kind":"span_end","id":"s2","duration_ns":$dur}
{"kind":"span_end","id":"s1","duration_ns":$((dur + 20))}
{"kind":"terminal","outcome":"complete","timestamp_ns":$((dur + 25))}
JSONL
  printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$d/evidence.json"
  manifest "$d" "$run"
}

# hist_sha N: a deterministic 40-hex commit hash for commit number N.
hist_sha() { printf 'commit-%s' "$1" | sha1sum | cut -c1-40; }

# hist_time N: commit time of commit number N (one minute apart).
hist_time() { date -u -d "@$((1764000000 + $1 * 60))" +%Y-%m-%dT%H:%M:%SZ; }

# hist_noise SEED: deterministic "shared runner" noise in per-mille, −20 … +20,
# with an occasional +60 outlier (one run in 23).
hist_noise() {
  local h; h=$(printf '%s' "$1" | md5sum | cut -c1-8)
  local v=$((16#$h))
  if [ $((v % 23)) -eq 0 ]; then echo 60; else echo $(((v % 41) - 20)); fi
}

# hist_upload_dir DIR TOKEN: tar + POST /bundles (sets CODE/BODY).
hist_upload_dir() {
  pack "$1" "$1.tar"
  upload "$1.tar" "$2"
}
