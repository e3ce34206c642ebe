// history.js — the History page: one series' metric over commits (GET /history,
// candle-graph/history/1) as the per-commit median with its 95 % bootstrap
// band, change points marked confirmed (an alert) or unconfirmed (with the
// comparison's reasons), and a click on a point opens its bundles and a
// comparison with the previous commit. Series filters live in the URL.
import { getJson, query } from './api.js';
import { h, s, badge, errorPanel, fmtNs, fmtPct, shortId, isNum } from './ui.js';
import { REASON_WORDS } from './compare.js';

const FIELDS = [
  { key: 'workload_id', label: 'Workload id (required)' },
  { key: 'branch', label: 'Branch' },
  { key: 'metric', label: 'Metric (outer_wall_time_ns, span:…, op:…, device:…)' },
  { key: 'entrypoint', label: 'Entrypoint' },
  { key: 'device', label: 'Device' },
];
const SERIES_KEYS = ['workload_id', 'model_id', 'config_id', 'data_id', 'seed_policy', 'physical_batch', 'accumulation_steps', 'precision', 'device_state', 'entrypoint', 'phase', 'device'];

function filterForm(p, ctx) {
  const form = h('form', { class: 'wa-filters', 'aria-label': 'Series' });
  const inputs = {};
  for (const f of FIELDS) {
    const id = 'wh-' + f.key;
    inputs[f.key] = h('input', { id, name: f.key, type: 'text', value: p.get(f.key) || '', autocomplete: 'off' });
    form.append(h('div', { class: 'wa-field' }, h('label', { for: id }, f.label), inputs[f.key]));
  }
  form.append(h('div', { class: 'wa-field wa-actions' }, h('button', { type: 'submit' }, 'Show history')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = {};
    for (const [k, v] of p.entries()) if (!FIELDS.some((f) => f.key === k)) q[k] = v;
    for (const f of FIELDS) q[f.key] = inputs[f.key].value.trim();
    ctx.navigate('#/history' + query(q));
  });
  return form;
}

function seriesHash(series, branch) {
  const q = {};
  for (const k of SERIES_KEYS) if (series[k] !== undefined && series[k] !== null) q[k] = String(series[k]);
  q.branch = branch;
  return '#/history' + query(q);
}

function ambiguous(err) {
  const list = h('ul', { class: 'wa-series-choices' });
  for (const c of err.detail.series) list.append(h('li', null, h('a', { href: seriesHash(c.series, c.branch) }, c.series.workload_id + ' \u00b7 ' + c.series.entrypoint + ' \u00b7 ' + c.series.device + ' \u00b7 branch ' + c.branch)));
  return h('div', { class: 'wa-note', role: 'status' }, h('p', null, 'These filters match several series; choose one:'), list);
}

/* median line + interval band over point index; change points as vertical markers */
function chart(doc, onPick) {
  const pts = doc.points.map((p, i) => ({ i, p })).filter((x) => isNum(x.p.median_ns));
  const fig = h('figure', { class: 'wa-figure wa-history' }, h('figcaption', null, doc.metric + ' by commit (median and 95 % interval)'));
  if (!pts.length) { fig.append(h('p', { class: 'wa-empty' }, 'No values.')); return fig; }
  const lo = Math.min(...pts.map((x) => x.p.ci95.lower_ns)), hi = Math.max(...pts.map((x) => x.p.ci95.upper_ns));
  const y0 = lo === hi ? lo * 0.9 : lo - (hi - lo) * 0.05, y1 = lo === hi ? hi * 1.1 + 1 : hi + (hi - lo) * 0.05;
  const n = doc.points.length, W = 720, H = 260, L = 90, R = 12, T = 10, B = 30;
  const X = (i) => L + (n === 1 ? 0.5 : i / (n - 1)) * (W - L - R), Y = (v) => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'wa-chart', role: 'img', 'aria-label': doc.metric + ' history' });
  svg.append(s('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#9aa5b1' }), s('line', { x1: L, x2: L, y1: T, y2: H - B, stroke: '#9aa5b1' }));
  for (let k = 0; k <= 3; k++) { const v = y0 + (y1 - y0) * k / 3; svg.append(s('text', { x: L - 6, y: Y(v) + 4, 'font-size': 11, 'text-anchor': 'end', fill: '#52606d' }, fmtNs(v))); }
  const band = pts.map((x) => X(x.i) + ',' + Y(x.p.ci95.upper_ns)).concat(pts.slice().reverse().map((x) => X(x.i) + ',' + Y(x.p.ci95.lower_ns)));
  svg.append(s('polygon', { points: band.join(' '), fill: '#2f6f9f', 'fill-opacity': 0.15, stroke: 'none', class: 'wa-band' }));
  if (pts.length > 1) svg.append(s('polyline', { points: pts.map((x) => X(x.i) + ',' + Y(x.p.median_ns)).join(' '), fill: 'none', stroke: '#2f6f9f', 'stroke-width': 2 }));
  const index = new Map(doc.points.map((p, i) => [p.commit, i]));
  for (const cp of doc.change_points) {
    const i = index.get(cp.commit);
    if (i === undefined) continue;
    const x = (X(i) + X(Math.max(0, i - 1))) / 2, ok = cp.state === 'confirmed';
    svg.append(s('line', { x1: x, x2: x, y1: T, y2: H - B, stroke: ok ? '#b3261e' : '#7b8794', 'stroke-width': 2, 'stroke-dasharray': ok ? null : '5 4', class: 'wa-cp', 'data-state': cp.state, 'data-commit': cp.commit },
      s('title', null, (ok ? 'confirmed' : 'unconfirmed') + ' change at ' + shortId(cp.commit) + ': ' + fmtPct(cp.relative_change * 100))));
  }
  for (const x of pts) {
    const c = s('circle', { cx: X(x.i), cy: Y(x.p.median_ns), r: 5, fill: '#2f6f9f', tabindex: 0, role: 'button', class: 'wa-point', 'data-commit': x.p.commit, 'aria-label': 'commit ' + shortId(x.p.commit) + ', median ' + fmtNs(x.p.median_ns) },
      s('title', null, shortId(x.p.commit) + ': ' + fmtNs(x.p.median_ns) + ' (n ' + x.p.n + ')'));
    c.addEventListener('click', () => onPick(x.i));
    c.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onPick(x.i); } });
    svg.append(c);
  }
  fig.append(svg, h('p', { class: 'wa-sub' }, 'Solid red line: confirmed change (an alert). Dashed grey: unconfirmed (comparison/6 could not confirm it). Click a point for its bundles.'));
  return fig;
}

