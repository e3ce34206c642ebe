// ui.js — DOM helpers for the web app. Every value from the server is inserted as
// text or attribute (never parsed as HTML).
import { ApiError } from './api.js';

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, c) {
  if (c === undefined || c === null || c === false) return;
  if (Array.isArray(c)) { c.forEach((x) => append(el, x)); return; }
  el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
}

const SVG_NS = 'http\u003a//www.w3.org/2000/svg'.replace('\u003a', ':');
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

export const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

export function fmtNs(ns) {
  if (!isNum(ns)) return '\u2014';
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
  if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
  if (a >= 1e3) return (ns / 1e3).toFixed(2) + ' \u00b5s';
  return Math.round(ns) + ' ns';
}
export function fmtPct(p) { return isNum(p) ? (p > 0 ? '+' : '') + p.toFixed(2) + ' %' : '\u2014'; }
export function fmtNum(v, d = 4) { return isNum(v) ? (Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(+v.toFixed(d))) : '\u2014'; }
export function fmtBytes(b) {
  if (!isNum(b)) return '\u2014';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']; let i = 0, v = b;
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : String(v)) + ' ' + u[i];
}
export function shortId(id) { return id ? id.slice(0, 12) : '\u2014'; }

/* Health of a bundle summary: complete / failed / invalid. */
export function healthState(health, outcome) {
  if (!health) return 'invalid';
  if (!health.structurally_valid) return 'invalid';
  if (outcome === 'failed' || !health.capture_complete) return 'failed';
  return 'complete';
}
export function badge(kind, text, title) {
  return h('span', { class: 'wa-badge wa-badge-' + kind, title: title || null }, text);
}
export function healthBadge(state) {
  const words = { complete: 'complete', failed: 'failed', invalid: 'invalid' };
  return badge(state === 'complete' ? 'ok' : state === 'failed' ? 'warn' : 'bad', words[state] || state, 'Capture health: ' + state);
}

/* A readable panel for an error instead of a blank screen. */
export function errorPanel(err, what) {
  const box = h('div', { class: 'wa-error', role: 'alert' });
  if (err instanceof ApiError) {
    box.append(
      h('h2', null, (what ? what + ': ' : '') + (err.status ? err.status + ' ' : '') + err.code),
      h('p', null, err.explanation),
      h('p', { class: 'wa-error-msg' }, err.message));
    if (err.detail && typeof err.detail === 'object') box.append(h('pre', { class: 'wa-pre' }, JSON.stringify(err.detail, null, 2)));
    if (err.status === 401 || err.status === 403) box.append(h('p', null, h('a', { href: '#/token' }, 'Enter a read token')));
    if (err.retryAfter) box.append(h('p', null, 'Retry after ' + err.retryAfter + ' s.'));
  } else {
    box.append(h('h2', null, (what ? what + ': ' : '') + 'error'), h('p', null, err && err.message ? err.message : String(err)));
  }
  return box;
}

/* Sortable table: cols [{key, label, num, fmt(row)}]. */
export function table(cols, rows, { caption, sortKey, desc = true, rowAttrs } = {}) {
  const t = h('table', { class: 'wa-table' });
  if (caption) t.append(h('caption', null, caption));
  const thead = h('thead'), tbody = h('tbody');
  let key = sortKey, d = desc;
  const tr = h('tr');
  cols.forEach((c) => {
    const btn = h('button', { type: 'button', class: 'wa-sort', onclick: () => { if (key === c.key) d = !d; else { key = c.key; d = !!c.num; } draw(); } }, c.label);
    tr.append(h('th', { scope: 'col', class: c.num ? 'num' : null, 'data-key': c.key }, btn));
  });
  thead.append(tr);
  t.append(thead, tbody);
  function val(r, c) { return c.value ? c.value(r) : r[c.key]; }
  function draw() {
    const c = cols.find((x) => x.key === key);
    const sorted = c ? rows.slice().sort((x, y) => {
      const a = val(x, c), b = val(y, c);
      const r = (typeof a === 'number' && typeof b === 'number') ? a - b : String(a ?? '').localeCompare(String(b ?? ''));
      return d ? -r : r;
    }) : rows;
    tbody.textContent = '';
    for (const r of sorted) {
      const row = h('tr', rowAttrs ? rowAttrs(r) : null);
      cols.forEach((cc) => row.append(h('td', { class: cc.num ? 'num' : null }, cc.fmt ? cc.fmt(r) : (val(r, cc) ?? '\u2014'))));
      tbody.append(row);
    }
    thead.querySelectorAll('th').forEach((th) => th.setAttribute('aria-sort', th.dataset.key === key ? (d ? 'descending' : 'ascending') : 'none'));
  }
  draw();
  return t;
}

/* ARIA tablist with arrow/Home/End keys; tabs [{id, label, render(panel)}]. */
let tabSeq = 0;
export function tabs(label, defs, { initial, onChange, viewerStyle } = {}) {
  const uid = 'wt' + (++tabSeq);
  const list = h('div', { role: 'tablist', 'aria-label': label, class: viewerStyle ? 'cg-tabs' : 'wa-tabs' });
  const panels = h(viewerStyle ? 'main' : 'div', { class: viewerStyle ? 'cg-panels' : 'wa-panels' });
  const btns = [], panes = [];
  defs.forEach((d, i) => {
    const b = h('button', { type: 'button', role: 'tab', id: uid + '-t-' + d.id, 'aria-controls': uid + '-p-' + d.id, 'aria-selected': 'false', tabindex: '-1', class: viewerStyle ? 'cg-tab' : 'wa-tab', 'data-tab': d.id }, d.label);
    const p = h('section', { role: 'tabpanel', id: uid + '-p-' + d.id, 'aria-labelledby': b.id, tabindex: '0', hidden: true, class: viewerStyle ? 'cg-panel' : 'wa-panel', 'data-panel': d.id });
    b.addEventListener('click', () => activate(i, false));
    b.addEventListener('keydown', (e) => {
      const n = defs.length; let to = null;
      if (e.key === 'ArrowRight') to = (i + 1) % n; else if (e.key === 'ArrowLeft') to = (i - 1 + n) % n;
      else if (e.key === 'Home') to = 0; else if (e.key === 'End') to = n - 1;
      if (to === null) return;
      e.preventDefault(); activate(to, true);
    });
    btns.push(b); panes.push(p); list.append(b); panels.append(p);
  });
  function activate(i, focus) {
    btns.forEach((b, k) => { b.setAttribute('aria-selected', k === i ? 'true' : 'false'); b.tabIndex = k === i ? 0 : -1; panes[k].hidden = k !== i; });
    if (!panes[i].rendered) {
      panes[i].rendered = true;
      Promise.resolve().then(() => defs[i].render(panes[i])).catch((err) => {
        panes[i].append(h('p', { class: 'wa-error', role: 'alert' }, 'This section could not be displayed: ' + (err && err.message ? err.message : err)));
      });
    } else if (panes[i].cgOnShow) panes[i].cgOnShow();
    if (focus) btns[i].focus();
    if (onChange) onChange(defs[i].id);
  }
  const start = Math.max(0, defs.findIndex((d) => d.id === initial));
  const root = h('div', { class: 'wa-tabset' }, viewerStyle ? h('nav', { class: 'cg-tabbar' }, list) : list, panels);
  activate(start, false);
  return { root, activate: (id) => activate(Math.max(0, defs.findIndex((d) => d.id === id)), false) };
}
