// compare.js — cohort comparison. Cohorts come from the list selection, a
// campaign (campaign:<id>) or an implementation id (implementation:<id>); the
// URL (#/compare?a=…&b=…) reproduces the view. Shows the verdict of
// GET /compare (candle-graph/comparison/6), the reasons in plain words when
// ineligible, the samples of both cohorts as dots with medians and the 95 %
// bootstrap interval of the median delta, the span/op/device diff of
// GET /compare/spans sorted by |delta|, and the tensor-stats table.
import { getJson, query } from './api.js';
import { h, s, badge, errorPanel, fmtNs, fmtPct, fmtNum, table, isNum } from './ui.js';
import { getCohorts } from './cohorts.js';

const VERDICT_WORDS = {
  candidate_faster: 'The candidate (B) is faster: the whole 95 % interval of the median difference is below zero.',
  candidate_slower: 'The candidate (B) is slower: the whole 95 % interval of the median difference is above zero.',
  inconclusive: 'Inconclusive: the 95 % interval of the median difference includes zero.',
  ineligible: 'Ineligible: these runs cannot be compared for the reasons below. No verdict on speed is given.',
};
export const REASON_WORDS = {
  unverified_inputs: 'The inputs are raw traces rather than verified bundles.',
  receipt_count_mismatch: 'The bundle receipts do not match the traces one to one.',
  receipt_run_id_mismatch: 'A bundle receipt names a different run than its trace.',
  receipt_digest_invalid: 'A bundle receipt has a malformed manifest digest.',
  insufficient_runs: 'Each cohort needs at least 5 independent runs.',
  duplicate_run_ids: 'The same run appears more than once.',
  no_runs: 'Both cohorts are empty.',
  capture_semantics_mismatch: 'The runs were captured differently (entrypoint, phase, device, timing, warm-up, step or contract differ).',
  incomplete_capture: 'A run is not a complete, structurally valid capture.',
  not_production_equivalent: 'A run is not declared production-equivalent.',
  unsynchronized_device_region: 'A run on a device does not synchronize its measured region.',
  measured_region_count_invalid: 'A run does not have exactly one closed measured region.',
  identity_missing: 'A run has no comparison identity.',
  identity_invalid: 'The comparison identity is invalid.',
  identity_conditions_differ: 'The runs differ in workload, model, configuration, data, seed, batch, precision or device state.',
  implementation_id_missing: 'A run has no implementation id.',
  implementation_id_empty: 'An implementation id is empty.',
  implementation_id_inconsistent: 'The implementation id differs within a cohort.',
  pairing_incomplete: 'Pairing was requested but not every run has a pair id (or a measured region).',
  pair_ids_duplicated: 'A pair id repeats within a cohort.',
  pair_sets_mismatch: 'Baseline and candidate pair ids do not match.',
};

function cohortInput(id, label, value, help) {
  return h('div', { class: 'wa-field wa-wide' }, h('label', { for: id }, label),
    h('input', { id, name: id, type: 'text', value, autocomplete: 'off', 'aria-describedby': id + '-help' }),
    h('span', { id: id + '-help', class: 'wa-sub' }, help));
}

export async function renderCompare(host, ctx) {
  const p = ctx.params;
  host.append(h('h1', null, 'Compare'));
  const sel = getCohorts();
  const help = 'Bundle ids separated by commas, or campaign:<id>, or implementation:<id>';
  const form = h('form', { class: 'wa-filters', 'aria-label': 'Cohorts' },
    cohortInput('wc-a', 'Baseline cohort (A)', p.get('a') || '', help),
    cohortInput('wc-b', 'Candidate cohort (B)', p.get('b') || '', help),
    h('div', { class: 'wa-field wa-actions' }, h('button', { type: 'submit' }, 'Compare'), ' ',
      h('button', { type: 'button', 'data-action': 'use-selection', disabled: !(sel.a.length || sel.b.length), onclick: () => {
        form.querySelector('#wc-a').value = sel.a.join(','); form.querySelector('#wc-b').value = sel.b.join(',');
      } }, 'Use list selection (' + sel.a.length + ' / ' + sel.b.length + ')')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    ctx.navigate('#/compare' + query({ a: form.querySelector('#wc-a').value.trim(), b: form.querySelector('#wc-b').value.trim() }));
  });
  host.append(form);
  const a = p.get('a'), b = p.get('b');
  if (!a || !b) {
    host.append(h('p', { class: 'wa-empty' }, 'Choose a baseline and a candidate cohort. In the bundle list, select runs and add them to A or B.'));
    return;
  }
  const out = h('div', { class: 'wa-compare' }, h('p', { class: 'wa-loading' }, 'Comparing\u2026'));
  host.append(out);
  const q = query({ a, b });
  const [cmp, spans] = await Promise.allSettled([getJson('/compare' + q), getJson('/compare/spans' + q)]);
  if (!ctx.isCurrent()) return;
  out.textContent = '';
  out.append(h('p', { class: 'wa-share' }, h('label', { for: 'wc-link' }, 'Link to this view'), ' ',
    h('input', { id: 'wc-link', type: 'text', readonly: true, value: location.href, size: 60, onfocus: (e) => e.target.select() })));
  if (cmp.status === 'rejected') { out.append(errorPanel(cmp.reason, 'Comparison')); return; }
  const c = cmp.value;
  renderVerdict(out, c);
  if (c.verdict === 'inconclusive' || c.verdict === 'ineligible') await renderAdvice(out, q, ctx);
  if (!ctx.isCurrent()) return;
  renderSamples(out, c);
  out.append(h('h2', null, 'Span, op and device differences'));
  if (spans.status === 'rejected') out.append(errorPanel(spans.reason, 'Span differences'));
  else renderSpanDiff(out, spans.value);
  renderTensorStats(out, c.tensor_stats || {});
}

