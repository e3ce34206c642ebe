#!/usr/bin/env bash
# Runs the corpus that restates the crate's tests (commit 8484133b, see
# docs/compatibility.md) as data: tests/fixtures/upstream/<area>/<case>/.
#
# A case folder holds:
#   README.md        the upstream file, test name and commit it restates, and what it checks
#   cmd              one line: the arguments given to `candle-graph`; $CASE expands to the case
#                    folder, $OUT to an empty scratch folder (cwd is $OUT)
#   expected.exit    the exit status (0 when absent)
#   expected.stdout  when present: stdout must equal it byte for byte
#   expected.stderr  when present: stderr must equal it byte for byte
#   expected/        when present: every file below it must equal $OUT/<same path> byte for byte
#   select           optional, one line: a jq filter applied to stdout before it is compared with
#                    expected.stdout (a case that holds one member of an envelope, e.g. .health)
# A case with none of the three expectations fails (a case that cannot fail is no test).
# PENDING.md in a case folder: the expectations are the crate's, and our output does not meet
# them yet for the reason it states (another area's open work). Such a case is counted as
# pending while it differs; once it passes it counts as passed with a NOTE to remove PENDING.md.
# Before comparing, the case folder's and the scratch folder's absolute paths in the actual
# output (stdout, stderr, files) are written as the literal text $CASE and $OUT, so goldens of
# envelopes that echo their input paths stay independent of where the checkout lies.
set -uo pipefail
CG="${CG_BINARY_DIR:?}/agent/candle-graph"
ROOT="${CG_FIXTURES:?}/upstream"
[ -x "$CG" ] || { echo "FAIL: $CG is not built" >&2; exit 1; }
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
pass=0 failed=0 pending=0
# normalize FILE: a copy with the case and scratch paths spelled $CASE / $OUT
normalize() {
  CASE_DIR="$2" OUT_DIR="$3" perl -pe 's/\Q$ENV{CASE_DIR}\E/\$CASE/g; s/\Q$ENV{OUT_DIR}\E/\$OUT/g' "$1"
}
check_case() {
  local case="$1" out="$SCRATCH/out" want_rc=0 rc args expectations=0
  rm -rf "$out" && mkdir -p "$out"
  [ -f "$case/README.md" ] || { echo "FAIL ${case#$ROOT/}: no README.md"; return 1; }
  [ -f "$case/cmd" ] || { echo "FAIL ${case#$ROOT/}: no cmd"; return 1; }
  [ -f "$case/expected.exit" ] && want_rc="$(tr -d ' \n' <"$case/expected.exit")"
  args="$(head -n 1 "$case/cmd")"
  ( cd "$out" && CASE="$case" OUT="$out" eval "set -- $args" && exec "$CG" "$@" ) \
    >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" </dev/null
  rc=$?
  normalize "$SCRATCH/stdout" "$case" "$out" >"$SCRATCH/stdout.n" && mv "$SCRATCH/stdout.n" "$SCRATCH/stdout"
  normalize "$SCRATCH/stderr" "$case" "$out" >"$SCRATCH/stderr.n" && mv "$SCRATCH/stderr.n" "$SCRATCH/stderr"
  if [ -f "$case/select" ] && [ "$rc" = "$want_rc" ]; then
    jq "$(head -n 1 "$case/select")" "$SCRATCH/stdout" >"$SCRATCH/stdout.n" 2>&1 || true
    mv "$SCRATCH/stdout.n" "$SCRATCH/stdout"
  fi
  if [ "$rc" != "$want_rc" ]; then
    echo "FAIL ${case#$ROOT/}: exit $rc, expected $want_rc"; head -c 2000 "$SCRATCH/stderr"; return 1
  fi
  if [ -f "$case/expected.stdout" ]; then
    expectations=1
    cmp -s "$case/expected.stdout" "$SCRATCH/stdout" || {
      echo "FAIL ${case#$ROOT/}: stdout differs"; diff <(head -c 200000 "$case/expected.stdout") \
        <(head -c 200000 "$SCRATCH/stdout") | head -n 20; return 1; }
  fi
  if [ -f "$case/expected.stderr" ]; then
    expectations=1
    cmp -s "$case/expected.stderr" "$SCRATCH/stderr" || {
      echo "FAIL ${case#$ROOT/}: stderr differs"; diff "$case/expected.stderr" "$SCRATCH/stderr" | head -n 20; return 1; }
  fi
  if [ -d "$case/expected" ]; then
    expectations=1
    local f rel
    while IFS= read -r -d '' f; do
      rel="${f#$case/expected/}"
      [ -f "$out/$rel" ] || { echo "FAIL ${case#$ROOT/}: $rel was not written"; return 1; }
      normalize "$out/$rel" "$case" "$out" >"$SCRATCH/file.n"
      cmp -s "$f" "$SCRATCH/file.n" || {
        echo "FAIL ${case#$ROOT/}: $rel differs"; diff "$f" "$SCRATCH/file.n" 2>&1 | head -n 20; return 1; }
    done < <(find "$case/expected" -type f -print0)
  fi
  [ "$expectations" = 1 ] || { echo "FAIL ${case#$ROOT/}: no expectation"; return 1; }
  return 0
}
while IFS= read -r cmdfile; do
  case_dir="$(dirname "$cmdfile")"
  if [ -f "$case_dir/PENDING.md" ]; then
    if check_case "$case_dir" >/dev/null; then
      echo "NOTE ${case_dir#$ROOT/}: passes now; remove its PENDING.md"; pass=$((pass + 1))
    else
      pending=$((pending + 1))
    fi
  elif check_case "$case_dir"; then pass=$((pass + 1)); else failed=$((failed + 1)); fi
done < <(find "$ROOT" -name cmd -type f | LC_ALL=C sort)
echo "upstream fixtures: $pass passed, $pending pending, $failed failed"
[ "$failed" = 0 ] && [ "$pass" -gt 0 ]
