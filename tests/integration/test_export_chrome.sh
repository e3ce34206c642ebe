#!/usr/bin/env bash
# candle-graph export --format chrome: Chrome Trace Event Format JSON that Perfetto
# and chrome://tracing open. Checks, on fixture traces and on a trace with
# concurrent (overlapping) sibling spans:
#  - the output is one JSON object with traceEvents, every span, op and device
#    interval exactly once, times exact (µs with three decimals from integer ns);
#  - complete events nest properly on every (pid, tid) track (no partial overlap);
#  - each (device, clock_id) is its own process, never the host's, named as its own clock;
#    pids follow first appearance in start order and process names come in pid order;
#  - memory counters: logical live bytes per device, physical samples verbatim;
#  - a bundle is verified first (same bytes as its raw trace; a tampered bundle is refused);
#  - usage errors exit 2.
set -euo pipefail
CG="${CG_BINARY_DIR:?}/agent/candle-graph"
SRC="${CG_SOURCE_DIR:-$(pwd)}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

check() { # check LIST: lines "TRACE<TAB>EXPORT"; prints "events lanes" of the last pair
  python3 - "$1" <<'PY'
import json, sys
from decimal import Decimal
def check(trace_path, export_path):
  trace = [json.loads(l) for l in open(trace_path) if l.strip()]
  doc = json.load(open(export_path), parse_float=Decimal)
  ev = doc["traceEvents"]
  assert doc["otherData"]["producer"] == "candle-graph/chrome-trace/1"
  def ns(x): # exact: the text has three decimals of µs
      d = x if isinstance(x, Decimal) else Decimal(x)
      return int(d * 1000)
  spans = {r["id"]: r for r in trace if r["kind"] == "span_start"}
  ends = {r["id"]: r for r in trace if r["kind"] == "span_end"}
  ops = [r for r in trace if r["kind"] == "op"]
  dis = [r for r in trace if r["kind"] == "device_interval"]
  xs = [e for e in ev if e["ph"] == "X"]
  got_spans = [e for e in xs if e["cat"] == "span"]
  assert sorted(e["args"]["span_id"] for e in got_spans) == sorted(spans), "every span once"
  for e in got_spans:
      s = spans[e["args"]["span_id"]]
      assert e["pid"] == 1 and e["name"] == s["name"]
      assert ns(e["ts"]) == s["start_ns"], (e, s)
      assert ns(e["dur"]) == ends.get(s["id"], {}).get("duration_ns", 0)
  got_ops = [e for e in xs if e["cat"] == "op"]
  assert len(got_ops) == len(ops)
  assert sorted((ns(e["ts"]), ns(e["dur"]), e["name"]) for e in got_ops) == \
      sorted((o["timestamp_ns"], o["duration_ns"], o["op_name"]) for o in ops)
  got_dev = [e for e in xs if e["cat"] == "device"]
  assert len(got_dev) == len(dis)
  names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in ev if e["ph"] == "M"}
  clock_pid = {}
  for e in got_dev:
      a = e["args"]
      clock_pid.setdefault((a["clock_id"], e["pid"]), 0)
      assert e["pid"] != 1, "device intervals never on the host process"
      assert "own clock" in names[(e["pid"], None)] and a["clock_id"] in names[(e["pid"], None)]
  assert len({p for _, p in clock_pid}) == len({(d["device"], d["clock_id"]) for d in dis})
  # process names in pid order; device clocks numbered in order of first appearance (start order)
  pids = [e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
  assert pids == list(range(1, len(pids) + 1)), pids
  first = {}
  for d in sorted(dis, key=lambda d: (d["start_ns"], -d["duration_ns"])):
      first.setdefault((d["device"], d["clock_id"]), len(first) + 2)
  for e in got_dev:
      a = e["args"]
      dev = next(d["device"] for d in dis if (d["span_id"], d["clock_id"], d["stream_id"], d["start_ns"], d["duration_ns"])
                 == (a["span_id"], a["clock_id"], a["stream_id"], ns(e["ts"]), ns(e["dur"])))
      assert e["pid"] == first[(dev, a["clock_id"])], (e, first)
  tracks = {}
  for e in xs:
      tracks.setdefault((e["pid"], e["tid"]), []).append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
      assert (e["pid"], e["tid"]) in names, "every track is named"
  for key, iv in tracks.items():
      iv.sort(key=lambda p: (p[0], -(p[1] - p[0])))
      stack = []
      for s, t in iv:
          while stack and stack[-1] <= s: stack.pop()
          assert not stack or t <= stack[-1], f"partial overlap on track {key}: [{s},{t}] vs end {stack[-1]}"
          stack.append(t)
  mem = [r for r in trace if r["kind"] == "memory"]
  live, want = {}, []
  for r in sorted(mem, key=lambda r: r["timestamp_ns"]):
      v = live.get(r["device"], 0)
      v = max(0, v - r["bytes"]) if r["action"] == "free" else v + r["bytes"]
      live[r["device"]] = v
      want.append((r["timestamp_ns"], "logical memory " + r["device"], v))
  got = [(ns(e["ts"]), e["name"], e["args"]["live_bytes"]) for e in ev if e["ph"] == "C" and e["name"].startswith("logical")]
  assert got == want, (got, want)
  phys = [(ns(e["ts"]), e["args"]) for e in ev if e["ph"] == "C" and e["name"].startswith("device memory")]
  wantp = [(r["timestamp_ns"], {k: r[k] for k in ("used_bytes", "free_bytes", "reserved_bytes", "capacity_bytes") if k in r})
           for r in trace if r["kind"] == "device_memory"]
  assert phys == wantp, (phys, wantp)
  return len(xs), len(tracks)
last = None
for line in open(sys.argv[1]):
  t, e = line.rstrip("\n").split("\t")
  try:
    last = check(t, e)
  except AssertionError as ex:
    sys.exit(f"check of {t}: {ex!r}")
print(*last)
PY
}

