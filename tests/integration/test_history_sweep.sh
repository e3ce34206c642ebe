#!/usr/bin/env bash
# The post-upload change-point sweep (server/history.c, issue 13) reads the
# series and computes with no database connection held, then writes in a short
# transaction under the series lock that compares the series' version with the
# one it read (recomputing when another upload or sweep moved it).
# With a pool of 2 connections, 4 clients upload one series' runs in shuffled
# order while a poller reads /bundles and /readyz; then a commit older than all
# others arrives, so the sweep runs over the whole series. Asserts: every
# upload 201 and every poll 200; no series left marked; the concurrently built
# series has exactly the change points (and confirmed alerts) of the same runs
# uploaded one by one in commit order, which equal whole-series detection; and
# /metrics: sweeps and confirmations ran (cg_db_pool_compute_sections_total > 0,
# cg_history_sweeps_total written > 0) and none of them with a pooled
# connection held (cg_db_pool_held_while_computing_total 0), no answer queued
# holding one, every connection back.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
. "${CG_SOURCE_DIR:-.}/tests/support/history_lib.sh"
srv_setup_admin
srv_start main --require-signature no --pool-size 2
H=$(auth "$ADMIN")
W=$T/work; mkdir -p "$W"
COMMITS=16 RUNS=5 CLIENTS=4

# One tar per run of commit n (0 = the late, oldest commit) of series wl; the
# two series get the same commits, durations and cohorts.
level() { if [ "$1" -lt 9 ]; then echo 1000000; else echo 1150000; fi; }
make_run() { # WL N I
  local wl=$1 n=$2 i=$3 d=$W/$1-$2-$3 lv; lv=$(level "$n")
  local noise; noise=$(hist_noise "sweep-$n-$i")
  hist_bundle "$d" "run-$wl-$n-$i" "$(hist_sha "sweep$n")" main "$(hist_time "$n")" $((lv + lv * noise / 1000)) "$wl"
  pack "$d" "$d.tar"
  printf '%s\n' "$d.tar"
}
for wl in sweep-seq sweep-par; do
  for n in $(seq 0 $COMMITS); do for i in $(seq 1 $RUNS); do make_run "$wl" "$n" "$i"; done; done >"$T/$wl.list"
done

post() { # TAR → prints the status
  curl -s -o /dev/null -w '%{http_code}\n' -X POST -H "$H" -H 'Content-Type: application/x-tar' \
    --data-binary @"$1" "$URL/bundles"
}
poll_until() { # PID: GET /bundles and /readyz until PID exits
  while kill -0 "$1" 2>/dev/null; do
    curl -s -o /dev/null -w '%{http_code}\n' -H "$H" "$URL/bundles?limit=1"
    curl -s -o /dev/null -w '%{http_code}\n' "$URL/readyz"
    sleep 0.05
  done
}
export -f post; export H URL

# ---------------------------------------------------------------- sequential, in commit order
grep -v -- '-0-[0-9]*\.tar$' "$T/sweep-seq.list" | while read -r f; do post "$f"; done >"$T/codes.seq"
# ---------------------------------------------------------------- concurrent, shuffled
grep -v -- '-0-[0-9]*\.tar$' "$T/sweep-par.list" | while read -r f; do printf '%s %s\n' "$(md5sum <<<"$f" | cut -c1-8)" "$f"; done \
  | sort | cut -d' ' -f2 >"$T/par.order"
xargs -P "$CLIENTS" -n 1 bash -c 'post "$0"' <"$T/par.order" >"$T/codes.par" &
XP=$!; poll_until $XP >"$T/polls"; wait $XP
# ---------------------------------------------------------------- the late oldest commit: a sweep from position 0
for wl in sweep-seq sweep-par; do
  grep -- '-0-[0-9]*\.tar$' "$T/$wl.list" | xargs -P "$CLIENTS" -n 1 bash -c 'post "$0"' >>"$T/codes.late" &
  XP=$!; poll_until $XP >>"$T/polls"; wait $XP
done

