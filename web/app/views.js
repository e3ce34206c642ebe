// views.js — the bundle page's Evidence, Trace, Span costs, Memory and GPU tabs,
// drawn only from the server's verified views (GET /bundles/{id}/views/...,
// derived from the stored trace.jsonl and nsight/ files), never from an uploaded
// viewer.html. Tables page through the server (sort, filter, offset/limit);
// the span and op tables are virtualized: only the rows in view are in the DOM
// and pages are fetched as they scroll into view.
// First meaningful paint of each tab is recorded in window.CG_TAB_STATS[tab] (ms
// since the tab was opened) and as a performance mark "cg-tab-paint-<tab>".
import { getJson } from './api.js';
import { h, s, badge, errorPanel, fmtBytes, fmtNs, isNum } from './ui.js';

const stats = (window.CG_TAB_STATS = window.CG_TAB_STATS || {});
const view = (id, name, q) => getJson('/bundles/' + id + '/views/' + name + (q ? '?' + new URLSearchParams(q) : ''));
const int = (v) => (isNum(v) ? v.toLocaleString('en-US') : '\u2014');
const ns = (v) => (isNum(v) ? h('span', { title: v.toLocaleString('en-US') + ' ns' }, fmtNs(v)) : '\u2014');
const verifiedNote = () => h('p', { class: 'wa-note', 'data-source': 'verified' }, badge('ok', 'verified'),
  ' Drawn from the server\u2019s views of the verified trace and evidence, not from the uploaded viewer.html.');

function painted(pane, tab, t0) {
  if (pane.dataset.painted) return;
  pane.dataset.painted = 'true';
  stats[tab] = performance.now() - t0;
  performance.mark('cg-tab-paint-' + tab);
}

async function guarded(pane, what, fn) {
  const wait = h('p', { class: 'wa-loading' }, 'Loading ' + what + '\u2026');
  pane.append(wait);
  try { await fn(); } catch (e) { pane.append(errorPanel(e, what)); } finally { wait.remove(); }
}

function truncationNote(tr) {
  const cut = Object.entries(tr || {}).filter(([, v]) => v && v.truncated);
  if (!cut.length) return null;
  return h('p', { class: 'cg-note', 'data-truncation': '' }, 'Lists cut for display: ',
    cut.map(([k, v]) => k + ' (' + int(v.displayed) + ' of ' + int(v.total) + ')').join(', '), '.');
}

/* ---------------------------------------------------------------- Evidence */

export function renderEvidence(pane, id) {
  const t0 = performance.now();
  return guarded(pane, 'the evidence', async () => {
    const ev = await view(id, 'evidence');
    pane.append(verifiedNote());
    const note = truncationNote(ev.truncation);
    if (note) pane.append(note);
    const payload = { summary: { capture_complete: ev.capture_complete, structurally_valid: ev.structurally_valid },
      views: { evidence: { provenance: ev.provenance, health: ev.health, capabilities: ev.capabilities,
        findings: ev.findings || [], facts: ev.facts || [], gaps: ev.gaps || [], tensors: [], gradients: [] } } };
    const box = h('div', { 'data-view': 'evidence' });
    pane.append(box);
    window.CG.views.evidence(box, payload);
    painted(pane, 'evidence', t0);
  });
}

/* ---------------------------------------------------------------- virtualized table */

const ROW_H = 28, PAGE = 100, VIEW_ROWS = 18;

/* A server-paged table: cols [{key, label, num, fmt(row)}]; filters are inputs
 * whose values become query parameters. Calls onFirst once the first rows show. */
