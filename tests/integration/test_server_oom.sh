#!/usr/bin/env bash
# The server's side of the OOM policy (lib/base/alloc.h): the N-th allocation
# made while answering requests fails (CG_FAULT=alloc:N:ENOMEM), for N over a
# spread of values, while a bundle is uploaded, listed and its graph read. The
# server keeps running every time (a fallible path answers an error, an
# infallible container has its allocation retried after the emergency reserve
# is given back) and answers /healthz and a later upload normally.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup_admin

fired=0 retried=0
for n in 1 2 3 5 8 13 21 34 55 89 144 233 377 610 987 1597 2584 4181; do
  export CG_FAULT="alloc:$n:ENOMEM"
  srv_start "oom-$n" --require-signature no
  unset CG_FAULT
  make_bundle "$T/b$n" "run-oom-$n"; pack "$T/b$n" "$T/b$n.tar"
  upload "$T/b$n.tar" "$ADMIN"
  up=$CODE id=$(jq -r '.id // empty' "$T/body" 2>/dev/null)
  http GET /bundles -H "$(auth "$ADMIN")"
  [ "$up" = 201 ] && [ -n "$id" ] && http GET "/bundles/$id/graph" -H "$(auth "$ADMIN")"
  if ! kill -0 "$SRV_PID" 2>/dev/null; then
    fail "alloc:$n: the server ended: $(tail -5 "$SRV_LOG")"
    SRV_PID=""
    continue
  fi
  grep -q '"msg":"fault injected","op":"alloc"' "$SRV_LOG" && fired=$((fired + 1))
  grep -q '"msg":"out of memory: allocation retried"' "$SRV_LOG" && retried=$((retried + 1))
  http GET /healthz; expect 200 "" "alloc:$n: healthz after the failed allocation (upload answered $up)" >/dev/null
  make_bundle "$T/c$n" "run-oom-after-$n"; pack "$T/c$n" "$T/c$n.tar"
  before=$(grep -c '"msg":"fault injected","op":"alloc"' "$SRV_LOG")
  upload "$T/c$n.tar" "$ADMIN"
  # the N-th allocation can fall in this upload itself (the count depends on what the
  # requests above allocated): a fallible one answers 503; the upload after it must publish
  if [ "$CODE" = 503 ] && [ "$before" = 0 ] && grep -q '"msg":"fault injected","op":"alloc"' "$SRV_LOG"; then
    make_bundle "$T/d$n" "run-oom-later-$n"; pack "$T/d$n" "$T/d$n.tar"
    upload "$T/d$n.tar" "$ADMIN"
  fi
  expect 201 "" "alloc:$n: the upload after the failed allocation is published" >/dev/null
  srv_stop
done
[ "$fired" -ge 10 ] && pass "an allocation failed in $fired runs" || fail "the alloc fault fired in $fired runs only"
[ "$retried" -ge 1 ] && pass "an infallible container's allocation was retried in $retried runs" \
  || fail "no run reached the OOM handler"
[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all out-of-memory checks passed"
