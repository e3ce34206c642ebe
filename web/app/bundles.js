// bundles.js — the bundle list: the filters of GET /bundles, health/signature
// badges, keyset paging (next_cursor) and selection into the baseline (A) or
// candidate (B) cohort for Compare. Filters and the cursor live in the URL.
import { getJson, query } from './api.js';
import { h, badge, healthBadge, healthState, errorPanel, fmtNs, shortId } from './ui.js';
import { getCohorts, addTo, clearCohorts } from './cohorts.js';

const FILTERS = [
  { key: 'entrypoint', label: 'Entrypoint' },
  { key: 'device', label: 'Device' },
  { key: 'implementation_id', label: 'Implementation' },
  { key: 'campaign', label: 'Campaign' },
  { key: 'signer', label: 'Signer key id' },
  { key: 'branch', label: 'Branch' },
  { key: 'commit', label: 'Commit (hash or prefix)' },
];
const cursorStack = [];

function toLocalInput(rfc) {
  if (!rfc) return '';
  const d = new Date(rfc);
  if (Number.isNaN(d.getTime())) return '';
  return d.toISOString().slice(0, 16);
}
function fromLocalInput(v) { return v ? new Date(v + 'Z').toISOString().replace(/\.\d{3}Z$/, 'Z') : ''; }

