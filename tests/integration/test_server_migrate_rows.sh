#!/usr/bin/env bash
# Migration 0014 on a database that already holds bundles: the bulk fact rows
# (bundle_span_paths, bundle_span_totals, bundle_tensor_stats) are rebuilt
# keyed by bundles.seq instead of the 64-character id, and an upgrade must keep
# every row of every bundle, value for value, drop only rows whose bundle is
# gone, give the tables their new primary keys and keep 0013's delete trigger
# working by seq. The database is built as a server before 0014 left it (the
# migration files 0001–0013 applied in order, recorded in schema_migrations
# with their SHA-256 as migrate.c records them), then the real
# `candle-graph-server migrate` upgrades it.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup

# ---------------------------------------------------------------- the schema before 0014
psqlc "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, sha256 text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT now())" >/dev/null
for f in "$SRC"/migrations/*.sql; do
  name=$(basename "$f"); v=$((10#${name%%_*}))
  [ "$v" -lt 14 ] || continue
  psql -X -q -v ON_ERROR_STOP=1 -1 -f "$f" "$DBURL" >/dev/null || die "applying $name failed"
  psqlc "INSERT INTO schema_migrations (version, name, sha256) VALUES ($v, '$name', '$(sha256sum <"$f" | cut -c1-64)')" >/dev/null
done

# two bundles; A's id sorts after B's but A has the lower seq (rows are keyed by seq, not id)
A=$(printf 'f%.0s' $(seq 64)) B=$(printf 'a%.0s' $(seq 64)) GONE=$(printf '0%.0s' $(seq 64))
bundle_row() { # ID RUN
  psqlc "INSERT INTO bundles (id, run_id, manifest, file_count, total_bytes, semantic_status, trace_schema, correlation_id,
           entrypoint, phase, captured_at, capture_step, warmup_steps, device, measured_region_device_synchronized,
           timing_mode, provenance, measurement_scope, capture_contract, structurally_valid, capture_complete, outcome,
           health, measured_span_count)
         VALUES ('$1', '$2', '\\x7b7d', 1, 2, 'rederived_match', 'candle-graph/trace/10', 'c', 'e', 'train', 't', 1, 0,
           'cpu', true, 'wall', '{}', 'profiled_work', '{}', true, true, 'complete', '{}', 1)" >/dev/null
}
bundle_row "$A" run-a; bundle_row "$B" run-b
SA=$(seq_of "$A") SB=$(seq_of "$B")
[ "$SA" -lt "$SB" ] || die "seq order: A $SA, B $SB"
h() { printf "sha256(convert_to('%s', 'UTF8'))" "$1"; }
psqlc "INSERT INTO bundle_span_paths (bundle_id, hash, parent, name) VALUES
         ('$A', $(h step), NULL, 'step'), ('$A', $(h step/fwd), $(h step), 'fwd'),
         ('$B', $(h step), NULL, 'step'), ('$GONE', $(h lost), NULL, 'lost')" >/dev/null
psqlc "INSERT INTO bundle_span_totals (bundle_id, kind, path_hash, total_ns, occurrences) VALUES
         ('$A', 'span', $(h step), 9223372036854775807, 3), ('$A', 'op', $(h step/fwd), 17, 2),
         ('$B', 'span', $(h step), 5, 1), ('$GONE', 'device', $(h lost), 1, 1)" >/dev/null
psqlc "INSERT INTO bundle_tensor_stats (bundle_id, label, samples, sum_rms, sum_abs_max, sum_mean, sum_elements,
         sum_non_finite) VALUES
         ('$A', E'a\\tb', 2, 1e300, 0.125, -0.5, 18446744069414584320, 3), ('$B', 'x', 1, 1, 2, 3, 4, 0),
         ('$GONE', 'lost', 1, 1, 1, 1, 1, 1)" >/dev/null

# ---------------------------------------------------------------- the upgrade
"$SERVER" migrate --database-url "$DBURL" | jq -e '.schema_version >= 14' >/dev/null && pass "migrate upgrades a 0013 database" \
  || die "migrate of a 0013 database failed"

PATHS=$(psqlc "SELECT string_agg(format('%s:%s:%s:%s', bundle_seq, encode(hash, 'hex') = encode($(h step), 'hex'),
                 encode(parent, 'hex') = encode($(h step), 'hex'), name), ' '
                 ORDER BY bundle_seq, name) FROM bundle_span_paths")
[ "$PATHS" = "$SA:f:t:fwd $SA:t::step $SB:t::step" ] && pass "span paths kept by seq, hashes and parents exact ($PATHS)" \
  || fail "span paths after 0014: $PATHS"
TOTALS=$(psqlc "SELECT string_agg(format('%s:%s:%s:%s', bundle_seq, kind, total_ns, occurrences), ' '
                  ORDER BY bundle_seq, kind) FROM bundle_span_totals")
[ "$TOTALS" = "$SA:op:17:2 $SA:span:9223372036854775807:3 $SB:span:5:1" ] \
  && pass "span totals kept by seq, i64 exact ($TOTALS)" || fail "span totals after 0014: $TOTALS"
STATS=$(psqlc "SELECT string_agg(format('%s:%s:%s:%s:%s:%s:%s:%s', bundle_seq, replace(label, E'\t', '<TAB>'), samples,
                 sum_rms, sum_abs_max, sum_mean, sum_elements, sum_non_finite), ' ' ORDER BY bundle_seq)
               FROM bundle_tensor_stats")
[ "$STATS" = "$SA:a<TAB>b:2:1e+300:0.125:-0.5:18446744069414584320:3 $SB:x:1:1:2:3:4:0" ] \
  && pass "tensor stats kept by seq, u64 sums exact ($STATS)" || fail "tensor stats after 0014: $STATS"
[ "$(psqlc "SELECT count(*) FROM information_schema.columns WHERE column_name = 'bundle_id' AND table_name IN
            ('bundle_span_paths', 'bundle_span_totals', 'bundle_tensor_stats')")" = 0 ] \
  && pass "no bundle_id column left (the orphan rows of a gone bundle are not in the lists above)" || fail "a bulk fact table still has bundle_id"
KEYS=$(psqlc "SELECT string_agg(pg_get_constraintdef(oid), ' ' ORDER BY conrelid::regclass::text) FROM pg_constraint
              WHERE contype = 'p' AND conrelid IN ('bundle_span_paths'::regclass, 'bundle_span_totals'::regclass,
                                                  'bundle_tensor_stats'::regclass)")
[ "$KEYS" = "PRIMARY KEY (bundle_seq, hash) PRIMARY KEY (bundle_seq, kind, path_hash) PRIMARY KEY (bundle_seq, label)" ] \
  && pass "primary keys by seq ($KEYS)" || fail "primary keys after 0014: $KEYS"
psqlc "INSERT INTO bundle_span_totals (bundle_seq, kind, path_hash, total_ns, occurrences)
       VALUES ($SB, 'span', $(h step), 1, 1)" >/dev/null 2>&1 && fail "a duplicate (seq, kind, path) row was accepted" \
  || pass "a duplicate (seq, kind, path) row is refused"

# deleting a bundles row deletes its rows (the 0013 trigger, now by seq) and no other bundle's
psqlc "DELETE FROM bundles WHERE id = '$A'" >/dev/null || fail "DELETE of a bundles row failed"
LEFT=$(psqlc "SELECT (SELECT count(*) FROM bundle_span_paths WHERE bundle_seq = $SA) || ' ' ||
              (SELECT count(*) FROM bundle_span_totals WHERE bundle_seq = $SA) || ' ' ||
              (SELECT count(*) FROM bundle_tensor_stats WHERE bundle_seq = $SA) || ' ' ||
              (SELECT count(*) FROM bundle_span_paths WHERE bundle_seq = $SB) || ' ' ||
              (SELECT count(*) FROM bundle_span_totals WHERE bundle_seq = $SB) || ' ' ||
              (SELECT count(*) FROM bundle_tensor_stats WHERE bundle_seq = $SB)")
[ "$LEFT" = "0 0 0 1 1 1" ] && pass "the delete trigger works by seq (A's rows gone, B's kept)" \
  || fail "rows after deleting A (A paths totals stats, B paths totals stats): $LEFT"
"$SERVER" migrate --database-url "$DBURL" | jq -e '.schema_version >= 14' >/dev/null && pass "migrate again (idempotent)" \
  || fail "second migrate"

exit $((FAILS > 0))
