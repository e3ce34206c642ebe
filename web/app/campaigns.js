// campaigns.js — campaign list (GET /campaigns) and one campaign: the grid of
// planned captures by state with the host/device each ran on
// (GET /campaigns/{id}/status, campaign-status/1) and the series charts
// (GET /campaigns/{id}/series, series/1): outer wall time, tensor-stat RMS by
// label and gradient norms over capture steps.
import { getJson, query } from './api.js';
import { h, badge, errorPanel, fmtNs, fmtNum, shortId } from './ui.js';
import { lineChart } from './charts.js';

const STATES = ['published', 'missing', 'verification_failed', 'identity_mismatch', 'failed_run'];
const STATE_WORDS = {
  published: 'published', missing: 'missing', verification_failed: 'verification failed',
  identity_mismatch: 'identity mismatch', failed_run: 'failed run',
};
const STATE_KIND = { published: 'ok', missing: 'neutral', verification_failed: 'bad', identity_mismatch: 'bad', failed_run: 'warn' };

export async function renderCampaigns(host, ctx) {
  host.append(h('h1', null, 'Campaigns'));
  let list;
  try { list = await getJson('/campaigns'); } catch (e) { host.append(errorPanel(e, 'Campaigns')); return; }
  if (!ctx.isCurrent()) return;
  const items = Array.isArray(list) ? list : (list.items || list.campaigns || []);
  if (!items.length) { host.append(h('p', { class: 'wa-empty' }, 'No campaigns yet. Register one with PUT /campaigns/{id}.')); return; }
  const n = (c, k) => c[k] ?? c.counts?.[k] ?? '\u2014';
  host.append(h('div', { class: 'wa-scroll' }, h('table', { class: 'wa-table' },
    h('caption', null, items.length + ' campaigns'),
    h('thead', null, h('tr', null, ['Campaign', 'Entrypoint', 'Planned', 'Published', 'Missing', 'Failed'].map((t, i) => h('th', { scope: 'col', class: i > 1 ? 'num' : null }, t)))),
    h('tbody', null, items.map((c) => h('tr', null,
      h('td', null, h('a', { href: '#/campaign/' + encodeURIComponent(c.campaign_id) }, c.campaign_id)),
      h('td', null, c.entrypoint ?? c.manifest?.entrypoint ?? '\u2014'),
      ['planned', 'published', 'missing', 'failed'].map((k) => h('td', { class: 'num' }, typeof n(c, k) === 'object' ? n(c, k).length : n(c, k)))))))));
}