n=0
: >"$T/list"
while IFS= read -r f; do
  if "$CG" export "$f" --format chrome -o "$T/out$n.json" 2>"$T/err"; then
    printf '%s\t%s\n' "$f" "$T/out$n.json" >>"$T/list"
    n=$((n + 1))
  else
    # export refuses exactly the traces that do not parse: the evidence commands refuse them too
    if "$CG" import "$f" -o "$T/import.json" 2>/dev/null; then fail "export of $f failed but import reads it: $(cat "$T/err")"; fi
  fi
done < <(find "$SRC/tests/fixtures/trace" "$SRC/tests/fixtures/bundles" -name trace.jsonl | LC_ALL=C sort)
[ "$n" -ge 50 ] || fail "only $n fixture traces exported"
check "$T/list" >/dev/null || fail "fixture exports"
echo "fixture traces exported and checked: $n"

# Concurrent sibling spans (two threads under one root) and an op wider than its span:
# nesting must hold by spilling into extra lanes.
BASE="$SRC/tests/fixtures/trace/empty_gradient_event_id/trace.jsonl"
python3 - "$BASE" "$T/concurrent.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
meta, term = recs[0], recs[-1]
assert term["kind"] == "terminal"
out = [meta, {"kind":"span_start","id":"r","name":"root","start_ns":0,"span_kind":"function","measured":True}]
for i, (s, d) in enumerate([(10, 100), (50, 100), (60, 20), (120, 50)]):
    out.append({"kind":"span_start","id":f"c{i}","parent_id":"r","name":f"worker {i}","start_ns":s,"span_kind":"function","measured":False})
for i, (s, d) in enumerate([(10, 100), (50, 100), (60, 20), (120, 50)]):
    out.append({"kind":"span_end","id":f"c{i}","duration_ns":d})
out.append({"kind":"span_end","id":"r","duration_ns":200})
out.append({"kind":"op","span_id":"c2","op_name":"wide","inputs":[],"shape":[1],"dtype":"f32","device":"cpu","duration_ns":90,"timestamp_ns":65,"input_dense_bytes":0})
term["timestamp_ns"] = 300
out.append(term)
with open(sys.argv[2], "w") as f:
    for r in out: f.write(json.dumps(r) + "\n")
PY
"$CG" export "$T/concurrent.jsonl" --format chrome -o "$T/c.json"
printf '%s\t%s\n' "$T/concurrent.jsonl" "$T/c.json" >"$T/list1"
read -r events lanes < <(check "$T/list1")
[ "$events" = 6 ] || fail "concurrent: $events events"
[ "$lanes" -ge 3 ] || fail "concurrent: overlapping siblings and the wide op need >= 3 lanes, got $lanes"
echo "concurrent spans: $events events on $lanes lanes, nesting holds"

# Six device clocks: processes numbered by first appearance in start order
# (not by the order of any hash table), their names listed in that order.
python3 - "$T/concurrent.jsonl" "$T/clocks.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
clocks = [("cuda:1", "zeta", 10), ("cuda:0", "alpha", 20), ("cuda:0", "mu", 30), ("cuda:2", "b", 40),
          ("cuda:1", "alpha", 50), ("cuda:0", "zeta", 60)]
dev = [{"kind":"device_interval","span_id":"c0","device":d,"stream_id":"7","clock_id":c,"backend":"cuda-event",
        "start_ns":s,"duration_ns":5} for d, c, s in reversed(clocks)]
recs[-1:-1] = dev
with open(sys.argv[2], "w") as f:
    for r in recs: f.write(json.dumps(r) + "\n")
PY
"$CG" export "$T/clocks.jsonl" --format chrome -o "$T/k.json"
printf '%s\t%s\n' "$T/clocks.jsonl" "$T/k.json" >"$T/list2"
check "$T/list2" >/dev/null || fail "six clocks"
python3 - "$T/k.json" <<'PY' || fail "six clocks: process names not in first-seen order"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
got = [e["args"]["name"].split(" (")[0] for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
want = ["host"] + [f"device {d}, clock {c}" for d, c in
                   [("cuda:1", "zeta"), ("cuda:0", "alpha"), ("cuda:0", "mu"), ("cuda:2", "b"), ("cuda:1", "alpha"),
                    ("cuda:0", "zeta")]]
assert got == want, got
PY
echo "six device clocks: processes in first-seen order"

# A bundle: verified first, same bytes as its trace; tampering is refused.
"$CG" report "$BASE" --bundle "$T/bundle" >/dev/null
GOOD="$T/bundle"
"$CG" export "$GOOD" --format chrome -o "$T/b.json"
"$CG" export "$BASE" --format chrome >"$T/t.json"
cmp -s "$T/b.json" "$T/t.json" || fail "bundle export differs from its trace's"
cp -r "$GOOD" "$T/tampered" && printf ' ' >>"$T/tampered/trace.jsonl"
if "$CG" export "$T/tampered" --format chrome -o "$T/x.json" 2>"$T/err"; then fail "tampered bundle exported"; fi
grep -q "trace.jsonl" "$T/err" || fail "tampered bundle: $(cat "$T/err")"

# Usage errors.
set +e
"$CG" export "$GOOD" >/dev/null 2>&1; [ $? = 2 ] || fail "missing --format is a usage error"
"$CG" export "$GOOD" --format pprof >/dev/null 2>&1; [ $? = 2 ] || fail "unknown format is a usage error"
"$CG" export --format chrome >/dev/null 2>&1; [ $? = 2 ] || fail "missing INPUT is a usage error"
set -e
echo "export_chrome: all checks passed"
