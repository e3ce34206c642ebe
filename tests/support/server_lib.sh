# server_lib.sh — shared harness for tests/integration/test_server_*.sh.
# Starts a real PostgreSQL in a temp dir (initdb + pg_ctl on a Unix socket, no
# TCP; as the `postgres` user when root), the real candle-graph-server on
# 127.0.0.1 with a random port, talks HTTP with curl, and cleans everything up
# on exit (trap). Source it, then call srv_setup.

set -u
BIN=${CG_BINARY_DIR:-build}
SRC=${CG_SOURCE_DIR:-.}
SERVER=$BIN/server/candle-graph-server
CLI=$BIN/agent/candle-graph
FAILS=0
PG_PIDS=""
SRV_PID=""

note() { printf '%s\n' "$*" >&2; }
fail() { note "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { note "ok: $*"; }
die() { note "FATAL: $*"; exit 1; }

srv_deps() {
  [ -x "$SERVER" ] || die "missing $SERVER (build the candle-graph-server target)"
  for t in curl jq tar zstd base64 sha256sum; do command -v $t >/dev/null || die "missing tool $t"; done
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] || die "PostgreSQL server binaries not installed (make bootstrap)"
}

# The browser tests' tools: node, headless Chromium ($CG_CHROMIUM, default
# /usr/bin/chromium, exported as CHROMIUM) and web/'s playwright-core.
browser_deps() {
  CHROMIUM="${CG_CHROMIUM:-/usr/bin/chromium}"
  command -v node >/dev/null || die "node is not installed (make bootstrap)"
  [ -x "$CHROMIUM" ] || die "chromium is not installed at $CHROMIUM (make bootstrap)"
  [ -d "$SRC/web/node_modules/playwright-core" ] || (cd "$SRC/web" && npm ci --no-audit --no-fund --loglevel=error) \
    || die "npm ci failed"
}

# srv_setup, then an admin token in ADMIN (admin bootstrap).
srv_setup_admin() {
  srv_setup
  ADMIN=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "admin bootstrap failed"
}

