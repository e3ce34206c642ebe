#!/usr/bin/env bash
# candle-graph-server under injected faults (SQLite-style anomaly loop, lib/base/fault.h):
# for each fault kind (write / fsync / rename / libpq call × EIO / ENOSPC / lost connection)
# and N = 1, 2, … the real server on loopback with real PostgreSQL is started with
# CG_FAULT=<op>:<N>:<err> and one new bundle is uploaded, until an upload completes
# without the fault firing before its commit. Every iteration asserts: the server did not crash and still
# answers; the documented status (507 insufficient_storage for ENOSPC, 503 unavailable
# otherwise; never 500 nor a 4xx for our own fault); nothing visible from the failed
# upload (no row, not listed, 404 by id); staging and temp dirs empty; a retry (the
# transient fault has fired, so injection is disarmed) succeeds and is retrievable byte
# for byte; a clean SIGTERM exit; `fsck` clean. A few persistent faults (the disk stays
# full) check that every attempt fails the same way and a restart without faults recovers.
# Prints one summary line per kind (the counts published in docs/reliability.md).
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup
command -v python3 >/dev/null || die "missing python3"
MAXN=${CG_FAULT_LOOP_MAX:-400}

TOK=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "bootstrap failed"
SERVE_FLAGS=(--require-signature no --pool-size 2 --janitor-interval 3600)
ITERS=0

# fault_start SPEC: a fresh server process armed with CG_FAULT=SPEC (empty: unarmed).
fault_start() {
  LOG_SKIP=$(cat "$T/loop.log" 2>/dev/null | wc -l)
  if [ -n "$1" ]; then export CG_FAULT=$1; else unset CG_FAULT; fi
  srv_start loop "${SERVE_FLAGS[@]}"
  unset CG_FAULT
}
fired() { tail -n +$((LOG_SKIP + 1)) "$SRV_LOG" | grep -c '"msg":"fault injected"'; }
fault_before_publish() {
  tail -n +$((LOG_SKIP + 1)) "$SRV_LOG" | awk '/"msg":"bundle published"/ { exit } /"msg":"fault injected"/ { hit = 1 }
    END { print hit ? "yes" : "no" }'
}

# bundles SET COUNT: COUNT new bundles in $T/SET (one generator process, tests/support/make_bundles.py);
# use SET I: selects bundle I as the upload ($BT, its files in $BD, its id $BID).
bundles() { python3 "$SRC/tests/support/make_bundles.py" "$T/$1" "$2" "$1" "$SRC/tests/fixtures/reader/illustrative.jsonl" || die "make_bundles"; }
use() { BT=$T/$1/b$2.tar; BD=$T/$1/b$2; BID=$(awk -v i="$2" '$1 == i { print $2 }' "$T/$1/ids"); }

dirs_empty() { # staging/tmp dirs of the data dir are empty (cleanup is done at request end)
  local i
  for i in $(seq 1 40); do
    [ -z "$(ls -A "$SRV_DATA/staging" "$SRV_DATA/tmp" "$SRV_DATA/blobs/tmp" 2>/dev/null | grep -v ':$' | grep -v '^$')" ] && return 0
    sleep 0.05
  done
  return 1
}

nothing_visible() { # $1 = label
  [ "$(psqlc "SELECT (SELECT count(*) FROM bundles WHERE id = '$BID') + (SELECT count(*) FROM bundle_files WHERE bundle_id = '$BID')")" = 0 ] \
    || { fail "$1: the failed upload left bundle or file rows"; return; }
  http GET "/bundles/$BID" -H "$(auth "$TOK")"
  [ "$CODE" = 404 ] || fail "$1: GET /bundles/<id> of the failed upload: $CODE"
  http GET "/bundles?limit=500" -H "$(auth "$TOK")"
  [ "$CODE" = 200 ] && [ "$(jq --arg id "$BID" '[.items[] | select(.id == $id)] | length' "$T/body")" = 0 ] \
    || fail "$1: GET /bundles lists the failed upload (status $CODE)"
}

