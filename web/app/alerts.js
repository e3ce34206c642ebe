// alerts.js — the Alerts page: GET /alerts (state filter, keyset paging) and
// triage (PATCH /alerts/{id}: acknowledged / false_positive / resolved / open,
// with a note; needs a token with the upload scope).
import { getJson, sendJson, query } from './api.js';
import { h, badge, errorPanel, fmtNs, fmtPct, shortId } from './ui.js';

const STATES = ['open', 'acknowledged', 'false_positive', 'resolved'];
const WORDS = { open: 'open', acknowledged: 'acknowledged', false_positive: 'false positive', resolved: 'resolved' };

function triage(a, row, onDone) {
  const note = h('input', { type: 'text', name: 'note', 'aria-label': 'Note for alert ' + a.id, placeholder: 'note', value: a.note || '', size: 18 });
  const status = h('span', { class: 'wa-sub', 'aria-live': 'polite' });
  const box = h('div', { class: 'wa-triage' }, note);
  for (const st of STATES.filter((x) => x !== a.state)) {
    box.append(' ', h('button', { type: 'button', 'data-action': st, onclick: async () => {
      status.textContent = 'saving\u2026';
      try {
        const upd = await sendJson('PATCH', '/alerts/' + a.id, { state: st, note: note.value.trim() || undefined });
        onDone(upd);
      } catch (e) {
        status.textContent = '';
        row.after(h('tr', null, h('td', { colspan: 7 }, errorPanel(e, 'Triage'))));
      }
    } }, WORDS[st]));
  }
  box.append(' ', status);
  return box;
}

function alertRow(a) {
  const row = h('tr', { 'data-id': String(a.id), 'data-state': a.state });
  const fill = (x) => {
    row.textContent = '';
    row.dataset.state = x.state;
    const cmp = '#/compare' + query({ a: x.inputs.baseline.join(','), b: x.inputs.candidate.join(',') });
    const hist = '#/history' + query({ workload_id: x.series.workload_id, entrypoint: x.series.entrypoint, device: x.series.device, branch: x.branch, metric: x.metric });
    row.append(
      h('td', null, String(x.id)),
      h('td', null, badge(x.state === 'open' ? 'bad' : x.state === 'resolved' ? 'ok' : 'warn', WORDS[x.state])),
      h('td', null, h('a', { href: hist }, x.series.workload_id), ' \u00b7 ', x.branch),
      h('td', null, h('a', { href: cmp }, shortId(x.before_commit) + ' \u2192 ' + shortId(x.after_commit))),
      h('td', { class: 'num' }, fmtPct(x.relative_change * 100), h('br'), h('span', { class: 'wa-sub' }, fmtNs(x.ci95.lower_ns) + ' \u2013 ' + fmtNs(x.ci95.upper_ns))),
      h('td', null, x.note || '', x.updated_by ? h('span', { class: 'wa-sub' }, ' (' + x.updated_by + ')') : ''),
      h('td', null, triage(x, row, fill)));
  };
  fill(a);
  return row;
}

export async function renderAlerts(host, ctx) {
  const p = ctx.params;
  host.append(h('h1', null, 'Alerts'));
  const sel = h('select', { id: 'wa-alert-state', name: 'state' }, ['', ...STATES].map((v) => h('option', { value: v, selected: (p.get('state') || '') === v }, v ? WORDS[v] : 'any')));
  const form = h('form', { class: 'wa-filters', 'aria-label': 'Filter alerts' },
    h('div', { class: 'wa-field' }, h('label', { for: 'wa-alert-state' }, 'State'), sel),
    h('div', { class: 'wa-field wa-actions' }, h('button', { type: 'submit' }, 'Apply')));
  form.addEventListener('submit', (e) => { e.preventDefault(); ctx.navigate('#/alerts' + query({ state: sel.value, workload_id: p.get('workload_id') })); });
  host.append(form, h('p', { class: 'wa-sub' }, 'Triage needs a token with the upload scope.'));
  const q = {};
  for (const k of ['state', 'workload_id', 'branch', 'cursor', 'limit']) if (p.get(k)) q[k] = p.get(k);
  let page;
  try { page = await getJson('/alerts' + query(q)); } catch (e) { if (ctx.isCurrent()) host.append(errorPanel(e, 'Alerts')); return; }
  if (!ctx.isCurrent()) return;
  const want = p.get('id');
  const items = want ? page.items.filter((a) => String(a.id) === want) : page.items;
  if (!items.length) { host.append(h('p', { class: 'wa-empty' }, 'No alerts.')); return; }
  const t = h('table', { class: 'wa-table wa-alerts' });
  t.append(h('thead', null, h('tr', null, ...['Id', 'State', 'Series', 'Commits', 'Change', 'Note', 'Triage'].map((c) => h('th', { scope: 'col' }, c)))));
  const tb = h('tbody');
  for (const a of items) tb.append(alertRow(a));
  t.append(tb);
  host.append(t);
  if (page.next_cursor) host.append(h('p', null, h('a', { href: '#/alerts' + query({ ...q, cursor: page.next_cursor }), rel: 'next' }, 'Older alerts')));
}
