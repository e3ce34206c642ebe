// gen_trace.mjs — writes a synthetic candle-graph/trace/10 of about N records for the
// timeline benchmark and the browser test: the meta line of the spec §15
// illustrative trace, a root span and a measured span, then units of
// (span_start, op, device_interval, span_end) under the measured span, device
// intervals alternating between two devices on one device clock.
// usage: node gen_trace.mjs N OUT.jsonl [RUN_ID]
import { createWriteStream, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [n, out, runId = 'run-bench-' + n] = process.argv.slice(2);
if (!n || !out) { console.error('usage: node gen_trace.mjs N OUT.jsonl [RUN_ID]'); process.exit(2); }
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const meta = JSON.parse(readFileSync(join(root, 'tests/fixtures/reader/illustrative.jsonl'), 'utf8').split('\n')[0]);
meta.run_id = runId;
const units = Math.max(1, Math.floor((Number(n) - 6) / 4));
const w = createWriteStream(out);
let buf = [];
const put = (o) => { buf.push(JSON.stringify(o)); if (buf.length >= 4096) { w.write(buf.join('\n') + '\n'); buf = []; } };
const unitNs = 1000;
const total = units * unitNs + 200;
put(meta);
put({ kind: 'span_start', id: 's0', name: 'toy::train::update', start_ns: 0, span_kind: 'function', measured: false });
put({ kind: 'span_start', id: 's1', parent_id: 's0', name: 'toy/update-000000000003', start_ns: 100, span_kind: 'function', measured: true });
for (let i = 0; i < units; i++) {
  const t = 100 + i * unitNs, id = 'u' + i;
  put({ kind: 'span_start', id, parent_id: 's1', name: 'layer' + (i % 16), start_ns: t, span_kind: 'module', measured: false });
  put({ kind: 'op', span_id: id, op_name: i % 3 ? 'matmul' : 'add', inputs: [], shape: [8, 16], dtype: 'f32', device: 'cuda:0', duration_ns: 400, timestamp_ns: t + 100, output_dense_bytes: 512, input_dense_bytes: 0 });
  put({ kind: 'device_interval', span_id: id, device: i % 2 ? 'cuda:1' : 'cuda:0', stream_id: '7', clock_id: 'cuda-event-0', backend: 'cuda-event', start_ns: 5000 + i * unitNs, duration_ns: 600 });
  put({ kind: 'span_end', id, duration_ns: 800 });
}
put({ kind: 'span_end', id: 's1', duration_ns: total - 100 });
put({ kind: 'span_end', id: 's0', duration_ns: total + 50 });
put({ kind: 'terminal', outcome: 'complete', timestamp_ns: total + 50 });
w.write(buf.join('\n') + '\n');
w.end();