function renderVerdict(out, c) {
  const kind = { candidate_faster: 'ok', candidate_slower: 'bad', inconclusive: 'neutral', ineligible: 'warn' }[c.verdict] || 'neutral';
  const ci = c.confidence_interval;
  out.append(h('section', { class: 'wa-verdict', 'aria-label': 'Verdict', 'data-verdict': c.verdict },
    h('h2', null, 'Verdict: ', badge(kind, c.verdict)),
    h('p', null, VERDICT_WORDS[c.verdict] || ''),
    h('dl', { class: 'wa-facts' },
      h('dt', null, 'Metric'), h('dd', null, c.metric),
      h('dt', null, 'Baseline implementation'), h('dd', null, c.baseline_implementation_id ?? '\u2014'),
      h('dt', null, 'Candidate implementation'), h('dd', null, c.candidate_implementation_id ?? '\u2014'),
      h('dt', null, 'Median delta (B \u2212 A)'), h('dd', { 'data-field': 'median_delta_ns' }, fmtNs(c.median_delta_ns), ' (', fmtPct(c.median_delta_percent), ')'),
      h('dt', null, '95 % bootstrap interval'), h('dd', { 'data-field': 'ci' }, ci ? fmtNs(ci.lower_delta_ns) + ' to ' + fmtNs(ci.upper_delta_ns) : 'none'),
      h('dt', null, 'Paired'), h('dd', null, c.paired ? 'yes' : 'no'),
      h('dt', null, 'Runs'), h('dd', null, (c.baseline?.samples_ns?.length ?? 0) + ' baseline, ' + (c.candidate?.samples_ns?.length ?? 0) + ' candidate'))));
  if (c.reasons && c.reasons.length) {
    out.append(h('section', { class: 'wa-reasons', 'aria-label': 'Reasons' }, h('h3', null, 'Why these runs are not comparable'),
      h('ul', null, c.reasons.map((r) => h('li', { 'data-code': r.code },
        h('code', null, r.code), ' \u2014 ', REASON_WORDS[r.code] || '', h('div', { class: 'wa-sub' }, r.message))))));
  }
}

/* "Run k more" (GET /compare/advice, issue 15) under an unresolved verdict. */
async function renderAdvice(out, q, ctx) {
  let adv;
  try { adv = await getJson('/compare/advice' + q); } catch (e) { out.append(errorPanel(e, 'Replication advice')); return; }
  if (!ctx.isCurrent()) return;
  const k = adv.additional_runs_per_side;
  const text = k === null ? 'More runs cannot resolve this comparison (see the reasons).'
    : k === 0 ? 'The interval already rules out an effect of ' + adv.target_effect_percent + ' % or more.'
      : 'About ' + k + ' more run' + (k === 1 ? '' : 's') + ' per side would resolve an effect of ' + adv.target_effect_percent + ' % (estimated from these samples with the same bootstrap).';
  out.append(h('section', { class: 'wa-advice', 'aria-label': 'Replication advice', 'data-runs': k === null ? 'none' : String(k) }, h('h3', null, 'Run more?'), h('p', null, text)));
}