function pagedTable(id, name, { cols, sort, order, filters, rowId, onFirst }) {
  const state = { sort, order, q: {}, pages: new Map(), matched: null, total: null, gen: 0 };
  const root = h('div', { class: 'wa-vt', 'data-table': name });
  const status = h('p', { class: 'wa-status', role: 'status', 'aria-live': 'polite' });
  const form = h('form', { class: 'wa-filters wa-vt-filters', onsubmit: (e) => { e.preventDefault(); apply(); } });
  for (const f of filters) {
    const el = f.options
      ? h('select', { id: 'vt-' + name + '-' + f.key, name: f.key }, h('option', { value: '' }, 'any'), f.options.map((o) => h('option', { value: o }, o)))
      : h('input', { id: 'vt-' + name + '-' + f.key, name: f.key, type: 'search', placeholder: f.placeholder || '' });
    form.append(h('label', { for: el.id }, f.label), el);
  }
  form.append(h('button', { type: 'submit' }, 'Filter'));
  const head = h('tr', null, cols.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null, 'data-key': c.key },
    h('button', { type: 'button', class: 'wa-sort', onclick: () => { if (state.sort === c.key) state.order = state.order === 'asc' ? 'desc' : 'asc'; else { state.sort = c.key; state.order = c.num ? 'desc' : 'asc'; } reset(); } }, c.label))));
  const tbody = h('tbody');
  const tbl = h('table', { class: 'wa-table wa-vt-table' }, h('thead', null, head), tbody);
  const spacer = h('div', { class: 'wa-vt-spacer' });
  const scroller = h('div', { class: 'wa-vt-scroll', tabindex: '0', style: 'height:' + (ROW_H * VIEW_ROWS + 34) + 'px' }, spacer, tbl);
  root.append(form, status, scroller);
  scroller.addEventListener('scroll', () => draw());

  function apply() {
    state.q = {};
    for (const f of filters) { const v = form.elements[f.key].value; if (v) state.q[f.key] = v; }
    reset();
  }
  function reset() { state.pages = new Map(); state.matched = null; state.gen++; scroller.scrollTop = 0; load(0); }
  async function load(p) {
    if (state.pages.has(p)) return;
    const gen = state.gen;
    state.pages.set(p, null);
    try {
      const r = await view(id, name, Object.assign({ sort: state.sort, order: state.order, offset: p * PAGE, limit: PAGE }, state.q));
      if (gen !== state.gen) return;
      state.pages.set(p, r.rows);
      state.matched = r.matched; state.total = r.total;
      root.dataset.matched = r.matched; root.dataset.total = r.total; root.dataset.sort = r.sort; root.dataset.order = r.order;
      draw();
      if (onFirst) { onFirst(); onFirst = null; }
    } catch (e) {
      if (gen !== state.gen) return;
      state.pages.delete(p);
      status.textContent = ''; root.append(errorPanel(e, 'The ' + name + ' table'));
    }
  }
  function draw() {
    const n = state.matched || 0;
    spacer.style.height = n * ROW_H + 'px';
    const first = Math.min(Math.max(0, n - 1), Math.floor(scroller.scrollTop / ROW_H));
    const last = Math.min(n, first + VIEW_ROWS + 2);
    tbl.style.transform = 'translateY(' + first * ROW_H + 'px)';
    tbody.textContent = '';
    for (let i = first; i < last; i++) {
      const p = Math.floor(i / PAGE), rows = state.pages.get(p);
      if (!rows) { load(p); tbody.append(h('tr', { class: 'wa-vt-pending', 'data-row': i }, h('td', { colspan: cols.length }, '\u2026'))); continue; }
      const r = rows[i - p * PAGE];
      if (!r) continue;
      tbody.append(h('tr', { 'data-row': i, 'data-id': rowId ? rowId(r) : null }, cols.map((c) => h('td', { class: c.num ? 'num' : null }, c.fmt ? c.fmt(r) : (r[c.key] ?? '\u2014')))));
    }
    head.querySelectorAll('th').forEach((th) => th.setAttribute('aria-sort', th.dataset.key === state.sort ? (state.order === 'desc' ? 'descending' : 'ascending') : 'none'));
    status.textContent = n === state.total ? int(n) + ' rows' : int(n) + ' of ' + int(state.total) + ' rows match';
  }
  load(0);
  return root;
}

/* ---------------------------------------------------------------- Trace */

function barChart(title, rows, label, value) {
  const W = 640, BH = 18, max = Math.max(1, ...rows.map(value));
  const g = s('g', { class: 'wa-bars' }, rows.map((r, i) => s('g', { transform: 'translate(0,' + i * (BH + 4) + ')' },
    s('rect', { x: 220, y: 0, width: Math.max(1, (value(r) / max) * (W - 320)), height: BH, fill: '#3d7a4f' }),
    s('text', { x: 214, y: BH - 5, 'text-anchor': 'end', 'font-size': 11 }, label(r).length > 34 ? label(r).slice(0, 33) + '\u2026' : label(r)),
    s('text', { x: 226 + Math.max(1, (value(r) / max) * (W - 320)), y: BH - 5, 'font-size': 11 }, fmtNs(value(r))))));
  return h('figure', { class: 'wa-chart' }, h('figcaption', null, title),
    s('svg', { viewBox: '0 0 ' + W + ' ' + Math.max(BH, rows.length * (BH + 4)), width: '100%', role: 'img', 'aria-label': title }, g));
}

