// bundle.js — one bundle: the viewer/5 sections (Evidence, Trace, Span costs,
// Memory, GPU) rendered by the shared viewer code (web/viewer, CG.app.mount) from
// the payload embedded in GET /bundles/{id}/viewer, plus two web-only sections:
// Timeline (LOD from GET /bundles/{id}/timeline) and Files (downloads).
import { getJson, getText, getToken } from './api.js';
import { h, badge, errorPanel, fmtBytes, shortId } from './ui.js';
import { mountTimeline } from './timeline.js';

function extraTabs() {
  const CG = window.CG;
  if (CG.app.TABS.some((t) => t.id === 'timeline')) return;
  CG.app.TABS.push(
    { id: 'timeline', label: 'Timeline', render: (pane, payload) => mountTimeline(pane, payload.__wa.id) },
    { id: 'files', label: 'Files', render: (pane, payload) => renderFiles(pane, payload.__wa) });
}

/* The viewer HTML carries its payload as JSON in <script id="cg-payload">; it is
 * parsed as an inert document (scripts never run). */
export function payloadFromViewerHtml(html) {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const el = doc.getElementById('cg-payload');
  if (!el) throw new Error('the viewer page carries no payload');
  return JSON.parse(el.textContent);
}

async function download(path, name) {
  const headers = {};
  const t = getToken();
  if (t) headers.Authorization = 'Bearer ' + t;
  const res = await fetch(path, { headers, credentials: 'omit' });
  if (!res.ok) throw new Error('download failed: ' + res.status);
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function renderFiles(pane, wa) {
  const b = wa.summary;
  const msg = h('p', { class: 'wa-status', role: 'status', 'aria-live': 'polite' });
  const dl = (path, name) => h('button', { type: 'button', class: 'wa-link', onclick: async () => {
    msg.textContent = 'Downloading ' + name + '\u2026';
    try { await download(path, name); msg.textContent = 'Downloaded ' + name + '.'; } catch (e) { msg.textContent = e.message; }
  } }, name);
  pane.append(h('h2', null, 'Files'));
  const rows = (b.files || []).map((f) => h('tr', null,
    h('td', null, dl('/bundles/' + wa.id + '/files/' + f.path.split('/').map(encodeURIComponent).join('/'), f.path)),
    h('td', { class: 'num' }, fmtBytes(f.bytes)),
    h('td', { class: 'wa-mono wa-hash' }, f.sha256)));
  pane.append(h('table', { class: 'wa-table' }, h('caption', null, (b.file_count ?? rows.length) + ' files, ' + fmtBytes(b.total_bytes)),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Path'), h('th', { scope: 'col', class: 'num' }, 'Size'), h('th', { scope: 'col' }, 'SHA-256'))),
    h('tbody', null, rows)));
  pane.append(h('h3', null, 'Whole bundle'),
    h('ul', null,
      h('li', null, dl('/bundles/' + wa.id + '/archive', shortId(wa.id) + '.tar.zst'), ' \u2014 unpacked, it verifies with ', h('code', null, 'candle-graph verify')),
      h('li', null, dl('/bundles/' + wa.id + '/manifest', 'bundle.json'), ' \u2014 the exact stored manifest'),
      h('li', null, dl('/bundles/' + wa.id + '/viewer', 'viewer.html'), ' \u2014 the offline viewer'),
      b.signature ? h('li', null, dl('/bundles/' + wa.id + '/signature', 'signature.json'), ' \u2014 candle-graph/signature/1') : null));
  pane.append(h('h3', null, 'Signature'));
  if (!b.signature) pane.append(h('p', null, badge('neutral', 'unsigned'), ' This bundle was uploaded without a signature.'));
  else pane.append(h('p', null, b.signature.signer_revoked ? badge('bad', 'signer revoked') : badge('ok', 'signature verified'),
    ' ', b.signature.algorithm, ' key ', h('code', null, b.signature.key_id),
    b.signature.signer_revoked ? ' \u2014 the key was revoked after upload; the bundle stays readable.' : ' \u2014 verified by the server at upload.'));
  pane.append(msg);
}

export async function renderBundle(host, id, ctx) {
  extraTabs();
  host.append(h('p', { class: 'wa-crumbs' }, h('a', { href: '#/bundles' }, 'Bundles'), ' / ', h('span', { class: 'wa-mono' }, shortId(id))));
  const body = h('div', null, h('p', { class: 'wa-loading' }, 'Loading bundle\u2026'));
  host.append(body);
  let summary;
  try { summary = await getJson('/bundles/' + encodeURIComponent(id)); } catch (e) {
    body.textContent = ''; body.append(h('h1', null, 'Bundle ' + shortId(id)), errorPanel(e, 'Bundle')); return;
  }
  if (!ctx.isCurrent()) return;
  const fullId = summary.id;
  let payload, viewerErr = null;
  try { payload = payloadFromViewerHtml(await getText('/bundles/' + fullId + '/viewer')); } catch (e) { viewerErr = e; }
  if (!ctx.isCurrent()) return;
  body.textContent = '';
  const root = h('div', { class: 'wa-viewer' });
  body.append(root);
  if (!payload) {
    // No viewer payload (e.g. the trace cannot be analysed): still show Timeline and Files.
    root.append(h('h1', null, 'Bundle ' + shortId(fullId)), errorPanel(viewerErr, 'Viewer'));
    payload = { schema: window.CG.app.SCHEMA, summary: { entrypoint: summary.provenance?.entrypoint, capture_complete: false, structurally_valid: false }, views: {} };
  }
  payload.__wa = { id: fullId, summary };
  const mountEl = h('div');
  root.append(mountEl);
  const inst = window.CG.app.mount(mountEl, payload);
  const tab = ctx.params.get('tab');
  if (tab) inst.activate(tab);
  // keep the active section (mouse or keyboard) in the URL so it can be shared
  new MutationObserver(() => {
    const t = mountEl.getAttribute('data-active-tab');
    if (t && ctx.isCurrent()) history.replaceState(null, '', '#/bundle/' + fullId + '?tab=' + t);
  }).observe(mountEl, { attributes: true, attributeFilter: ['data-active-tab'] });
}
