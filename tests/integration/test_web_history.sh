#!/usr/bin/env bash
# Issue 15 web pages in headless Chromium against the real candle-graph-server
# and PostgreSQL: History (median + interval band, confirmed/unconfirmed change
# points, point → bundles and comparison with the previous commit, ambiguous
# series), Alerts (triage through PATCH /alerts/{id}) and the bundle list's
# branch/commit filters. The checks live in tests/browser/history.test.mjs.
. "${CG_SOURCE_DIR:-.}/tests/support/server_lib.sh"
. "${CG_SOURCE_DIR:-.}/tests/support/history_lib.sh"
browser_deps
srv_setup_admin
srv_start web --require-signature no
W=$T/work; mkdir -p "$W"
# series WL COMMITS SHIFT_AT FACTOR_PERMILLE SHORT_COMMIT (runs 3 there, else 5)
series() {
  local wl=$1 n=$2 at=$3 f=$4 short=$5 c i
  for c in $(seq 1 "$n"); do
    local level=1000000 runs=5
    [ "$c" -ge "$at" ] && level=$((1000 * f))
    [ "$c" = "$short" ] && runs=3
    for i in $(seq 1 $runs); do
      hist_bundle "$W/$wl-$c-$i" "run-$wl-$c-$i" "$(hist_sha "$wl$c")" main "$(hist_time "$c")" $((level + level * $(hist_noise "$wl$c$i") / 1000)) "$wl"
      hist_upload_dir "$W/$wl-$c-$i" "$ADMIN"
      [ "$CODE" = 201 ] || die "upload $wl/$c/$i: $CODE $BODY"
    done
  done
}
series web-h 12 6 1200 0
series web-u 10 5 1250 5
hist_bundle "$W/feat" run-feat "$(hist_sha feat)" feature "$(hist_time 40)" 1000000 web-h
hist_upload_dir "$W/feat" "$ADMIN"; [ "$CODE" = 201 ] || die "feature upload: $CODE"

export CG_WEB_URL="$URL" CG_WEB_TOKEN="$ADMIN" CG_CHROMIUM="$CHROMIUM" CG_SCREENSHOT_DIR="${CG_SCREENSHOT_DIR:-$BIN/screenshots}"
export CG_HIST_SHIFT="$(hist_sha web-h6)" CG_HIST_PREV="$(hist_sha web-h5)" CG_HIST_UNCONF="$(hist_sha web-u5)"
(cd "$SRC" && node --test --test-reporter=spec tests/browser/history.test.mjs) || fail "browser tests"
srv_stop
exit $((FAILS > 0))
