// Headless Chromium checks of the bundle page's tabs (issue 14): every tab shows
// the server's verified views, never the uploaded viewer.html, and the span
// table is virtualized and paged, sorted and filtered by the server.
// Run through tests/integration/test_web_views.sh, which sets:
//   CG_WEB_URL, CG_WEB_TOKEN  server and an admin token
//   CG_WEB_FAKE               bundle whose viewer.html payload was edited to FABRICATED / 987654321
//   CG_WEB_BIG                bundle of a synthetic trace of 3,000 spans
//   CG_SCREENSHOT_DIR, CG_CHROMIUM
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(root, 'web', 'package.json'));
const { chromium } = require('playwright-core');
const env = (k) => process.env[k] || '';
const URL0 = env('CG_WEB_URL'), TOKEN = env('CG_WEB_TOKEN'), FAKE = env('CG_WEB_FAKE'), BIG = env('CG_WEB_BIG');
const shotDir = env('CG_SCREENSHOT_DIR') || join(root, 'build', 'screenshots');
assert.ok(URL0 && TOKEN && FAKE && BIG, 'CG_WEB_* must be set (run tests/integration/test_web_views.sh)');
mkdirSync(shotDir, { recursive: true });

let browser;
before(async () => {
  browser = await chromium.launch({ executablePath: env('CG_CHROMIUM') || '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--font-render-hinting=none'] });
});
after(async () => { if (browser) await browser.close(); });

async function api(path) {
  const r = await fetch(URL0 + path, { headers: { Authorization: 'Bearer ' + TOKEN } });
  return { status: r.status, text: await r.clone().text(), body: await r.json().catch(() => null) };
}

async function open(hash) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const log = { requests: [], pageErrors: [], consoleErrors: [], failed: [] };
  await context.addInitScript((t) => sessionStorage.setItem('cg.token', t), TOKEN);
  const page = await context.newPage();
  page.on('request', (q) => log.requests.push(new URL(q.url()).pathname + new URL(q.url()).search));
  page.on('pageerror', (e) => log.pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) log.consoleErrors.push(m.text()); });
  page.on('response', (r) => { const u = new URL(r.url()).pathname; if (r.status() >= 400 && u !== '/favicon.ico') log.failed.push(r.status() + ' ' + u); });
  await page.goto(URL0 + '/' + hash, { waitUntil: 'load' });
  return { context, page, log };
}
const tab = async (page, t) => {
  await page.click(`[role=tab][data-tab=${t}]`);
  await page.waitForSelector(`[data-panel=${t}][data-painted=true]`);
};
const panelText = (page, t) => page.textContent(`[data-panel=${t}]`);
const fmt = (page, fn, v) => page.evaluate(async ([f, x]) => (await import('/app/ui.js'))[f](x), [fn, v]);

