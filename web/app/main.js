// main.js — the web app shell: hash routes, token form, page dispatch.
//   #/bundles?<filters>            bundle list          (bundles.js)
//   #/bundle/<id>?tab=<tab>        bundle view          (bundle.js)
//   #/compare?a=…&b=…              cohort comparison    (compare.js)
//   #/campaigns, #/campaign/<id>   campaigns            (campaigns.js)
//   #/token                        read token for this tab
//   #/history?<series filters>     per-commit history   (history.js)
//   #/alerts?state=…               alerts and triage    (alerts.js)
import { getToken, setToken } from './api.js';
import { h } from './ui.js';
import { renderBundles } from './bundles.js';
import { renderBundle } from './bundle.js';
import { renderCompare } from './compare.js';
import { renderCampaigns, renderCampaign } from './campaigns.js';
import { renderHistory } from './history.js';
import { renderAlerts } from './alerts.js';

const main = document.getElementById('wa-main');
let renderSeq = 0;

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/bundles';
  const qi = raw.indexOf('?');
  const path = qi < 0 ? raw : raw.slice(0, qi);
  const params = new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1));
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), params };
}

export function navigate(hash, replace) {
  if (replace) history.replaceState(null, '', hash); else location.hash = hash;
  if (replace) route();
}

function authBar() {
  const bar = document.getElementById('wa-auth');
  bar.textContent = '';
  const has = !!getToken();
  bar.append(h('span', { class: 'wa-auth-state' }, has ? 'Token set for this tab' : 'No token (public read only)'), ' ',
    h('a', { href: '#/token' }, has ? 'Change token' : 'Enter token'));
}

function tokenPage() {
  const input = h('input', { type: 'password', id: 'wa-token', name: 'token', autocomplete: 'off', spellcheck: 'false', size: 50 });
  const form = h('form', { class: 'wa-form', onsubmit: (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    authBar();
    location.hash = sessionStorage.getItem('cg.return') || '#/bundles';
  } },
  h('h1', null, 'Read token'),
  h('p', null, 'The token is kept for this browser tab only (session storage) and sent to this server only.'),
  h('label', { for: 'wa-token' }, 'Token with the read scope'), ' ', input, ' ',
  h('button', { type: 'submit' }, 'Use token'), ' ',
  h('button', { type: 'button', onclick: () => { setToken(''); authBar(); input.value = ''; } }, 'Forget token'));
  return form;
}

async function route() {
  const seq = ++renderSeq;
  const { parts, params } = parseHash();
  const page = parts[0] || 'bundles';
  if (page !== 'token') sessionStorage.setItem('cg.return', location.hash || '#/bundles');
  document.querySelectorAll('[data-nav]').forEach((a) => {
    const on = a.dataset.nav === page || (page === 'bundle' && a.dataset.nav === 'bundles') || (page === 'campaign' && a.dataset.nav === 'campaigns');
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
  // data-route records which route this page renders, so a reader (or a test) can tell a
  // finished page of the current route from the previous route's page during navigation
  const host = h('div', { class: 'wa-page', 'data-page': page, 'data-route': location.hash });
  main.textContent = '';
  main.append(host);
  const ctx = { params, isCurrent: () => seq === renderSeq, navigate };
  try {
    if (page === 'bundles') await renderBundles(host, ctx);
    else if (page === 'bundle' && parts[1]) await renderBundle(host, parts[1], ctx);
    else if (page === 'compare') await renderCompare(host, ctx);
    else if (page === 'campaigns') await renderCampaigns(host, ctx);
    else if (page === 'campaign' && parts[1]) await renderCampaign(host, parts[1], ctx);
    else if (page === 'token') host.append(tokenPage());
    else if (page === 'history') await renderHistory(host, ctx);
    else if (page === 'alerts') await renderAlerts(host, ctx);
    else host.append(h('div', { class: 'wa-error', role: 'alert' }, h('h1', null, 'Page not found'), h('p', null, 'There is no page at this address. '), h('a', { href: '#/bundles' }, 'Go to the bundle list')));
  } catch (e) {
    if (seq !== renderSeq) return;
    console.warn(e);
    host.append(h('p', { class: 'wa-error', role: 'alert' }, 'This page could not be displayed: ' + (e && e.message ? e.message : e)));
  }
  document.title = (host.querySelector('h1')?.textContent || 'candle-graph') + ' \u2014 candle-graph';
  if (seq === renderSeq) host.setAttribute('data-ready', 'true');
}

// The skip link moves focus to the content without changing the route.
document.querySelector('.wa-skip').addEventListener('click', (e) => { e.preventDefault(); main.focus(); });
window.addEventListener('hashchange', route);
authBar();
route();