retrievable() { # LABEL [quiet]: the selected bundle ($BD) is served byte for byte (one curl for
  # its four files; statuses in $RCODES); quiet: report nothing, only the result
  local f args=() codes
  for f in bundle.json trace.jsonl evidence.json report.md; do args+=(-o "$T/got.$f" "$URL/bundles/$BID/files/$f"); done
  codes=$(curl -s -H "$(auth "$TOK")" -w '%{http_code} ' "${args[@]}")
  RCODES=$codes
  for f in bundle.json trace.jsonl evidence.json report.md; do
    cmp -s "$T/got.$f" "$BD/$f" || { [ -n "${2:-}" ] || fail "$1: $f not retrievable byte for byte ($codes)"; return 1; }
  done
  [ "$codes" = "200 200 200 200 " ] || { [ -n "${2:-}" ] || fail "$1: file reads answered $codes"; return 1; }
  return 0
}

stop_and_fsck() { # $1 = label: clean SIGTERM exit, no leftovers, fsck clean
  kill -TERM "$SRV_PID"; wait "$SRV_PID"; local rc=$?; SRV_PID=""
  [ $rc = 0 ] || fail "$1: server exit status $rc (crash?)"
  dirs_empty || fail "$1: leftovers in staging/tmp: $(ls -A "$SRV_DATA/staging" "$SRV_DATA/tmp" "$SRV_DATA/blobs/tmp")"
  FS=$("$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL") && jq -e .clean <<<"$FS" >/dev/null \
    || fail "$1: fsck: $FS"
}

# loop OP ERR WANT_STATUS WANT_CODE
loop() {
  local op=$1 err=$2 want=$3 wcode=$4 n ok=0 bad=0 swallowed=0 ambiguous=0 label
  for n in $(seq 1 "$MAXN"); do
    label="$op:$n:$err"
    ITERS=$((ITERS + 1))
    [ $(( (n - 1) % 40 )) = 0 ] && bundles "fl-$op-$err-$n" 40
    use "fl-$op-$err-$(( n - (n - 1) % 40 ))" $(( (n - 1) % 40 ))
    fault_start "$op:$n:$err"
    upload "$BT" "$TOK"
    local code=$CODE ecode f
    ecode=$(jq -r '.error.code // empty' "$T/body" 2>/dev/null)
    f=$(fired)
    cp "$T/body" "$T/first"; cp "$T/hdr" "$T/first.hdr"
    # a fault that fired before the commit ("bundle published") must not end in a 201
    if [ "$code" = 201 ] && [ "$f" != 0 ] && [ "$(fault_before_publish)" = yes ]; then
      swallowed=$((swallowed + 1)); fail "$label: the injected fault was swallowed (upload answered 201)"
    fi
    # completed: the N-th call did not come before the commit. It may still come with the
    # reads that follow (a 503 for that read, never a 500): then they are read again.
    if [ "$code" = 201 ]; then
      if [ "$(fired)" = 0 ]; then
        retrievable "$label quiet" quiet || { [ "$(fired)" = 1 ] && [ "$RCODES" != "${RCODES/503/}" ] && [ "$RCODES" = "${RCODES/500/}" ]; } \
          || fail "$label: the reads after the upload answered $RCODES"
      fi
      retrievable "$label"
      stop_and_fsck "$label"   # also when a check failed: no server is left running
      note "fault-loop $op $err: $((n - 1)) injection points, $ok answered $want $wcode, $swallowed swallowed, $bad wrong, $ambiguous ambiguous commits; completed at N=$n"
      SUMMARY="$SUMMARY
  $op $err: N=1..$((n - 1)) → $want $wcode ×$ok (ambiguous commit ×$ambiguous), other ×$bad, swallowed ×$swallowed"
      return
    fi
    kill -0 "$SRV_PID" 2>/dev/null || { fail "$label: server died"; srv_start loop "${SERVE_FLAGS[@]}"; }
    http GET /healthz; [ "$CODE" = 200 ] || fail "$label: healthz $CODE after the fault"
    if [ "$code" = 200 ]; then
      swallowed=$((swallowed + 1)); fail "$label: a new bundle answered 200"
    elif [ "$code" = "$want" ] && [ "$ecode" = "$wcode" ]; then
      ok=$((ok + 1))
      grep -qi '^Retry-After:' "$T/first.hdr" || [ "$want" != 503 ] || fail "$label: 503 without Retry-After"
      if [ "$err" = lost-after ] && [ "$(psqlc "SELECT count(*) FROM bundles WHERE id = '$BID'")" = 1 ]; then
        # the reply of COMMIT was lost (RELIABILITY.md E3): committed, answered 503; the
        # retry must find it (200 already_published, same id)
        ambiguous=$((ambiguous + 1))
        upload "$BT" "$TOK"
        [ "$CODE" = 200 ] && [ "$(jq -r .id "$T/body")" = "$BID" ] || fail "$label: retry after an ambiguous commit: $CODE"
      else
        nothing_visible "$label"
      fi
    else
      bad=$((bad + 1)); fail "$label: status $code $ecode, want $want $wcode: $(head -c 300 "$T/first")"
      nothing_visible "$label"
    fi
    dirs_empty || fail "$label: leftovers after the failed upload: $(ls -A "$SRV_DATA/staging" "$SRV_DATA/tmp" "$SRV_DATA/blobs/tmp")"
    upload "$BT" "$TOK"   # the transient fault has fired: injection is disarmed now
    if [ "$CODE" = 201 ] || [ "$CODE" = 200 ]; then retrievable "$label retry"
    else fail "$label: retry after the fault answered $CODE $(head -c 300 "$T/body")"; fi
    stop_and_fsck "$label"
  done
  fail "$op $err: no upload completed within $MAXN injection points"
}

