#!/usr/bin/env bash
# Bundles published by the crate's own CLI (tests/fixtures/bundles/crate_published_*/bundle,
# see each README): their evidence.json is the crate's, byte for byte. Our `verify --semantic`
# must rederive the same packet (rederived_match), our `import` must load it and print the
# same packet, and the real server must ingest it (201, semantic status rederived_match).
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
FIX=$SRC/tests/fixtures/bundles
[ -x "$CLI" ] || die "missing $CLI"
CASES=$(cd "$FIX" && ls -d crate_published_*/ | tr -d /)
[ "$(wc -w <<<"$CASES")" -ge 4 ] || die "expected at least 4 crate_published_* fixtures, found: $CASES"

srv_setup
"$CLI" keygen --out "$T/k" >/dev/null 2>&1 || die "candle-graph keygen failed"
# The fixtures share the trace's run_id, so each is ingested by its own server and database.
fresh_server() {
  psqlc "CREATE DATABASE $1" >/dev/null || die "create database $1"
  DBURL="host=$PGSOCK dbname=$1 user=cgtest"
  ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
  srv_start "$1"
  http POST /tokens -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d '{"name":"up","scopes":["upload","read"]}'
  expect 201 "" "$1: POST /tokens" || die "no upload token"
  UP=$(jq -r .token "$T/body")
  http POST /keys -H "$(auth "$ADMIN")" -H 'Content-Type: application/json' -d "$(jq -n --rawfile k "$T/k.pub" '{name:"crate", public_key:$k}')"
  expect 201 "" "$1: POST /keys" || die "key not registered"
}

for c in $CASES; do
  b=$T/$c
  cp -a "$FIX/$c/bundle" "$b"
  # verify --semantic: the packet rederived from the bundle's trace (and nsight/) is the crate's
  if "$CLI" verify "$b" --semantic >"$T/v.json" 2>"$T/v.err" \
     && jq -e '.semantic.status == "rederived_match"' "$T/v.json" >/dev/null; then
    pass "$c: verify --semantic rederived_match"
  else
    fail "$c: verify --semantic: $(head -c 600 "$T/v.err") $(head -c 300 "$T/v.json")"
  fi
  # import: the bundle's evidence input, printed as the same packet
  if "$CLI" import "$b" >"$T/i.json" 2>"$T/i.err" && jq -e --slurpfile want "$b/evidence.json" '. == $want[0]' "$T/i.json" >/dev/null; then
    pass "$c: import prints the crate's packet"
  else
    fail "$c: import: $(head -c 600 "$T/i.err")"
  fi
  # server ingest of the signed bundle
  fresh_server "$c"
  "$CLI" sign "$b" --key "$T/k" >/dev/null 2>&1 || die "candle-graph sign $c failed"
  pack "$b" "$T/$c.tar.zst" z
  upload "$T/$c.tar.zst" "$UP" "$b.sig.json"
  if expect 201 "" "$c: ingest → 201"; then
    jq -e '.semantic.status == "rederived_match" and .semantic.evidence_schema == "candle-graph/evidence/4"' "$T/body" >/dev/null \
      && pass "$c: ingest semantic rederived_match" || fail "$c: ingest semantic: $BODY"
    id=$(jq -r .id "$T/body")
    http GET "/bundles/$id/evidence" -H "$(auth "$UP")"
    expect 200 "" "$c: GET /evidence" && { cmp -s "$T/body" "$b/evidence.json" && pass "$c: stored evidence is the crate's bytes" \
      || fail "$c: stored evidence differs from the crate's evidence.json"; }
  fi
  srv_stop
done
[ "$FAILS" = 0 ] || { note "$FAILS failure(s)"; exit 1; }
note "crate-published bundles: all checks passed"