export function renderTrace(pane, id) {
  const t0 = performance.now();
  return guarded(pane, 'the trace', async () => {
    const top = await view(id, 'spans', { sort: 'total_ns', order: 'desc', limit: 12 });
    pane.append(verifiedNote());
    const rows = top.rows.filter((r) => isNum(r.total_ns ?? r.duration_ns));
    pane.append(barChart('Longest host spans (total time)', rows, (r) => r.name, (r) => r.total_ns ?? r.duration_ns ?? 0));
    painted(pane, 'trace', t0);
    pane.append(h('h2', null, 'Spans'), pagedTable(id, 'spans', {
      sort: 'start_ns', order: 'asc', rowId: (r) => r.id,
      filters: [{ key: 'name', label: 'Name', placeholder: 'substring' }, { key: 'kind', label: 'Kind', options: ['function', 'module', 'op'] },
        { key: 'step', label: 'Step', options: ['forward', 'backward', 'optimizer', 'none'] }],
      cols: [{ key: 'name', label: 'Name' }, { key: 'kind', label: 'Kind' }, { key: 'step', label: 'Step' },
        { key: 'depth', label: 'Depth', num: true }, { key: 'start_ns', label: 'Start', num: true, fmt: (r) => int(r.start_ns) },
        { key: 'duration_ns', label: 'Duration', num: true, fmt: (r) => ns(r.duration_ns) },
        { key: 'self_ns', label: 'Self', num: true, fmt: (r) => ns(r.self_ns) }, { key: 'ops', label: 'Ops', num: true }],
    }));
    pane.append(h('h2', null, 'Ops'), pagedTable(id, 'ops', {
      sort: 'timestamp_ns', order: 'asc', rowId: (r) => String(r.index),
      filters: [{ key: 'name', label: 'Name', placeholder: 'substring' }, { key: 'device', label: 'Device', placeholder: 'exact' }],
      cols: [{ key: 'name', label: 'Op' }, { key: 'span_id', label: 'Span' }, { key: 'device', label: 'Device' }, { key: 'dtype', label: 'Dtype' },
        { key: 'timestamp_ns', label: 'Timestamp', num: true, fmt: (r) => int(r.timestamp_ns) },
        { key: 'duration_ns', label: 'Duration', num: true, fmt: (r) => ns(r.duration_ns) },
        { key: 'output_bytes', label: 'Output', num: true, fmt: (r) => fmtBytes(r.output_bytes) }],
    }));
  });
}

/* ---------------------------------------------------------------- Span costs */

export function renderCosts(pane, id) {
  const t0 = performance.now();
  pane.append(verifiedNote(), h('p', { class: 'cg-note' }, 'Host time of every span and op, summed by (kind, name): the heaviest first. Search and sort run on the server.'));
  pane.append(pagedTable(id, 'costs', {
    sort: 'total_ns', order: 'desc', rowId: (r) => r.kind + ':' + r.name, onFirst: () => painted(pane, 'span_costs', t0),
    filters: [{ key: 'q', label: 'Search', placeholder: 'name substring' }, { key: 'kind', label: 'Kind', options: ['root', 'function', 'module', 'op'] }],
    cols: [{ key: 'name', label: 'Name' }, { key: 'kind', label: 'Kind' }, { key: 'count', label: 'Count', num: true, fmt: (r) => int(r.count) },
      { key: 'self_ns', label: 'Self', num: true, fmt: (r) => ns(r.self_ns) }, { key: 'total_ns', label: 'Total', num: true, fmt: (r) => ns(r.total_ns) },
      { key: 'max_ns', label: 'Longest', num: true, fmt: (r) => ns(r.max_ns) }],
  }));
}

/* ---------------------------------------------------------------- Memory */

