// bundle.js — one bundle. The header comes from GET /bundles/{id}; the sections
// Evidence, Trace, Span costs, Memory and GPU are drawn by views.js from the
// server's views of the verified trace and evidence (GET /bundles/{id}/views/...,
// paged and aggregated on the server), never from the uploaded viewer.html;
// Timeline (LOD from GET /bundles/{id}/timeline) and Files (downloads, signature,
// the offline viewer as a sandboxed download). The open section is kept in the
// URL (?tab=).
import { getJson, getToken } from './api.js';
import { h, badge, errorPanel, fmtBytes, fmtNs, healthState, shortId, tabs } from './ui.js';
import { mountTimeline } from './timeline.js';
import { renderCosts, renderEvidence, renderGpu, renderMemory, renderTrace } from './views.js';

async function download(path, name) {
  const headers = {};
  const t = getToken();
  if (t) headers.Authorization = 'Bearer ' + t;
  const res = await fetch(path, { headers, credentials: 'omit' });
  if (!res.ok) throw new Error('download of ' + name + ' failed: ' + res.status);
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function renderFiles(pane, id, b) {
  const msg = h('p', { class: 'wa-status', role: 'status', 'aria-live': 'polite' });
  const dl = (path, name) => h('button', { type: 'button', class: 'wa-link', onclick: async () => {
    msg.textContent = 'Downloading ' + name + '\u2026';
    try { await download(path, name); msg.textContent = 'Downloaded ' + name + '.'; } catch (e) { msg.textContent = e.message; }
  } }, name);
  pane.append(h('h2', null, 'Files'));
  const rows = (b.files || []).map((f) => h('tr', null,
    h('td', null, dl('/bundles/' + id + '/files/' + f.path.split('/').map(encodeURIComponent).join('/'), f.path)),
    h('td', { class: 'num' }, fmtBytes(f.bytes)),
    h('td', { class: 'wa-mono wa-hash' }, f.sha256)));
  pane.append(h('div', { class: 'wa-scroll' }, h('table', { class: 'wa-table' }, h('caption', null, (b.file_count ?? rows.length) + ' files, ' + fmtBytes(b.total_bytes)),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Path'), h('th', { scope: 'col', class: 'num' }, 'Size'), h('th', { scope: 'col' }, 'SHA-256'))),
    h('tbody', null, rows))));
  pane.append(h('h3', null, 'Whole bundle'),
    h('ul', null,
      h('li', null, dl('/bundles/' + id + '/archive', shortId(id) + '.tar.zst'), ' \u2014 unpacked, it verifies with ', h('code', null, 'candle-graph verify')),
      h('li', null, dl('/bundles/' + id + '/manifest', 'bundle.json'), ' \u2014 the exact stored manifest'),
      h('li', null, dl('/bundles/' + id + '/viewer', 'viewer.html'), ' \u2014 the offline viewer'),
      h('li', { 'data-export': 'chrome' }, dl('/bundles/' + id + '/export?format=chrome', shortId(id) + '.chrome-trace.json'),
        ' \u2014 for Perfetto (ui.perfetto.dev) or chrome://tracing: host spans and ops nested per lane, each device clock its own process (never aligned with the host), memory as counters'),
      b.signature ? h('li', null, dl('/bundles/' + id + '/signature', 'signature.json'), ' \u2014 candle-graph/signature/1') : null));
  pane.append(h('h3', null, 'Signature'));
  if (!b.signature) pane.append(h('p', null, badge('neutral', 'unsigned'), ' This bundle was uploaded without a signature.'));
  else pane.append(h('p', null, b.signature.signer_revoked ? badge('bad', 'signer revoked') : badge('ok', 'signature verified'),
    ' ', b.signature.algorithm, ' key ', h('code', null, b.signature.key_id),
    b.signature.signer_revoked ? ' \u2014 the key was revoked after upload; the bundle stays readable.' : ' \u2014 verified by the server at upload.'));
  pane.append(msg);
}

function header(b) {
  const pv = b.provenance || {};
  const id = b.identity || {};
  const state = healthState(b.health, b.outcome);
  const fact = (label, value, title) => h('div', { class: 'cg-hfact', title: title || null }, h('span', { class: 'cg-hfact-label' }, label), h('span', { class: 'cg-hfact-value' }, value ?? '\u2014'));
  return h('header', { class: 'cg-header' },
    h('div', { class: 'cg-header-main' },
      h('span', { class: 'cg-brand' }, 'bundle ' + shortId(b.id)),
      h('h1', { class: 'cg-title', title: pv.entrypoint || '' }, pv.entrypoint || 'Unnamed entrypoint'),
      window.CG && window.CG.health ? window.CG.health.badge(state) : badge(state === 'complete' ? 'ok' : 'bad', state)),
    h('div', { class: 'cg-header-facts' },
      fact('Run', b.run_id),
      fact('Phase', pv.phase),
      fact('Device', pv.device),
      fact('Implementation', id.implementation_id),
      fact('Step', pv.capture_step),
      fact('Outer wall (host)', fmtNs(b.measured?.wall_ns), b.measured?.wall_ns != null ? b.measured.wall_ns + ' ns' : null),
      fact('Signature', b.signature ? (b.signature.signer_revoked ? 'signer revoked' : 'verified') : 'unsigned'),
      fact('Uploaded', (b.uploaded_at || '').replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC'))));
}

const SECTIONS = [
  { id: 'evidence', label: 'Evidence', render: renderEvidence },
  { id: 'trace', label: 'Trace', render: renderTrace },
  { id: 'span_costs', label: 'Span costs', render: renderCosts },
  { id: 'memory', label: 'Memory', render: renderMemory },
  { id: 'gpu', label: 'GPU', render: renderGpu },
];

export async function renderBundle(host, id, ctx) {
  host.append(h('p', { class: 'wa-crumbs' }, h('a', { href: '#/bundles' }, 'Bundles'), ' / ', h('span', { class: 'wa-mono' }, shortId(id))));
  const body = h('div', { class: 'cg-app wa-viewer' }, h('p', { class: 'wa-loading' }, 'Loading bundle\u2026'));
  host.append(body);
  let b;
  try { b = await getJson('/bundles/' + encodeURIComponent(id)); } catch (e) {
    body.textContent = ''; body.append(h('h1', null, 'Bundle ' + shortId(id)), errorPanel(e, 'Bundle')); return;
  }
  if (!ctx.isCurrent()) return;
  const fullId = b.id;
  const defs = SECTIONS.map((x) => ({ id: x.id, label: x.label, render: (pane) => x.render(pane, fullId) }));
  defs.push({ id: 'timeline', label: 'Timeline', render: (pane) => mountTimeline(pane, fullId) },
    { id: 'files', label: 'Files', render: (pane) => renderFiles(pane, fullId, b) });
  body.textContent = '';
  body.append(header(b));
  const initial = ctx.params.get('tab') || 'evidence';
  const t = tabs('Bundle sections', defs, { initial, viewerStyle: true, onChange: (tab) => {
    if (ctx.isCurrent()) {
      history.replaceState(null, '', '#/bundle/' + fullId + '?tab=' + tab);
      // same page, new address: keep the page's route in step (see main.js data-route)
      const page = body.closest('.wa-page');
      if (page) page.dataset.route = location.hash;
    }
  } });
  body.append(t.root);
}