total=$(cat "$T/codes.seq" "$T/codes.par" "$T/codes.late" | wc -l)
bad=$(cat "$T/codes.seq" "$T/codes.par" "$T/codes.late" | grep -vc '^201$')
[ "$total" = $((2 * (COMMITS + 1) * RUNS)) ] && [ "$bad" = 0 ] && pass "$total uploads 201 (4 clients, pool of 2)" \
  || fail "uploads: $total sent, $bad not 201: $(sort "$T/codes.par" "$T/codes.late" | uniq -c | tr '\n' ' ')"
npoll=$(wc -l <"$T/polls")
[ "$npoll" -gt 0 ] && ! grep -qv '^200$' "$T/polls" && pass "$npoll reads during the uploads and sweeps: all 200" \
  || fail "reads during the sweeps: $(sort "$T/polls" | uniq -c | tr '\n' ' ')"
[ "$(psqlc "SELECT count(*) FROM history_series WHERE dirty_from IS NOT NULL")" = 0 ] && pass "no series left marked" \
  || fail "series left marked: $(psqlc "SELECT id, dirty_from, version FROM history_series")"

# ---------------------------------------------------------------- same change points either way
cps() { # WL [extra query] → the change points without alert ids
  http GET "/history?workload_id=$1&branch=main${2:-}" -H "$H"; expect 200 "" "GET /history $1${2:-}"
  jq -cS '[.change_points[] | del(.alert_id)]' "$T/body"
}
seq_cps=$(cps sweep-seq); par_cps=$(cps sweep-par); full_cps=$(cps sweep-par '&detect=full')
[ "$(jq length <<<"$seq_cps")" -ge 1 ] && pass "sequential series: $(jq length <<<"$seq_cps") change point(s)" || fail "no change point: $seq_cps"
[ "$par_cps" = "$seq_cps" ] && pass "concurrent, shuffled uploads give the change points of the sequential run" \
  || fail "concurrent ≠ sequential: $par_cps vs $seq_cps"
[ "$par_cps" = "$full_cps" ] && pass "and they equal whole-series detection" || fail "incremental ≠ full: $par_cps vs $full_cps"
want=$(jq -nc --arg a "$(hist_sha sweep8)" --arg b "$(hist_sha sweep9)" '[[$a, $b]]')
for wl in sweep-seq sweep-par; do
  got=$(jq -c '[.[] | select(.state == "confirmed") | [.before_commit, .after_commit]]' <<<"$(cps $wl)")
  [ "$got" = "$want" ] && pass "$wl: the planted shift is the one confirmed change point" || fail "$wl confirmed: $got, want $want"
  http GET "/alerts?workload_id=$wl" -H "$H"
  [ "$(jq '.items | length' "$T/body")" = 1 ] && pass "$wl: one alert" || fail "$wl alerts: $(jq -c '[.items[] | [.before_commit, .after_commit]]' "$T/body")"
done

# ---------------------------------------------------------------- no connection held while computing
http GET /metrics; expect 200 "" "GET /metrics"
metric() { awk -v k="$1" '$1 == k {print $2}' "$T/body"; }
sections=$(metric cg_db_pool_compute_sections_total); held=$(metric cg_db_pool_held_while_computing_total)
written=$(metric 'cg_history_sweeps_total{result="written"}'); conflicts=$(metric 'cg_history_sweeps_total{result="conflict"}')
[ "${sections:-0}" -gt 0 ] && [ "${written:-0}" -gt 0 ] && pass "$written sweeps written, $sections compute sections" \
  || fail "no sweep ran: sections ${sections:-missing}, written ${written:-missing}"
[ "$held" = 0 ] && pass "no sweep step or confirmation ran with a pooled connection held (cg_db_pool_held_while_computing_total 0)" \
  || fail "computed while holding a connection: ${held:-missing}"
note "sweeps that found their series moved and recomputed: ${conflicts:-missing}"
[ "$(metric cg_db_pool_held_at_reply_total)" = 0 ] && pass "no answer queued with a connection held" || fail "held at reply: $(metric cg_db_pool_held_at_reply_total)"
[ "$(metric cg_db_pool_in_use)" = 0 ] && pass "every connection back (cg_db_pool_in_use 0)" || fail "in use: $(metric cg_db_pool_in_use)"

srv_stop
[ $FAILS = 0 ] || exit 1
echo "history sweep: $total uploads, $npoll reads, $written sweeps written (${conflicts} recomputed), 0 computed holding a connection"