function memChart(tl) {
  const W = 720, H = 200, P = 40, b = tl.buckets;
  if (!b.length) return h('p', { class: 'cg-note' }, 'No logical memory timeline.');
  const max = Math.max(1, ...b.map((x) => x[2])), x = (t) => P + ((t - tl.start_ns) / Math.max(1, tl.end_ns - tl.start_ns)) * (W - P - 8);
  const y = (v) => H - 20 - (v / max) * (H - 34);
  const band = b.map((k) => s('rect', { x: x(k[0]), y: y(k[2]), width: Math.max(1, x(k[0] + tl.bucket_ns) - x(k[0])), height: Math.max(1, y(k[1]) - y(k[2])), fill: '#9ec5e8' }));
  const line = s('polyline', { fill: 'none', stroke: '#2f6f9f', 'stroke-width': 1.5, points: b.map((k) => x(k[0] + tl.bucket_ns) + ',' + y(k[3])).join(' ') });
  return h('figure', { class: 'wa-chart', 'data-chart': 'memory' }, h('figcaption', null, 'Logical live bytes (band: min\u2013max per bucket; line: last)'),
    s('svg', { viewBox: '0 0 ' + W + ' ' + H, width: '100%', role: 'img', 'aria-label': 'live bytes over time' },
      s('g', null, band, line, s('text', { x: 2, y: 14, 'font-size': 11 }, fmtBytes(max)), s('text', { x: 2, y: H - 22, 'font-size': 11 }, '0'))));
}