# persistent OP:N:ERR WANT WANT_CODE: a fault that stays (disk full): two attempts fail alike,
# a restart without the fault recovers.
persistent() {
  local spec=$1 want=$2 wcode=$3
  ITERS=$((ITERS + 1))
  bundles "fl-persist-${spec//:/-}" 1; use "fl-persist-${spec//:/-}" 0
  fault_start "$spec:persist"
  local i
  for i in 1 2; do
    upload "$BT" "$TOK"
    [ "$CODE" = "$want" ] && [ "$(jq -r .error.code "$T/body")" = "$wcode" ] \
      || fail "persistent $spec attempt $i: $CODE $(head -c 200 "$T/body"), want $want $wcode"
  done
  stop_and_fsck "persistent $spec"
  fault_start ""
  nothing_visible "persistent $spec"
  upload "$BT" "$TOK"
  [ "$CODE" = 201 ] && retrievable "persistent $spec after recovery" || fail "persistent $spec: after restart $CODE"
  stop_and_fsck "persistent $spec recovery"
  SUMMARY="$SUMMARY
  persistent $spec: 2 attempts → $want $wcode, recovered after restart"
}

SUMMARY=""
# CG_FAULT_LOOP_ONLY="OP ERR": run that one loop only (for reproducing a finding)
if [ -n "${CG_FAULT_LOOP_ONLY:-}" ]; then
  case "$CG_FAULT_LOOP_ONLY" in *ENOSPC*|*EDQUOT*) loop $CG_FAULT_LOOP_ONLY 507 insufficient_storage ;; *) loop $CG_FAULT_LOOP_ONLY 503 unavailable ;; esac
  note "fault loop: $ITERS server runs$SUMMARY"; [ $FAILS -eq 0 ] || exit 1; exit 0
fi
loop write ENOSPC 507 insufficient_storage
loop write EIO 503 unavailable
loop fsync EIO 503 unavailable
loop fsync ENOSPC 507 insufficient_storage
loop rename EIO 503 unavailable
loop rename ENOSPC 507 insufficient_storage
loop pq lost 503 unavailable
loop pq lost-after 503 unavailable
loop pq EIO 503 unavailable
# CG_FAULT_LOOP_FULL=1: also the kinds that reach the same call sites with another cause
if [ "${CG_FAULT_LOOP_FULL:-0}" = 1 ]; then
  loop pq ENOSPC 503 unavailable
  loop write EDQUOT 507 insufficient_storage
  loop write EROFS 503 unavailable
fi
persistent write:1:ENOSPC 507 insufficient_storage
persistent write:5:ENOSPC 507 insufficient_storage
persistent fsync:2:EIO 503 unavailable
persistent pq:1:lost 503 unavailable

note "fault loop: $ITERS server runs$SUMMARY"
[ "$(bundle_count)" -gt 0 ] || fail "no bundle was stored at all (the loop would be vacuous)"
[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all fault-loop checks passed"
