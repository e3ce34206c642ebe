#!/usr/bin/env bash
# Crash campaign (RELIABILITY.md C-1/C-2, bounded, loopback only): several clients send a
# mix of new, duplicate and invalid uploads while the candle-graph-server process is
# SIGKILLed at random moments (≥ 200 times; each server process lives a random 20–200 ms
# after it answers) and PostgreSQL (postmaster and backends) is SIGKILLed ≥ 20 times under
# a running server. Asserts: every acknowledged (201/200) bundle is retrievable byte for
# byte at the end; no invalid upload is ever acknowledged; no 500; after each PostgreSQL
# crash the same server process (not restarted) becomes ready again and accepts a new
# upload; `fsck` clean during and after the campaign; the janitor leaves no temp, staging
# or orphan leftovers. Prints the counts published in docs/reliability.md.
# Knobs: CG_CRASH_KILLS (200), CG_CRASH_PG_KILLS (20), CG_CRASH_CLIENTS (4),
# CG_CRASH_BUNDLES (240 distinct new bundles); CG_CRASH_SOAK=1 for a long soak
# (2000 server kills, 200 PostgreSQL kills, 2000 bundles) unless those are set.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
srv_setup
SOAK=${CG_CRASH_SOAK:-0}
KILLS=${CG_CRASH_KILLS:-$([ "$SOAK" = 1 ] && echo 2000 || echo 200)}
PG_KILLS=${CG_CRASH_PG_KILLS:-$([ "$SOAK" = 1 ] && echo 200 || echo 20)}
CLIENTS=${CG_CRASH_CLIENTS:-4}
NB=${CG_CRASH_BUNDLES:-$([ "$SOAK" = 1 ] && echo 2000 || echo 240)}
command -v python3 >/dev/null || die "missing python3"

TOK=$("$SERVER" admin bootstrap --database-url "$DBURL" | jq -r .token) || die "bootstrap failed"
B=$T/bundles
python3 "$SRC/tests/support/make_bundles.py" "$B" "$NB" crash "$SRC/tests/fixtures/reader/illustrative.jsonl" \
  || die "bundle generation failed"
python3 "$SRC/tests/support/make_bundles.py" "$T/rec" "$PG_KILLS" recover "$SRC/tests/fixtures/reader/illustrative.jsonl" \
  || die "bundle generation failed"
declare -A ID
while read -r i id; do ID[$i]=$id; done <"$B/ids"