export function renderMemory(pane, id) {
  const t0 = performance.now();
  return guarded(pane, 'the memory view', async () => {
    const m = await view(id, 'memory', { buckets: 400 });
    pane.append(verifiedNote());
    const lg = m.logical;
    if (!lg) { pane.append(h('p', { class: 'cg-note', 'data-memory': 'unknown' }, 'Logical memory: unknown (the trace has no memory events).')); painted(pane, 'memory', t0); }
    else {
      const pk = lg.peak || {};
      pane.append(h('dl', { class: 'wa-kv', 'data-memory': 'logical' },
        h('dt', null, 'Peak live bytes'), h('dd', { 'data-field': 'peak_live_bytes' }, isNum(pk.live_bytes) ? fmtBytes(pk.live_bytes) + ' (' + int(pk.live_bytes) + ' bytes)' : 'unknown'),
        h('dt', null, 'Peak at'), h('dd', null, isNum(pk.timestamp_ns) ? int(pk.timestamp_ns) + ' ns' : '\u2014'),
        h('dt', null, 'Allocations'), h('dd', null, int(lg.storage_allocation_count)),
        h('dt', null, 'Matched frees'), h('dd', null, int(lg.matched_storage_free_count)),
        h('dt', null, 'Total allocated'), h('dd', null, fmtBytes(lg.total_allocated_bytes))));
      pane.append(memChart(m.timeline));
      painted(pane, 'memory', t0);
      const cats = Object.entries(pk.live_bytes_by_category || {});
      if (cats.length) pane.append(h('h3', null, 'At the peak, by category'), h('table', { class: 'wa-table' }, h('tbody', null, cats.map(([k, v]) => h('tr', null, h('td', null, k), h('td', { class: 'num' }, fmtBytes(v)))))));
      const devs = lg.by_device || [];
      if (devs.length) pane.append(h('h3', null, 'By device'), h('table', { class: 'wa-table' },
        h('thead', null, h('tr', null, ['Device', 'Allocations', 'Frees', 'Allocated', 'Peak'].map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', null, devs.map((d) => h('tr', null, h('td', null, d.device), h('td', { class: 'num' }, int(d.storage_allocation_count)),
          h('td', { class: 'num' }, int(d.matched_storage_free_count)), h('td', { class: 'num' }, fmtBytes(d.total_allocated_bytes)), h('td', { class: 'num' }, fmtBytes(d.peak_live_bytes)))))));
      const live = pk.live_allocations || [];
      if (live.length) pane.append(h('h3', null, 'Live allocations at the peak'), h('table', { class: 'wa-table' },
        h('thead', null, h('tr', null, ['Storage', 'Device', 'Bytes', 'Category', 'Op'].map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', null, live.map((l) => h('tr', null, h('td', null, l.storage_id), h('td', null, l.device), h('td', { class: 'num' }, fmtBytes(l.bytes)), h('td', null, l.category), h('td', null, l.op_name ?? '\u2014'))))));
    }
    const note = truncationNote(m.truncation);
    if (note) pane.append(note);
    pane.append(h('h3', null, 'Physical memory'), m.physical ? h('table', { class: 'wa-table', 'data-memory': 'physical' },
      h('thead', null, h('tr', null, ['Device', 'Samples', 'Peak used', 'Peak reserved', 'Minimum free'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', null, (m.physical.by_device || []).map((d) => h('tr', null, h('td', null, d.device), h('td', { class: 'num' }, int(d.sample_count)),
        h('td', { class: 'num' }, fmtBytes(d.peak_used_bytes)), h('td', { class: 'num' }, fmtBytes(d.peak_reserved_bytes)), h('td', { class: 'num' }, fmtBytes(d.minimum_free_bytes)))))) : h('p', { class: 'cg-note' }, 'unknown (no device_memory samples)'));
  });
}

/* ---------------------------------------------------------------- GPU */

const GPU_COLS = {
  summary: [['name', 'Name'], ['category', 'Category'], ['count', 'Count', int], ['total_ns', 'Total', ns], ['average_ns', 'Average', ns], ['maximum_ns', 'Max', ns]],
  timeline: [['name', 'Name'], ['kind', 'Kind'], ['device', 'Device'], ['stream', 'Stream'], ['start_ns', 'Start', int], ['duration_ns', 'Duration', ns]],
  device_clocks: [['device', 'Device'], ['clock_id', 'Clock'], ['interval_count', 'Intervals', int], ['busy_ns', 'Busy', ns]],
  device_spans: [['span_id', 'Span'], ['span_name', 'Name'], ['device', 'Device'], ['clock_id', 'Clock'], ['interval_count', 'Intervals', int], ['busy_ns', 'Busy', ns]],
};
const colsOf = (t) => (t === 'device_clocks' || t === 'device_spans' ? GPU_COLS[t] : t === 'nvtx_ranges' || t === 'gpu_timeline' ? GPU_COLS.timeline : GPU_COLS.summary);

export function renderGpu(pane, id) {
  const t0 = performance.now();
  return guarded(pane, 'the GPU view', async () => {
    let table = 'kernels', offset = 0;
    const first = await view(id, 'gpu', { table, limit: 50 });
    const sm = first.summary || {};
    pane.append(verifiedNote(), h('dl', { class: 'wa-kv', 'data-gpu': 'summary' },
      h('dt', null, 'Nsight evidence'), h('dd', { 'data-field': 'status' }, String(sm.status ?? 'unavailable')),
      sm.reason ? [h('dt', null, 'Reason'), h('dd', null, String(sm.reason))] : null,
      h('dt', null, 'Device timing coverage'), h('dd', null, String(sm.device_coverage ?? '\u2014')),
      h('dt', null, 'Correlation'), h('dd', null, sm.correlation ? String(sm.correlation.mode ?? '') + (sm.correlation.complete ? ', complete' : '') : '\u2014')));
    const pick = h('select', { id: 'gpu-table', 'aria-label': 'GPU table' }, Object.entries(first.tables).map(([k, n]) => h('option', { value: k }, k.replace(/_/g, ' ') + ' (' + int(n) + ')')));
    const nav = h('p', { class: 'wa-pager' });
    const box = h('div', { class: 'wa-scroll', 'data-gpu-table': table });
    pane.append(h('p', null, h('label', { for: 'gpu-table' }, 'Table '), pick), box, nav);
    const draw = (r) => {
      box.textContent = ''; nav.textContent = ''; box.dataset.gpuTable = r.table; box.dataset.total = r.total;
      const cols = colsOf(r.table);
      if (!r.rows.length) box.append(h('p', { class: 'cg-note' }, 'No ' + r.table.replace(/_/g, ' ') + ' in this capture.'));
      else box.append(h('table', { class: 'wa-table' }, h('thead', null, h('tr', null, cols.map((c) => h('th', { scope: 'col' }, c[1])))),
        h('tbody', null, r.rows.map((row) => h('tr', null, cols.map((c) => h('td', null, c[2] ? c[2](row[c[0]]) : (row[c[0]] ?? '\u2014'))))))));
      nav.append(int(r.total) + ' rows; showing ' + int(r.total ? r.offset + 1 : 0) + '\u2013' + int(r.offset + r.rows.length) + ' ',
        h('button', { type: 'button', 'data-action': 'prev', disabled: r.offset === 0, onclick: () => go(Math.max(0, r.offset - 50)) }, 'Previous'), ' ',
        h('button', { type: 'button', 'data-action': 'next', disabled: r.offset + r.rows.length >= r.matched, onclick: () => go(r.offset + r.rows.length) }, 'Next'));
    };
    const go = async (o) => { offset = o; try { draw(await view(id, 'gpu', { table, offset, limit: 50 })); } catch (e) { box.append(errorPanel(e, 'GPU table')); } };
    pick.addEventListener('change', () => { table = pick.value; go(0); });
    draw(first);
    painted(pane, 'gpu', t0);
    const note = truncationNote(sm.truncation);
    if (note) pane.append(note);
  });
}
