#!/usr/bin/env bash
# The embedded default: with no --database-url the server creates (initdb) and
# runs (pg_ctl) a private PostgreSQL cluster inside its data dir, on a Unix
# socket with no TCP listener (as `postgres` when root), and stops it on exit.
# `admin bootstrap` works while the server runs and after it stopped.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_deps
# under /tmp, not $TMPDIR: the cluster runs as the unprivileged user 'postgres',
# which must be able to enter every parent of its data dir (a $TMPDIR may be private)
T=$(mktemp -d /tmp/cgemb.XXXXXX); chmod 755 "$T"
EMB=$T/data
cleanup() {
  local rc=$?
  [ -n "$SRV_PID" ] && kill -9 "$SRV_PID" 2>/dev/null
  [ -d "$EMB/pg" ] && as_pg "$PG_BIN/pg_ctl" -D "$EMB/pg" -m immediate -w stop >/dev/null 2>&1
  [ $rc -ne 0 ] || [ $FAILS -ne 0 ] && tail -n 30 "$T/emb.log" >&2
  rm -rf "$T"
}
trap cleanup EXIT

"$SERVER" serve --data-dir "$EMB" --listen 127.0.0.1:0 --require-signature no >"$T/emb.log" 2>&1 &
SRV_PID=$!
port=""
for i in $(seq 1 600); do
  port=$(grep '"msg":"listening"' "$T/emb.log" 2>/dev/null | tail -1 | jq -r .port 2>/dev/null)
  [ -n "$port" ] && [ "$port" != null ] && break
  kill -0 $SRV_PID 2>/dev/null || { cat "$T/emb.log" >&2; die "embedded server exited during start"; }
  sleep 0.1
done
[ -n "$port" ] && [ "$port" != null ] || die "embedded server did not start"
URL=http://127.0.0.1:$port
grep -q '"database":"embedded"' "$T/emb.log" && pass "embedded database in use" || fail "not embedded"
[ -f "$EMB/pg/PG_VERSION" ] && pass "cluster created inside the data dir" || fail "no cluster in the data dir"
if [ "$(id -u)" = 0 ]; then
  [ "$(stat -c %U "$EMB/pg")" = postgres ] && pass "cluster owned by the unprivileged postgres user" || fail "cluster owner $(stat -c %U "$EMB/pg")"
fi
ls "$EMB"/pg-run/.s.PGSQL.* >/dev/null 2>&1 && pass "Unix socket in the data dir" || fail "no socket in $EMB/pg-run"
LA=$(psql -X -t -A "host=$EMB/pg-run dbname=candlegraph user=candlegraph" -c 'SHOW listen_addresses')
[ -z "$LA" ] && pass "no TCP listener (listen_addresses='')" || fail "listen_addresses=$LA"

TOK=$("$SERVER" admin bootstrap --data-dir "$EMB" | jq -r .token)
[ -n "$TOK" ] && [ "$TOK" != null ] && pass "admin bootstrap while the server runs" || fail "bootstrap while running"
http GET /readyz; expect 200 "" "readyz (embedded)"
make_bundle "$T/b" run-emb; pack "$T/b" "$T/b.tar.zst" z
upload "$T/b.tar.zst" "$TOK"; expect 201 "" "upload (embedded)"
ID=$(jq -r .id "$T/body")
http GET "/bundles/$ID/files/trace.jsonl" -H "$(auth "$TOK")"; expect 200 "" "download (embedded)"
cmp -s "$T/body" "$T/b/trace.jsonl" && pass "bytes exact (embedded)" || fail "bytes differ (embedded)"

kill -TERM "$SRV_PID"; wait "$SRV_PID"; rc=$?; SRV_PID=""
[ $rc = 0 ] && pass "server stopped cleanly" || fail "server exit $rc"
if as_pg "$PG_BIN/pg_ctl" -D "$EMB/pg" status >/dev/null 2>&1; then fail "cluster still running after exit"; else pass "cluster stopped on exit"; fi

# offline admin starts the cluster briefly and stops it again
"$SERVER" admin token list --data-dir "$EMB" | jq -e '.items | length == 1' >/dev/null && pass "admin token list (server stopped)" || fail "offline admin"
if as_pg "$PG_BIN/pg_ctl" -D "$EMB/pg" status >/dev/null 2>&1; then fail "offline admin left the cluster running"; else pass "offline admin stopped the cluster"; fi
"$SERVER" fsck --data-dir "$EMB" | jq -e '.clean and .bundles_checked == 1' >/dev/null && pass "fsck (embedded)" || fail "fsck (embedded)"

# a data dir below a directory the cluster's user cannot enter (a root-only 0700
# mktemp -d parent): refused before initdb, naming the directory, why and what to do
if [ "$(id -u)" = 0 ]; then
  P=$(mktemp -d --tmpdir cgpriv.XXXXXX); chmod 700 "$P"
  want="candle-graph-server: the embedded PostgreSQL runs as the unprivileged user 'postgres', which cannot enter $P (mode 0700, owner root), a parent of the data dir $P/data"
  "$SERVER" serve --data-dir "$P/data" --listen 127.0.0.1:0 >"$T/priv.log" 2>&1; rc=$?
  [ $rc != 0 ] && grep -qF "$want" "$T/priv.log" && grep -qF -- "chmod o+x $P), choose a --data-dir" "$T/priv.log" \
    && pass "serve below a root-only 0700 parent: refused with the directory, the reason and the fixes" \
    || fail "serve below a 0700 parent: exit $rc: $(tail -3 "$T/priv.log")"
  grep -q 'initdb' "$T/priv.log" && fail "initdb ran: $(grep initdb "$T/priv.log" | head -2)" || pass "refused before initdb"
  [ ! -e "$P/data/pg" ] && pass "no cluster directory created" || fail "cluster dir created below the 0700 parent"
  "$SERVER" admin token list --data-dir "$P/data" >"$T/priv-admin.log" 2>&1; rc=$?
  [ $rc != 0 ] && grep -qF "which cannot enter $P (mode 0700" "$T/priv-admin.log" && pass "admin refused alike" \
    || fail "admin below a 0700 parent: exit $rc: $(tail -2 "$T/priv-admin.log")"
  # make run's server script prints the server's reason and how to pick another data dir
  CG_DEMO_DATA="$P/data" CG_DEMO_LISTEN=127.0.0.1:0 bash "$SRC/scripts/demo-server.sh" "$(realpath --relative-to="$SRC" "$BIN")" >"$T/demo.log" 2>&1; rc=$?
  [ $rc != 0 ] && grep -qF "$want" "$T/demo.log" && grep -qF "set CG_DEMO_DATA=<dir> to use another one" "$T/demo.log" \
    && pass "make run's server script shows the reason and CG_DEMO_DATA" || fail "demo-server.sh: exit $rc: $(cat "$T/demo.log")"
  rm -rf "$P"
fi

[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all embedded-mode checks passed"