test('every tab of a bundle with a fabricated viewer.html shows the verified numbers', async () => {
  const viewer = await api('/bundles/' + FAKE + '/viewer');
  assert.equal(viewer.status, 200);
  assert.match(viewer.text, /FABRICATED/, 'the stored viewer.html carries the fabricated payload');
  const [ev, spans, costs, mem, gpu] = await Promise.all([
    api('/bundles/' + FAKE + '/views/evidence'), api('/bundles/' + FAKE + '/views/spans?sort=total_ns&order=desc&limit=12'),
    api('/bundles/' + FAKE + '/views/costs?limit=5'), api('/bundles/' + FAKE + '/views/memory'), api('/bundles/' + FAKE + '/views/gpu?limit=50')]);
  for (const r of [ev, spans, costs, mem, gpu]) assert.equal(r.status, 200);

  const { context, page, log } = await open('#/bundle/' + FAKE + '?tab=evidence');
  await page.waitForSelector('[data-panel=evidence][data-painted=true]');
  const evText = await panelText(page, 'evidence');
  assert.ok(ev.body.findings.length > 0, 'the verified evidence has findings');
  for (const f of ev.body.findings) assert.ok(evText.includes(f.summary.replace(/`/g, '')) || evText.includes(f.summary), 'finding shown: ' + f.code);
  await page.screenshot({ path: join(shotDir, 'app-views-evidence.png') });

  await tab(page, 'trace');
  const bars = await page.$$eval('[data-panel=trace] svg g.wa-bars > g text:first-of-type', (t) => t.map((x) => x.textContent));
  assert.equal(bars[0], spans.body.rows[0].name, 'longest span bar is the verified one');
  await page.waitForSelector('[data-table=spans][data-matched]');
  assert.equal(Number(await page.getAttribute('[data-table=spans]', 'data-matched')), spans.body.total);

  await tab(page, 'span_costs');
  await page.waitForSelector('[data-table=costs] tbody tr[data-id]');
  const first = await page.textContent('[data-table=costs] tbody tr[data-id]');
  const c0 = costs.body.rows[0];
  assert.ok(first.includes(c0.name) && first.includes(await fmt(page, 'fmtNs', c0.total_ns)), 'heaviest cost row: ' + first);

  await tab(page, 'memory');
  const peak = mem.body.logical.peak.live_bytes;
  assert.match(await page.textContent('[data-panel=memory] [data-field=peak_live_bytes]'), new RegExp(peak.toLocaleString('en-US')));
  assert.ok(await page.locator('[data-panel=memory] [data-chart=memory] rect').count() > 0, 'memory band drawn');
  await page.screenshot({ path: join(shotDir, 'app-views-memory.png') });

  await tab(page, 'gpu');
  assert.equal(await page.textContent('[data-panel=gpu] [data-field=status]'), String(gpu.body.summary.status));
  const names = await page.$$eval('[data-panel=gpu] [data-gpu-table] tbody tr td:first-child', (t) => t.map((x) => x.textContent));
  assert.ok(gpu.body.total > 0, 'the nsight kernels table has rows');
  assert.deepEqual(names, gpu.body.rows.map((r) => r.name), 'kernel rows are the verified ones');
  await page.screenshot({ path: join(shotDir, 'app-views-gpu.png') });

  const all = await page.textContent('main');
  assert.doesNotMatch(all, /FABRICATED|987,654,321|987654321|987\.654 ms|941\.9 MiB/, 'nothing of the edited payload is shown');
  const viewerLoads = log.requests.filter((p) => p.startsWith('/bundles/') && /\/viewer(\?|$)/.test(p));
  assert.deepEqual(viewerLoads, [], 'no tab fetched /bundles/{id}/viewer');
  assert.ok(log.requests.some((p) => p.includes('/views/')), 'tabs read the views routes');
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.consoleErrors, []);
  assert.deepEqual(log.failed, [], 'no failed request');
  await context.close();
});

test('the span table is virtualized and paged, sorted and filtered by the server', async () => {
  const { context, page, log } = await open('#/bundle/' + BIG + '?tab=trace');
  await page.waitForSelector('[data-table=spans][data-matched] tbody tr[data-id]');
  const sel = '[data-table=spans]';
  assert.equal(Number(await page.getAttribute(sel, 'data-matched')), 3000);
  const inDom = await page.locator(sel + ' tbody tr').count();
  assert.ok(inDom > 0 && inDom <= 30, 'only the visible rows are in the DOM: ' + inDom);
  // scroll to the end: the last page is fetched and its last row shown
  await page.$eval(sel + ' .wa-vt-scroll', (el) => { el.scrollTop = el.scrollHeight; });
  await page.waitForSelector(sel + ' tbody tr[data-row="2999"][data-id]');
  const last = await api('/bundles/' + BIG + '/views/spans?sort=start_ns&offset=2999&limit=1');
  assert.equal(await page.getAttribute(sel + ' tbody tr[data-row="2999"]', 'data-id'), last.body.rows[0].id);
  const pages = log.requests.filter((p) => p.includes('/views/spans') && p.includes('limit=100'));
  assert.ok(pages.length <= 4, 'only the pages in view were fetched: ' + pages.length);
  // sort by duration on the server. Back at the top first: there the header is
  // in view, so the click scrolls nothing. (Scrolled to the end, the click's own
  // scroll-into-view re-renders the virtual rows and moves the header under the
  // pointer, and a busy machine could lose the click.) The sorted request is
  // awaited with its listener in place before the click, then the table's own
  // state: its sorted rows, or the error it shows instead.
  await page.$eval(sel + ' .wa-vt-scroll', (el) => { el.scrollTop = 0; });
  await page.waitForSelector(sel + ' tbody tr[data-row="0"][data-id]');
  const sorted = page.waitForResponse((q) => q.url().includes('/views/spans?') && q.url().includes('sort=duration_ns'));
  await page.click(sel + ' th[data-key=duration_ns] button');
  assert.equal((await sorted).status(), 200, 'the sorted page');
  const outcome = await page.waitForFunction((s) => {
    const r = document.querySelector(s), err = r.querySelector('.wa-error');
    if (err) return 'error: ' + err.textContent;
    return r.dataset.sort === 'duration_ns' && r.querySelector('tbody tr[data-row="0"][data-id]') ? 'sorted' : false;
  }, sel);
  assert.equal(await outcome.jsonValue(), 'sorted');
  const byDur = await api('/bundles/' + BIG + '/views/spans?sort=duration_ns&order=desc&limit=1');
  assert.equal(await page.getAttribute(sel, 'data-order'), 'desc');
  assert.equal(await page.getAttribute(sel + ' tbody tr[data-id]', 'data-id'), byDur.body.rows[0].id);
  // filter on the server
  const want = await api('/bundles/' + BIG + '/views/spans?name=layer1&kind=module&limit=1');
  await page.fill('#vt-spans-name', 'layer1');
  await page.selectOption('#vt-spans-kind', 'module');
  await page.click(sel + ' form button[type=submit]');
  await page.waitForFunction(([s, n]) => Number(document.querySelector(s).dataset.matched) === n, [sel, want.body.matched]);
  assert.ok(want.body.matched > 0 && want.body.matched < 3000);
  const kinds = await page.$$eval(sel + ' tbody tr[data-id] td:nth-child(2)', (t) => t.map((x) => x.textContent));
  assert.ok(kinds.length > 0 && kinds.every((k) => k === 'module'), 'filtered rows: ' + kinds);
  await page.screenshot({ path: join(shotDir, 'app-views-spans.png') });
  assert.deepEqual(log.pageErrors, []);
  assert.deepEqual(log.consoleErrors, []);
  assert.deepEqual(log.failed, [], 'no failed request');
  await context.close();
});