as_pg() { # run a PostgreSQL tool as the cluster owner
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

srv_setup() {
  srv_deps
  # under /tmp, not $TMPDIR: the cluster runs as the unprivileged user 'postgres',
  # which must be able to enter every parent of its data dir (a $TMPDIR may be private)
  T=$(mktemp -d /tmp/cgsrv.XXXXXX)
  chmod 755 "$T"
  trap srv_cleanup EXIT
  PGDATA_DIR=$T/pgdata
  PGSOCK=$T/pgsock
  mkdir -p "$PGSOCK" "$PGDATA_DIR"
  if [ "$(id -u)" = 0 ]; then chown postgres "$PGSOCK" "$PGDATA_DIR"; fi
  as_pg "$PG_BIN/initdb" -D "$PGDATA_DIR" -U cgtest --auth=trust -E UTF8 --no-locale --no-instructions >"$T/initdb.log" 2>&1 \
    || { cat "$T/initdb.log" >&2; die "initdb failed"; }
  pg_up
  DBURL="host=$PGSOCK dbname=postgres user=cgtest"
}

pg_up() {
  as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$PGSOCK/pg.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$PGSOCK' -c fsync=off -c max_connections=60" start >/dev/null \
    || { cat "$PGSOCK/pg.log" >&2; die "pg_ctl start failed"; }
}

pg_down() { as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m "${1:-fast}" -w stop >/dev/null 2>&1; }

psqlc() { psql -X -q -t -A "$DBURL" -c "$1"; }

# srv_start NAME [serve flags…]: starts a server with data dir
# ${SRV_DATA_ROOT:-$T}/NAME, sets URL/SRV_PID. Every test server spills each
# block of 64 KiB or more to files and has a one-byte resident budget, so its
# governor drops the spilled pages every 5 ms while any block lives
# (base/spill.h): every server test runs the spilling paths, under ASan too.
# A flag given after NAME overrides these (the last value of a flag wins).
SRV_SPILL_FLAGS=(--spill-min-bytes 65536 --resident-budget-bytes 1)
srv_start() {
  local name=$1; shift
  SRV_DATA=${SRV_DATA_ROOT:-$T}/$name
  SRV_LOG=$T/$name.log
  mkdir -p "$SRV_DATA"
  local skip; skip=$(cat "$SRV_LOG" 2>/dev/null | wc -l)
  "$SERVER" serve --data-dir "$SRV_DATA" --listen 127.0.0.1:0 --database-url "$DBURL" "${SRV_SPILL_FLAGS[@]}" "$@" \
    >>"$SRV_LOG" 2>&1 &
  SRV_PID=$!
  local port="" i
  for i in $(seq 1 200); do
    port=$(tail -n +$((skip + 1)) "$SRV_LOG" 2>/dev/null | grep '"msg":"listening"' | tail -1 | jq -r .port 2>/dev/null)
    [ -n "$port" ] && [ "$port" != null ] && break
    kill -0 $SRV_PID 2>/dev/null || { cat "$SRV_LOG" >&2; die "server exited during start"; }
    sleep 0.05
  done
  [ -n "$port" ] && [ "$port" != null ] || { cat "$SRV_LOG" >&2; die "server did not start"; }
  URL=http://127.0.0.1:$port
}

srv_stop() { # graceful
  [ -n "$SRV_PID" ] || return 0
  kill -TERM "$SRV_PID" 2>/dev/null
  wait "$SRV_PID" 2>/dev/null
  SRV_PID=""
}

srv_kill9() {
  [ -n "$SRV_PID" ] || return 0
  kill -9 "$SRV_PID" 2>/dev/null
  wait "$SRV_PID" 2>/dev/null
  SRV_PID=""
}

srv_cleanup() {
  local rc=$?
  [ -n "$SRV_PID" ] && kill -9 "$SRV_PID" 2>/dev/null
  [ -n "${PGDATA_DIR:-}" ] && as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1
  if [ $rc -ne 0 ] || [ $FAILS -ne 0 ]; then
    [ -n "${SRV_LOG:-}" ] && { note "--- server log tail ($SRV_LOG) ---"; tail -n 40 "$SRV_LOG" >&2; }
  fi
  rm -rf "$T"
}

# http METHOD PATH [curl args…]: sets CODE and BODY (file $T/body), headers in $T/hdr.
http() {
  local m=$1 p=$2; shift 2
  CODE=$(curl -s -o "$T/body" -D "$T/hdr" -w '%{http_code}' -X "$m" "$@" "$URL$p")
  BODY=$(tr -d '\0' <"$T/body")
}

auth() { printf 'Authorization: Bearer %s' "$1"; }

# expect_status WANT_STATUS [WANT_CODE] LABEL
expect() {
  local want=$1 code=$2 label=$3
  if [ "$CODE" != "$want" ]; then fail "$label: status $CODE, want $want: $(head -c 400 "$T/body")"; return 1; fi
  if [ -n "$code" ]; then
    local got; got=$(jq -r '.error.code' <"$T/body" 2>/dev/null)
    if [ "$got" != "$code" ]; then fail "$label: code $got, want $code"; return 1; fi
  fi
  pass "$label"
  return 0
}

# make_bundle DIR RUN_ID [HOST]: a bundle/1 directory with a real trace and an
# evidence.json of schema evidence/3 (accepted as not_rederivable).
make_bundle() {
  local d=$1 run=$2 host=${3:-ci-1}
  mkdir -p "$d"
  sed -e "s/run-4242-1/$run/" -e "s/\"tags\":{\"physical_batch\":\"8\"}/\"tags\":{\"host\":\"$host\",\"physical_batch\":\"8\"}/" \
    "$SRC/tests/fixtures/reader/illustrative.jsonl" >"$d/trace.jsonl"
  printf '{\n  "schema": "candle-graph/evidence/3"\n}\n' >"$d/evidence.json"
  printf '# report %s\n' "$run" >"$d/report.md"
  manifest "$d" "$run"
}

# manifest DIR RUN_ID: (re)writes bundle.json for the files present (sorted paths).
manifest() {
  local d=$1 run=$2
  (cd "$d" && find . -type f ! -name bundle.json | sed 's|^\./||' | LC_ALL=C sort | while read -r f; do
     printf '%s\t%s\t%s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)"
   done) | jq -R -s --arg run "$run" '{schema: "candle-graph/bundle/1", run_id: $run,
        files: [split("\n")[] | select(length > 0) | split("\t") | {path: .[0], bytes: (.[1] | tonumber), sha256: .[2]}]}' \
        >"$d/bundle.json"
}

# pack DIR OUT [zstd]: tar of the directory contents, bundle.json first.
pack() {
  local d=$1 out=$2 z=${3:-}
  local files
  files=$(cd "$d" && find . \( -type f -o -type l -o -type p \) ! -name bundle.json | sed 's|^\./||' | LC_ALL=C sort)
  if [ -n "$z" ]; then
    (cd "$d" && tar --format=pax -cf - bundle.json $files) | zstd -q -c >"$out"
  else
    (cd "$d" && tar --format=pax -cf - bundle.json $files) >"$out"
  fi
}

# upload FILE TOKEN [SIGFILE] [extra curl args…]
upload() {
  local f=$1 tok=$2 sig=${3:-}; shift 3 2>/dev/null || shift $#
  local ct=application/x-tar
  case "$f" in *.zst) ct=application/zstd ;; esac
  if [ -n "$sig" ]; then
    http POST /bundles -H "$(auth "$tok")" -H "Content-Type: $ct" -H "Candle-Graph-Signature: $(base64 -w0 "$sig")" \
      --data-binary @"$f" "$@"
  else
    http POST /bundles -H "$(auth "$tok")" -H "Content-Type: $ct" --data-binary @"$f" "$@"
  fi
}

bundle_count() { psqlc "SELECT count(*) FROM bundles"; }
seq_of() { psqlc "SELECT seq FROM bundles WHERE id = '$1'"; } # ID → bundles.seq, the bulk fact rows' key (0014)
blob_count() { find "$SRV_DATA/blobs/sha256" -type f 2>/dev/null | wc -l; }