/* Dots per sample for A and B, medians as bars; below, the median delta with its interval. */
function renderSamples(out, c) {
  const A = c.baseline?.samples_ns || [], B = c.candidate?.samples_ns || [];
  out.append(h('h2', null, 'Samples (outer wall time)'));
  if (!A.length && !B.length) { out.append(h('p', { class: 'wa-empty' }, 'No samples.')); return; }
  const all = A.concat(B);
  let lo = Math.min(...all), hi = Math.max(...all);
  if (hi === lo) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
  const W = 760, L = 110, R = 20, rowH = 46, Hh = 2 * rowH + 40;
  const x = (v) => L + (v - lo) / (hi - lo) * (W - L - R);
  const svg = s('svg', { viewBox: `0 0 ${W} ${Hh}`, class: 'wa-chart', role: 'img', 'aria-label': 'Samples of both cohorts with medians' });
  [[A, c.baseline, 'Baseline (A)', '#2f6f9f'], [B, c.candidate, 'Candidate (B)', '#b35900']].forEach(([xs, st, label, color], i) => {
    const y = 20 + i * rowH + rowH / 2;
    svg.append(s('text', { x: 4, y: y + 4, 'font-size': 12, fill: '#1f2933' }, label));
    svg.append(s('line', { x1: L, x2: W - R, y1: y, y2: y, stroke: '#d9dee4' }));
    xs.forEach((v, k) => svg.append(s('circle', { cx: x(v), cy: y + ((k % 3) - 1) * 6, r: 4, fill: color, 'fill-opacity': 0.75, class: 'wa-dot', 'data-cohort': i ? 'b' : 'a' }, s('title', null, fmtNs(v)))));
    if (st && isNum(st.median_ns)) {
      svg.append(s('line', { x1: x(st.median_ns), x2: x(st.median_ns), y1: y - 16, y2: y + 16, stroke: '#1f2933', 'stroke-width': 2, class: 'wa-median' }, s('title', null, 'median ' + fmtNs(st.median_ns))));
    }
  });
  for (let i = 0; i <= 4; i++) {
    const v = lo + (hi - lo) * i / 4;
    svg.append(s('text', { x: x(v), y: Hh - 6, 'font-size': 11, 'text-anchor': 'middle', fill: '#52606d' }, fmtNs(v)));
  }
  out.append(svg);
  const ci = c.confidence_interval;
  if (ci && isNum(ci.lower_delta_ns) && isNum(ci.upper_delta_ns)) {
    let dlo = Math.min(ci.lower_delta_ns, 0, c.median_delta_ns), dhi = Math.max(ci.upper_delta_ns, 0, c.median_delta_ns);
    if (dhi === dlo) { dlo -= 1; dhi += 1; }
    const dp = (dhi - dlo) * 0.15; dlo -= dp; dhi += dp;
    const dx = (v) => L + (v - dlo) / (dhi - dlo) * (W - L - R);
    const ds = s('svg', { viewBox: `0 0 ${W} 70`, class: 'wa-chart wa-ci', role: 'img', 'aria-label': '95 % bootstrap interval of the median delta' });
    ds.append(s('text', { x: 4, y: 34, 'font-size': 12, fill: '#1f2933' }, 'Delta B \u2212 A'));
    ds.append(s('line', { x1: dx(0), x2: dx(0), y1: 8, y2: 50, stroke: '#9aa5b1', 'stroke-dasharray': '4 3' }));
    ds.append(s('line', { x1: dx(ci.lower_delta_ns), x2: dx(ci.upper_delta_ns), y1: 30, y2: 30, stroke: '#1f2933', 'stroke-width': 3, class: 'wa-ci-bar' }));
    [ci.lower_delta_ns, ci.upper_delta_ns].forEach((v) => ds.append(s('line', { x1: dx(v), x2: dx(v), y1: 22, y2: 38, stroke: '#1f2933', 'stroke-width': 2 })));
    ds.append(s('circle', { cx: dx(c.median_delta_ns), cy: 30, r: 5, fill: '#b35900' }, s('title', null, 'median delta ' + fmtNs(c.median_delta_ns))));
    ds.append(s('text', { x: dx(ci.lower_delta_ns), y: 62, 'font-size': 11, 'text-anchor': 'middle', fill: '#52606d' }, fmtNs(ci.lower_delta_ns)));
    ds.append(s('text', { x: dx(ci.upper_delta_ns), y: 62, 'font-size': 11, 'text-anchor': 'middle', fill: '#52606d' }, fmtNs(ci.upper_delta_ns)));
    ds.append(s('text', { x: dx(0), y: 10, 'font-size': 11, 'text-anchor': 'middle', fill: '#52606d' }, '0'));
    out.append(ds);
  }
  const st = (k, o) => o ? o[k] : null;
  out.append(table([
    { key: 'cohort', label: 'Cohort' },
    { key: 'n', label: 'Runs', num: true },
    { key: 'median', label: 'Median', num: true, fmt: (r) => fmtNs(r.median) },
    { key: 'p95', label: 'p95', num: true, fmt: (r) => fmtNs(r.p95) },
    { key: 'mad', label: 'MAD', num: true, fmt: (r) => fmtNs(r.mad) },
  ], [
    { cohort: 'Baseline (A)', n: A.length, median: st('median_ns', c.baseline), p95: st('p95_ns', c.baseline), mad: st('mad_ns', c.baseline) },
    { cohort: 'Candidate (B)', n: B.length, median: st('median_ns', c.candidate), p95: st('p95_ns', c.candidate), mad: st('mad_ns', c.candidate) },
  ], { caption: 'Sample statistics' }));
}