export async function renderBundles(host, ctx) {
  const p = ctx.params;
  host.append(h('h1', null, 'Bundles'));
  const form = h('form', { class: 'wa-filters', 'aria-label': 'Filter bundles' });
  const inputs = {};
  for (const f of FILTERS) {
    const id = 'wf-' + f.key;
    inputs[f.key] = h('input', { id, name: f.key, type: 'text', value: p.get(f.key) || '', autocomplete: 'off' });
    form.append(h('div', { class: 'wa-field' }, h('label', { for: id }, f.label), inputs[f.key]));
  }
  inputs.outcome = h('select', { id: 'wf-outcome', name: 'outcome' },
    ['', 'complete', 'failed'].map((v) => h('option', { value: v, selected: (p.get('outcome') || '') === v }, v || 'any')));
  form.append(h('div', { class: 'wa-field' }, h('label', { for: 'wf-outcome' }, 'Outcome'), inputs.outcome));
  inputs.since = h('input', { id: 'wf-since', name: 'since', type: 'datetime-local', value: toLocalInput(p.get('since')) });
  inputs.until = h('input', { id: 'wf-until', name: 'until', type: 'datetime-local', value: toLocalInput(p.get('until')) });
  form.append(h('div', { class: 'wa-field' }, h('label', { for: 'wf-since' }, 'Uploaded since (UTC)'), inputs.since));
  form.append(h('div', { class: 'wa-field' }, h('label', { for: 'wf-until' }, 'Uploaded until (UTC)'), inputs.until));
  const limit = p.get('limit') || '50';
  form.append(h('div', { class: 'wa-field wa-actions' },
    h('button', { type: 'submit' }, 'Apply filters'),
    h('button', { type: 'button', onclick: () => ctx.navigate('#/bundles') }, 'Clear')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = {};
    for (const f of FILTERS) q[f.key] = inputs[f.key].value.trim();
    q.outcome = inputs.outcome.value;
    q.since = fromLocalInput(inputs.since.value);
    q.until = fromLocalInput(inputs.until.value);
    if (p.get('limit')) q.limit = p.get('limit');
    cursorStack.length = 0;
    ctx.navigate('#/bundles' + query(q));
  });
  host.append(form);

  const cohortBar = h('div', { class: 'wa-cohorts', 'aria-live': 'polite' });
  host.append(cohortBar);
  function drawCohorts() {
    const c = getCohorts();
    cohortBar.textContent = '';
    cohortBar.append(
      h('span', { 'data-cohort-count': 'a' }, 'Baseline (A): ' + c.a.length + ' run' + (c.a.length === 1 ? '' : 's')), ' \u00b7 ',
      h('span', { 'data-cohort-count': 'b' }, 'Candidate (B): ' + c.b.length + ' run' + (c.b.length === 1 ? '' : 's')), ' ',
      h('a', { href: '#/compare' + query({ a: c.a.join(','), b: c.b.join(',') }), class: 'wa-button' + (c.a.length && c.b.length ? '' : ' wa-disabled'), 'aria-disabled': c.a.length && c.b.length ? null : 'true' }, 'Compare A vs B'), ' ',
      h('button', { type: 'button', onclick: () => { clearCohorts(); drawCohorts(); } }, 'Clear selection'));
  }
  drawCohorts();

  const api = {};
  for (const k of ['entrypoint', 'device', 'implementation_id', 'campaign', 'outcome', 'signer', 'since', 'until', 'phase', 'workload_id', 'capture_step', 'tag', 'cursor', 'branch', 'commit']) if (p.get(k)) api[k] = p.get(k);
  api.limit = limit;
  const out = h('div', { class: 'wa-results' }, h('p', { class: 'wa-loading' }, 'Loading bundles\u2026'));
  host.append(out);
  let page;
  try { page = await getJson('/bundles' + query(api)); } catch (e) {
    out.textContent = ''; out.append(errorPanel(e, 'Bundle list')); return;
  }
  if (!ctx.isCurrent()) return;
  out.textContent = '';
  const items = page.items || [];
  if (!items.length) { out.append(h('p', { class: 'wa-empty' }, 'No bundles match these filters.')); }
  else {
    const tbl = h('table', { class: 'wa-table wa-bundles' },
      h('caption', null, items.length + ' bundle' + (items.length === 1 ? '' : 's') + (p.get('cursor') ? ' (later page)' : '') + ', newest first'),
      h('thead', null, h('tr', null,
        h('th', { scope: 'col' }, h('span', { class: 'wa-sr' }, 'Select')),
        ['Bundle', 'Entrypoint', 'Device', 'Implementation', 'Step', 'Health', 'Signature', 'Verification', 'Outer wall (host)', 'Campaign', 'Uploaded'].map((t) => h('th', { scope: 'col' }, t)))));
    const tb = h('tbody');
    for (const b of items) {
      const st = healthState(b.health, b.outcome);
      const cb = h('input', { type: 'checkbox', class: 'wa-pick', value: b.id, 'aria-label': 'Select bundle ' + shortId(b.id) });
      const m = b.measured || {};
      tb.append(h('tr', { 'data-id': b.id },
        h('td', null, cb),
        h('td', null, h('a', { href: '#/bundle/' + b.id, class: 'wa-mono' }, shortId(b.id)), h('div', { class: 'wa-sub' }, b.run_id || '')),
        h('td', null, b.entrypoint || '\u2014', b.phase ? h('div', { class: 'wa-sub' }, b.phase) : null),
        h('td', null, b.device || '\u2014', b.host ? h('div', { class: 'wa-sub' }, b.host) : null),
        h('td', null, b.implementation_id ? h('a', { href: '#/compare' + query({ a: 'implementation:' + b.implementation_id }), title: 'Compare with this implementation as the baseline cohort' }, b.implementation_id) : '\u2014'),
        h('td', { class: 'num' }, b.capture_step ?? '\u2014'),
        h('td', null, healthBadge(st)),
        h('td', null, b.signer ? badge('ok', 'signed', 'Ed25519 key ' + b.signer) : badge('neutral', 'unsigned', 'No signature')),
        h('td', null, b.semantic === 'rederived_match' ? badge('ok', 'verified, rederived', 'Bundle checks passed and the evidence was rederived to the same bytes')
          : badge('neutral', 'verified', 'Bundle checks passed; evidence ' + (b.semantic || 'unknown'))),
        h('td', { class: 'num' }, fmtNs(m.wall_ns)),
        h('td', null, b.campaign ? h('a', { href: '#/campaign/' + encodeURIComponent(b.campaign.campaign_id) }, b.campaign.campaign_id) : '\u2014'),
        h('td', null, h('time', { datetime: b.uploaded_at || '' }, (b.uploaded_at || '').replace('T', ' ').replace('Z', ' UTC')))));
    }
    tbl.append(tb);
    const pickAll = h('input', { type: 'checkbox', 'aria-label': 'Select all bundles on this page', onchange: () => tb.querySelectorAll('.wa-pick').forEach((c) => { c.checked = pickAll.checked; }) });
    tbl.querySelector('thead th').append(pickAll);
    const picked = () => [...tb.querySelectorAll('.wa-pick:checked')].map((c) => c.value);
    out.append(h('div', { class: 'wa-toolbar' },
      h('button', { type: 'button', 'data-action': 'add-a', onclick: () => { addTo('a', picked()); drawCohorts(); } }, 'Add selected to baseline (A)'), ' ',
      h('button', { type: 'button', 'data-action': 'add-b', onclick: () => { addTo('b', picked()); drawCohorts(); } }, 'Add selected to candidate (B)')));
    out.append(h('div', { class: 'wa-scroll' }, tbl));
  }
  const nav = h('nav', { class: 'wa-pager', 'aria-label': 'Pages' });
  if (p.get('cursor')) nav.append(h('button', { type: 'button', 'data-action': 'first', onclick: () => { cursorStack.length = 0; const q = new URLSearchParams(p); q.delete('cursor'); ctx.navigate('#/bundles?' + q); } }, 'First page'), ' ');
  if (cursorStack.length) nav.append(h('button', { type: 'button', 'data-action': 'prev', onclick: () => { const prev = cursorStack.pop(); const q = new URLSearchParams(p); if (prev) q.set('cursor', prev); else q.delete('cursor'); ctx.navigate('#/bundles?' + q); } }, 'Previous page'), ' ');
  if (page.next_cursor) nav.append(h('button', { type: 'button', 'data-action': 'next', onclick: () => { cursorStack.push(p.get('cursor') || ''); const q = new URLSearchParams(p); q.set('cursor', page.next_cursor); ctx.navigate('#/bundles?' + q); } }, 'Next page'));
  out.append(nav);
}