export async function renderCampaign(host, id, ctx) {
  host.append(h('p', { class: 'wa-crumbs' }, h('a', { href: '#/campaigns' }, 'Campaigns'), ' / ', id));
  host.append(h('h1', null, 'Campaign ' + id));
  host.append(h('p', null, h('a', { href: '#/compare' + query({ a: 'campaign:' + id }) }, 'Compare this campaign as the baseline cohort'), ' \u00b7 ',
    h('a', { href: '#/bundles' + query({ campaign: id }) }, 'Its bundles')));
  let st;
  try { st = await getJson('/campaigns/' + encodeURIComponent(id) + '/status'); } catch (e) { host.append(errorPanel(e, 'Campaign status')); return; }
  if (!ctx.isCurrent()) return;
  host.append(h('dl', { class: 'wa-facts' },
    h('dt', null, 'Entrypoint'), h('dd', null, st.entrypoint),
    h('dt', null, 'Planned'), h('dd', null, String(st.planned)),
    h('dt', null, 'Published'), h('dd', null, String(st.published)),
    h('dt', null, 'Missing'), h('dd', null, String(st.missing)),
    h('dt', null, 'Failed'), h('dd', null, String(st.failed))));
  host.append(h('h2', null, 'Planned captures'));
  host.append(h('ul', { class: 'wa-legend', 'aria-label': 'States' }, STATES.map((k) => h('li', null, badge(STATE_KIND[k], STATE_WORDS[k]), ' ',
    String((st.captures || []).filter((c) => (c.state?.state) === k).length)))));
  const grid = h('ol', { class: 'wa-grid', 'aria-label': 'Planned captures by step' });
  for (const c of st.captures || []) {
    const state = c.state?.state || 'unknown';
    const bundleId = state === 'published' ? c.state.manifest_sha256 : null;
    grid.append(h('li', { class: 'wa-cell wa-cell-' + (STATE_KIND[state] || 'neutral'), 'data-state': state, 'data-step': c.capture_step },
      h('div', { class: 'wa-cell-step' }, 'Step ' + c.capture_step),
      badge(STATE_KIND[state] || 'neutral', STATE_WORDS[state] || state),
      h('div', { class: 'wa-sub' }, c.bundle),
      h('div', { class: 'wa-sub' }, (c.host ?? 'host \u2014') + ' \u00b7 ' + (c.device ?? 'device \u2014')),
      bundleId ? h('a', { href: '#/bundle/' + bundleId }, 'Open ', shortId(bundleId)) : null,
      c.state?.message ? h('div', { class: 'wa-sub wa-msg' }, c.state.message) : null,
      state === 'failed_run' ? h('div', { class: 'wa-sub wa-msg' }, 'run ' + (c.state.run_id || '') + (c.state.reason ? ': ' + c.state.reason : '')) : null));
  }
  host.append(grid);

  host.append(h('h2', null, 'Series over capture steps'));
  const prefixIn = h('input', { id: 'ws-prefix', type: 'text', value: ctx.params.get('label_prefix') || '', autocomplete: 'off' });
  host.append(h('form', { class: 'wa-filters', onsubmit: (e) => { e.preventDefault(); ctx.navigate('#/campaign/' + encodeURIComponent(id) + query({ label_prefix: prefixIn.value.trim() })); } },
    h('div', { class: 'wa-field' }, h('label', { for: 'ws-prefix' }, 'Label prefix'), prefixIn),
    h('div', { class: 'wa-field wa-actions' }, h('button', { type: 'submit' }, 'Apply'))));
  const charts = h('div', { class: 'wa-charts' });
  host.append(charts);
  // series/1 fails closed unless every planned capture is published: say why
  // instead of asking for an answer that can only be a 409.
  const pending = (st.captures || []).filter((c) => (c.state?.state || 'unknown') !== 'published');
  if (pending.length) {
    charts.append(seriesWithheld(pending, (st.captures || []).length));
    return;
  }
  let series;
  try { series = await getJson('/campaigns/' + encodeURIComponent(id) + '/series' + query({ label_prefix: ctx.params.get('label_prefix') })); } catch (e) {
    if (!ctx.isCurrent()) return;
    if (e.status === 409) charts.append(h('p', { class: 'wa-empty', 'data-series': 'withheld' }, 'No series is drawn: the campaign changed since its status was read, and not every planned capture is published now. Reload to see which.'));
    else charts.append(errorPanel(e, 'Series'));
    return;
  }
  if (!ctx.isCurrent()) return;
  charts.append(lineChart('Outer wall time (host)', [{ name: '', points: (series.outer_wall_time || []).map((p) => ({ x: p.capture_step, y: p.outer_wall_time_ns })) }], { fmtY: fmtNs }));
  const ts = series.tensor_stats || {};
  charts.append(lineChart('Tensor-stat RMS by label', Object.keys(ts).map((k) => ({ name: k, points: ts[k].map((p) => ({ x: p.capture_step, y: p.rms })) })), { fmtY: (v) => fmtNum(v) }));
  const gr = series.gradients || {};
  charts.append(lineChart('Gradient norms', Object.keys(gr).map((k) => ({ name: k, points: gr[k].map((p) => ({ x: p.capture_step, y: p.norm })) })), { fmtY: (v) => fmtNum(v) }));
}

// Why no series is drawn for a partial campaign: the planned captures that are
// not published yet, by state, each with its bundle name and step.
function seriesWithheld(pending, planned) {
  const byState = {};
  for (const c of pending) (byState[c.state?.state || 'unknown'] ||= []).push(c);
  return h('div', { class: 'wa-panel', 'data-series': 'withheld', role: 'status' },
    h('p', null, 'No series is drawn: series compare every planned capture, and ' + pending.length + ' of ' + planned +
      ' planned captures ' + (pending.length === 1 ? 'is' : 'are') + ' not published yet.'),
    h('ul', null, Object.keys(byState).map((k) => h('li', null, badge(STATE_KIND[k] || 'neutral', STATE_WORDS[k] || k), ' ',
      byState[k].map((c) => c.bundle + ' (step ' + c.capture_step + ')').join(', ')))));
}