function pointPanel(doc, i) {
  const p = doc.points[i], prev = i > 0 ? doc.points[i - 1] : null;
  const box = h('section', { class: 'wa-point-detail', 'aria-live': 'polite', 'data-commit': p.commit },
    h('h2', null, 'Commit ' + shortId(p.commit)),
    h('p', null, p.commit_time + ' \u00b7 n ' + p.n + ' \u00b7 median ' + fmtNs(p.median_ns) + (p.ci95 ? ' \u00b7 95 % interval ' + fmtNs(p.ci95.lower_ns) + ' \u2013 ' + fmtNs(p.ci95.upper_ns) : '')));
  const list = h('ul', { class: 'wa-point-bundles' });
  for (const id of p.bundles) list.append(h('li', null, h('a', { href: '#/bundle/' + id }, shortId(id))));
  box.append(list);
  if (prev) box.append(h('p', null, h('a', { href: '#/compare' + query({ a: prev.bundles.join(','), b: p.bundles.join(',') }), class: 'wa-compare-prev' }, 'Compare with the previous commit ' + shortId(prev.commit))));
  return box;
}

function cpTable(doc) {
  const t = h('table', { class: 'wa-table wa-cps' }, h('caption', null, 'Change points'));
  t.append(h('thead', null, h('tr', null, ...['Commit', 'Before', 'Change', 'p-value', 'State', 'Comparison'].map((c) => h('th', { scope: 'col' }, c)))));
  const tb = h('tbody');
  for (const cp of doc.change_points) {
    const ok = cp.state === 'confirmed';
    const why = cp.comparison.reasons.length ? cp.comparison.reasons.map((r) => REASON_WORDS[r] || r).join(' ') : cp.comparison.verdict.replace(/_/g, ' ');
    tb.append(h('tr', { 'data-state': cp.state, 'data-commit': cp.commit },
      h('td', null, shortId(cp.commit)), h('td', null, shortId(cp.before_commit)), h('td', { class: 'num' }, fmtPct(cp.relative_change * 100)),
      h('td', { class: 'num' }, cp.p_value.toExponential(2)),
      h('td', null, badge(ok ? 'bad' : 'warn', ok ? 'confirmed' : 'unconfirmed'), ok && cp.alert_id !== null ? h('a', { href: '#/alerts?id=' + cp.alert_id }, ' alert ' + cp.alert_id) : ''),
      h('td', null, why)));
  }
  t.append(tb);
  return doc.change_points.length ? t : h('p', { class: 'wa-empty' }, 'No change points.');
}

export async function renderHistory(host, ctx) {
  const p = ctx.params;
  host.append(h('h1', null, 'History'), filterForm(p, ctx));
  if (!p.get('workload_id')) { host.append(h('p', { class: 'wa-empty' }, 'Choose a series: at least its workload id.')); return; }
  const q = {};
  for (const [k, v] of p.entries()) q[k] = v;
  let doc;
  try { doc = await getJson('/history' + query(q)); } catch (e) {
    if (!ctx.isCurrent()) return;
    host.append(e.code === 'ambiguous_series' && e.detail && e.detail.series ? ambiguous(e) : errorPanel(e, 'History'));
    return;
  }
  if (!ctx.isCurrent()) return;
  const detail = h('div', { class: 'wa-point-host' });
  const pick = (i) => { detail.textContent = ''; detail.append(pointPanel(doc, i)); };
  host.append(h('p', { class: 'wa-sub' }, doc.series.workload_id + ' \u00b7 ' + doc.series.entrypoint + ' \u00b7 ' + doc.series.phase + ' \u00b7 ' + doc.series.device + ' \u00b7 branch ' + doc.branch + ' \u00b7 ' + doc.points.length + ' commits'),
    chart(doc, pick), detail, cpTable(doc));
}