function renderSpanDiff(out, d) {
  const rows = d.rows || [];
  out.append(h('p', { class: 'wa-sub' }, (d.a?.runs ?? '?') + ' baseline runs, ' + (d.b?.runs ?? '?') + ' candidate runs. This table never affects the verdict.'));
  if (!rows.length) out.append(h('p', { class: 'wa-empty' }, 'No common spans.'));
  else out.append(h('div', { class: 'wa-scroll' }, table([
    { key: 'path', label: 'Path' },
    { key: 'kind', label: 'Kind' },
    { key: 'a_median_ns', label: 'A median', num: true, fmt: (r) => fmtNs(r.a_median_ns) },
    { key: 'b_median_ns', label: 'B median', num: true, fmt: (r) => fmtNs(r.b_median_ns) },
    { key: 'delta_ns', label: 'Delta', num: true, value: (r) => Math.abs(r.delta_ns ?? 0), fmt: (r) => fmtNs(r.delta_ns) },
    { key: 'delta_percent', label: 'Delta %', num: true, fmt: (r) => fmtPct(r.delta_percent) },
    { key: 'counts', label: 'Count A / B', value: (r) => r.a_count, fmt: (r) => (r.a_count ?? '\u2014') + ' / ' + (r.b_count ?? '\u2014') },
  ], rows, { caption: 'Sorted by |delta|, largest first', sortKey: 'delta_ns', desc: true })));
  if ((d.only_a || []).length) out.append(h('p', null, 'Only in A: ', d.only_a.join(', ')));
  if ((d.only_b || []).length) out.append(h('p', null, 'Only in B: ', d.only_b.join(', ')));
}

function renderTensorStats(out, t) {
  out.append(h('h2', null, 'Tensor statistics'));
  const rows = t.matched || [];
  out.append(h('p', { class: 'wa-sub' }, (t.baseline_runs ?? 0) + ' baseline runs, ' + (t.candidate_runs ?? 0) + ' candidate runs; rows by |ln(RMS ratio)|, largest first.'));
  if (!rows.length) out.append(h('p', { class: 'wa-empty' }, 'No tensor statistics in both cohorts.'));
  else out.append(h('div', { class: 'wa-scroll' }, table([
    { key: 'label', label: 'Label' },
    { key: 'rms_a', label: 'RMS A', num: true, fmt: (r) => fmtNum(r.rms_a) },
    { key: 'rms_b', label: 'RMS B', num: true, fmt: (r) => fmtNum(r.rms_b) },
    { key: 'rms_ratio', label: 'RMS ratio', num: true, fmt: (r) => fmtNum(r.rms_ratio) },
    { key: 'abs_max_ratio', label: '|max| ratio', num: true, fmt: (r) => fmtNum(r.abs_max_ratio) },
    { key: 'non_finite', label: 'Non-finite A / B', value: (r) => (r.non_finite_a || 0) + (r.non_finite_b || 0), fmt: (r) => r.non_finite_a + ' / ' + r.non_finite_b },
    { key: 'samples', label: 'Samples A / B', value: (r) => r.samples_a, fmt: (r) => r.samples_a + ' / ' + r.samples_b },
  ], rows, { caption: 'Matched labels' })));
  if ((t.unmatched_a || []).length) out.append(h('p', null, 'Only in A: ', t.unmatched_a.join(', ')));
  if ((t.unmatched_b || []).length) out.append(h('p', null, 'Only in B: ', t.unmatched_b.join(', ')));
}