FLAGS=(--require-signature no --pool-size 4 --janitor-interval 3600)
srv_start crash "${FLAGS[@]}"
PORT=${URL##*:}
srv_kill9

start_fixed() { # a new server process on the campaign's port; waits until it answers
  local i
  "$SERVER" serve --data-dir "$SRV_DATA" --listen "127.0.0.1:$PORT" --database-url "$DBURL" "${FLAGS[@]}" \
    >>"$SRV_LOG" 2>&1 &
  SRV_PID=$!
  for i in $(seq 1 400); do
    curl -s -o /dev/null --max-time 1 "$URL/healthz" && return 0
    kill -0 "$SRV_PID" 2>/dev/null || break
    sleep 0.02
  done
  fail "server did not start (kill $KILLED)"; tail -n 20 "$SRV_LOG" >&2; exit 1
}

pg_kill9() { # SIGKILL the postmaster and all its backends (a PostgreSQL crash)
  local pm kids p
  pm=$(head -1 "$PGDATA_DIR/postmaster.pid")
  kids=$(ps -o pid= --ppid "$pm")
  kill -9 "$pm" $kids 2>/dev/null
  for p in $pm $kids; do while kill -0 "$p" 2>/dev/null; do sleep 0.02; done; done
}

# client C: loops until $T/stop exists; logs "kind code" per attempt, "i" per acknowledgement.
client() {
  local c=$1 next=$1 sent=() kind i f code
  local bad=("$B/bad-digest.tar" "$B/bad-undeclared.tar" "$B/bad-garbage.tar")
  while [ -d "$T" ] && [ ! -e "$T/stop" ]; do   # (the harness removes $T on exit)
    local r=$((RANDOM % 10))
    if [ $r -lt 6 ] && [ "$next" -lt "$NB" ]; then kind=new; i=$next; next=$((next + CLIENTS)); f=$B/b$i.tar
    elif [ $r -lt 8 ] && [ ${#sent[@]} -gt 0 ]; then kind=dup; i=${sent[$((RANDOM % ${#sent[@]}))]}; f=$B/b$i.tar
    else kind=bad; i=-1; f=${bad[$((RANDOM % 3))]}; fi
    code=$(curl -s -o "$T/c$c.out" -w '%{http_code}' --max-time 30 -X POST -H "$(auth "$TOK")" \
      -H 'Content-Type: application/x-tar' --data-binary @"$f" "$URL/bundles")
    echo "$kind $code" >>"$T/codes.$c"
    [ "$kind" != bad ] && sent+=("$i")
    if [ "$code" = 201 ] || [ "$code" = 200 ]; then
      if [ "$kind" = bad ]; then echo "invalid upload $f acknowledged: $(head -c 200 "$T/c$c.out")" >>"$T/violations"
      elif grep -q "\"id\": \"${ID[$i]}\"" "$T/c$c.out"; then echo "$i" >>"$T/acks.$c"
      else echo "bundle $i acknowledged with another id: $(head -c 200 "$T/c$c.out")" >>"$T/violations"; fi
    fi
    [ "$code" = 500 ] && echo "500 for $kind $f: $(head -c 200 "$T/c$c.out")" >>"$T/violations"
    [ "$code" = 000 ] && sleep 0.05   # server down: wait for the next one
  done
}

CPIDS=""
for c in $(seq 0 $((CLIENTS - 1))); do client "$c" & CPIDS="$CPIDS $!"; done

KILLED=0 PGK=0 RECOVERED=0
PG_EVERY=$(( PG_KILLS > 0 ? KILLS / PG_KILLS : KILLS + 1 ))
[ "$PG_EVERY" -ge 1 ] || PG_EVERY=1
while [ $KILLED -lt $KILLS ]; do
  start_fixed
  if [ $PGK -lt $PG_KILLS ] && [ $(( (KILLED + 1) % PG_EVERY )) = 0 ]; then
    sleep "$(printf '0.%03d' $((RANDOM % 200 + 50)))"
    pg_kill9; PGK=$((PGK + 1))
    sleep "$(printf '0.%03d' $((RANDOM % 300 + 100)))"
    pg_up 2> >(grep -v "another server might be running" >&2)
    ok=""
    for w in $(seq 1 200); do
      http GET /readyz; [ "$CODE" = 200 ] && { ok=1; break; }; sleep 0.05
    done
    kill -0 "$SRV_PID" 2>/dev/null || fail "the server died while PostgreSQL was down (PostgreSQL kill $PGK)"
    [ -n "$ok" ] || fail "readyz did not recover after PostgreSQL kill $PGK"
    j=$((PGK - 1)) code=""
    for w in 1 2 3 4 5; do   # clients compete for the upload slots: retry a 429/503 a few times
      upload "$T/rec/b$j.tar" "$TOK"; code=$CODE
      [ "$CODE" = 201 ] || [ "$CODE" = 200 ] && break; sleep 0.2
    done
    if [ "$code" = 201 ] || [ "$code" = 200 ]; then RECOVERED=$((RECOVERED + 1)); echo "r$j" >>"$T/acks.rec"
    else fail "upload after PostgreSQL kill $PGK on the same server: $code $(head -c 200 "$T/body")"; fi
  fi
  sleep "$(printf '0.%03d' $((RANDOM % 180 + 20)))"
  srv_kill9; KILLED=$((KILLED + 1))
  if [ $((KILLED % 50)) = 0 ]; then
    FS=$("$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL") && jq -e .clean <<<"$FS" >/dev/null \
      || fail "fsck after $KILLED kills: $(head -c 400 <<<"$FS")"
  fi
done
touch "$T/stop"
wait $CPIDS

# ---------------------------------------------------------------- verification
FLAGS=(--require-signature no --janitor-interval 1 --janitor-grace 1)
start_fixed
ACKED=$(cat "$T"/acks.[0-9]* 2>/dev/null | sort -un)
NACK=$(cat "$T"/acks.[0-9]* 2>/dev/null | wc -l)
verified=0
for i in $ACKED; do
  args=()
  for f in bundle.json trace.jsonl evidence.json report.md; do args+=(-o "$T/v.$f" "$URL/bundles/${ID[$i]}/files/$f"); done
  codes=$(curl -s -H "$(auth "$TOK")" -w '%{http_code} ' "${args[@]}")
  same=1
  for f in bundle.json trace.jsonl evidence.json report.md; do cmp -s "$T/v.$f" "$B/b$i/$f" || same=""; done
  if [ "$codes" = "200 200 200 200 " ] && [ -n "$same" ]; then verified=$((verified + 1))
  else fail "acknowledged bundle $i (${ID[$i]}) not retrievable byte for byte: $codes"; fi
done
for r in $(cat "$T/acks.rec" 2>/dev/null); do
  j=${r#r}; rid=$(awk -v j="$j" '$1 == j { print $2 }' "$T/rec/ids")
  http GET "/bundles/$rid/files/report.md" -H "$(auth "$TOK")"
  [ "$CODE" = 200 ] && cmp -s "$T/body" "$T/rec/b$j/report.md" || fail "recovery upload $j not retrievable"
done
NU=$(echo $ACKED | wc -w)
[ "$NU" -gt 0 ] || fail "no upload was acknowledged (the campaign would be vacuous)"
[ ! -s "$T/violations" ] && pass "no invalid upload acknowledged, no 500" || fail "violations: $(head -5 "$T/violations")"
[ "$KILLED" -ge "$KILLS" ] && [ "$PGK" -ge "$PG_KILLS" ] || fail "kills: server $KILLED, PostgreSQL $PGK"
[ "$RECOVERED" = "$PGK" ] || fail "recovered after $RECOVERED of $PGK PostgreSQL kills"
rows=$(psqlc "SELECT count(*) FROM bundles")
[ "$rows" -ge $((NU + RECOVERED)) ] || fail "rows $rows < acknowledged $((NU + RECOVERED))"
clean=""
for w in $(seq 1 100); do
  FS=$("$SERVER" fsck --data-dir "$SRV_DATA" --database-url "$DBURL")
  if jq -e '.clean and (.orphans | length) == 0' <<<"$FS" >/dev/null && \
     [ -z "$(ls -A "$SRV_DATA/tmp" "$SRV_DATA/staging" "$SRV_DATA/blobs/tmp" 2>/dev/null | grep -v ':$' | grep -v '^$')" ]; then
    clean=1; break
  fi
  sleep 0.2
done
[ -n "$clean" ] && pass "fsck clean, janitor collected every orphan and temp/staging leftover" \
  || fail "after the campaign: fsck $(head -c 400 <<<"$FS"); left: $(ls -A "$SRV_DATA/tmp" "$SRV_DATA/staging" "$SRV_DATA/blobs/tmp")"
srv_stop

summ() { cat "$T"/codes.* | awk -v k="$1" '$1 == k { n[$2]++; t++ } END { printf "%d", t; for (c in n) printf " %s×%d", c, n[c] }'; }
note "crash campaign: $KILLED server SIGKILLs, $PGK PostgreSQL SIGKILLs (recovered $RECOVERED without a server restart), $CLIENTS clients"
note "  new uploads: $(summ new)"
note "  duplicate uploads: $(summ dup)"
note "  invalid uploads: $(summ bad)"
note "  acknowledged: $NACK responses, $NU distinct bundles (+$RECOVERED recovery uploads); verified byte for byte: $verified; bundle rows: $rows"
[ $FAILS -eq 0 ] || { note "$FAILS check(s) failed"; exit 1; }
note "all crash-campaign checks passed"
