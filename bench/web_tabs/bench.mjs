// bench.mjs — first meaningful paint of each tab of the bundle page for every bundle of
// CG_BENCH_IDS ("N=id …"). Each open is a fresh browser context at #/bundle/<id>?tab=<tab>:
//   tab_ms   from the tab's mount to its first meaningful paint (views.js: data shown;
//            Timeline: first canvas draw with server data)
//   nav_ms   the same from navigation start (page, modules, bundle summary included)
//   max_view_response_bytes  largest GET /bundles/{id}/views/… or /timeline answer seen
// Default: median of 3 opens per tab (indexes cached). CG_BENCH_MODE=cold: one open per
// tab right after a server restart, Evidence first (its request builds the view index).
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { chromium } = createRequire(join(root, 'web', 'package.json'))('playwright-core');
const URL0 = process.env.CG_WEB_URL, TOKEN = process.env.CG_WEB_TOKEN;
const ids = (process.env.CG_BENCH_IDS || '').trim().split(/\s+/).map((x) => x.split('='));
const cold = process.env.CG_BENCH_MODE === 'cold';
const TABS = ['evidence', 'trace', 'span_costs', 'memory', 'gpu', 'timeline'];
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.floor(s.length / 2)] : null; };
const r1 = (v) => (v === null || v === undefined ? null : Math.round(v));

const browser = await chromium.launch({ executablePath: process.env.CG_CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
let maxBytes = 0;
async function open(id, tab) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await ctx.addInitScript((t) => sessionStorage.setItem('cg.token', t), TOKEN);
  const page = await ctx.newPage();
  page.on('response', async (r) => {
    if (!/\/views\/|\/timeline/.test(r.url())) return;
    try { maxBytes = Math.max(maxBytes, (await r.body()).length); } catch { /* page closed */ }
  });
  await page.goto(URL0 + '/#/bundle/' + id + '?tab=' + tab);
  let out;
  if (tab === 'timeline') {
    await page.waitForFunction(() => window.CG_TIMELINE_STATS && window.CG_TIMELINE_STATS.firstPaintMs !== null, null, { timeout: 900000 });
    out = await page.evaluate(() => ({ tab: window.CG_TIMELINE_STATS.firstPaintMs, nav: window.CG_TIMELINE_STATS.firstPaintSinceNavigationMs }));
  } else {
    await page.waitForFunction((t) => window.CG_TAB_STATS && window.CG_TAB_STATS[t] !== undefined, tab, { timeout: 900000 });
    out = await page.evaluate((t) => ({ tab: window.CG_TAB_STATS[t], nav: performance.getEntriesByName('cg-tab-paint-' + t)[0].startTime }), tab);
  }
  await ctx.close();
  return out;
}
const report = { bench: 'web_tabs', mode: cold ? 'after_restart' : 'cached', viewport: '1280x800', sizes: [] };
for (const [n, id] of ids) {
  const tabs = {};
  for (const t of TABS) {
    const runs = [];
    for (let i = 0; i < (cold ? 1 : 3); i++) runs.push(await open(id, t));
    tabs[t] = { tab_ms: r1(med(runs.map((x) => x.tab))), nav_ms: r1(med(runs.map((x) => x.nav))) };
  }
  report.sizes.push({ records: Number(n), tabs, max_view_response_bytes: maxBytes });
  maxBytes = 0;
}
await browser.close();
console.log(JSON.stringify(report, null, 2));
