// Headless Chromium checks of the web app (issue 8) against the real server.
// Run through tests/integration/test_web_app.sh, which starts PostgreSQL and the
// server, uploads bundles and sets:
//   CG_WEB_URL, CG_WEB_TOKEN       server and an admin/read token
//   CG_WEB_A, CG_WEB_B             two 5-run cohorts (comma-separated ids)
//   CG_WEB_X                       2 non-production runs (ineligible cohort)
//   CG_WEB_TL                      bundle with device intervals (20,000 records)
//   CG_WEB_CAMPAIGN                campaign with every capture state (web-camp)
//   CG_SCREENSHOT_DIR, CG_CHROMIUM
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { env, useBrowser, ready, openApp, assertClean, screenshotDir } from './lib.mjs';

const URL0 = env('CG_WEB_URL'), TOKEN = env('CG_WEB_TOKEN');
const A = env('CG_WEB_A').split(',').filter(Boolean), B = env('CG_WEB_B').split(',').filter(Boolean);
const X = env('CG_WEB_X').split(',').filter(Boolean), TL = env('CG_WEB_TL'), CAMPAIGN = env('CG_WEB_CAMPAIGN');
assert.ok(URL0 && TOKEN && A.length === 5 && B.length === 5 && TL && CAMPAIGN, 'CG_WEB_* must be set (run tests/integration/test_web_app.sh)');
const shotDir = screenshotDir();
const browser = useBrowser();

async function api(path) {
  const r = await fetch(URL0 + path, { headers: { Authorization: 'Bearer ' + TOKEN } });
  return { status: r.status, body: await r.json().catch(() => null) };
}

// Opens the app at hash (lib.mjs openApp: external requests recorded and aborted).
const open = (hash, { token = TOKEN, viewport = { width: 1280, height: 720 } } = {}) =>
  openApp(browser(), URL0, hash, { token, viewport, acceptDownloads: true });
const shot = (page, name) => page.screenshot({ path: join(shotDir, name), fullPage: false });
const rows = (page) => page.$$eval('table.wa-bundles tbody tr', (trs) => trs.map((t) => t.dataset.id));

test('static files: index, modules, viewer code and vendor are served with types and ETags; traversal is refused', async () => {
  const idx = await fetch(URL0 + '/');
  assert.equal(idx.status, 200);
  assert.match(idx.headers.get('content-type'), /^text\/html/);
  assert.ok(idx.headers.get('etag'));
  assert.match(idx.headers.get('content-security-policy'), /connect-src 'self'/);
  const again = await fetch(URL0 + '/', { headers: { 'If-None-Match': idx.headers.get('etag') } });
  assert.equal(again.status, 304);
  for (const [p, t] of [['/app/main.js', /^text\/javascript/], ['/app/app.css', /^text\/css/], ['/viewer/app.js', /^text\/javascript/], ['/vendor/dagre.min.js', /^text\/javascript/]]) {
    const r = await fetch(URL0 + p);
    assert.equal(r.status, 200, p);
    assert.match(r.headers.get('content-type'), t, p);
  }
  for (const p of ['/app/../../CMakeLists.txt', '/app/%2e%2e/%2e%2e/server/srv.h', '/app//main.js', '/app/', '/vendor/dagre.LICENSE.nope']) {
    const r = await fetch(URL0 + p);
    assert.equal(r.status, 404, p);
  }
  const html = await idx.text();
  assert.doesNotMatch(html, /https?:\/\//);
});

test('bundle list loads clean, shows badges; filters and keyset paging change the list', async () => {
  const { context, page, log } = await open('#/bundles');
  const all = await rows(page);
  assert.ok(all.length >= 13, 'all bundles listed: ' + all.length);
  assert.ok(await page.locator('.wa-badge', { hasText: 'complete' }).count() > 0);
  assert.ok(await page.locator('.wa-badge', { hasText: 'unsigned' }).count() > 0);
  await shot(page, 'app-bundles.png');
  await page.fill('#wf-implementation_id', 'impl-a');
  await page.click('form.wa-filters button[type=submit]');
  await page.waitForFunction(() => location.hash.includes('implementation_id=impl-a') && (document.querySelector('.wa-page[data-ready="true"]')?.dataset.route === location.hash));
  const filtered = await rows(page);
  assert.deepEqual(new Set(filtered), new Set(A), 'implementation filter gives cohort A');
  await page.goto(URL0 + '/#/bundles?limit=4');
  await ready(page, 'table.wa-bundles');
  const p1 = await rows(page);
  assert.equal(p1.length, 4);
  await page.click('[data-action=next]');
  await page.waitForFunction(() => location.hash.includes('cursor=') && (document.querySelector('.wa-page[data-ready="true"]')?.dataset.route === location.hash));
  const p2 = await rows(page);
  assert.equal(p2.length, 4);
  assert.equal(p1.filter((x) => p2.includes(x)).length, 0, 'page 2 holds other bundles');
  await page.click('[data-action=prev]');
  await page.waitForFunction(() => !location.hash.includes('cursor=') && (document.querySelector('.wa-page[data-ready="true"]')?.dataset.route === location.hash));
  assert.deepEqual(await rows(page), p1);
  // select A and B into cohorts
  await page.goto(URL0 + '/#/bundles?implementation_id=impl-a');
  await ready(page, 'table.wa-bundles');
  await page.check('thead input[type=checkbox]');
  await page.click('[data-action=add-a]');
  assert.match(await page.textContent('[data-cohort-count=a]'), /5 runs/);
  assertClean(log);
  await context.close();
});

test('bundle view: viewer sections and Files; tabs work by keyboard', async () => {
  const { context, page, log } = await open('#/bundle/' + A[0]);
  await page.waitForSelector('[role=tab][data-tab=evidence][aria-selected=true]');
  await shot(page, 'app-bundle-evidence.png');
  await page.focus('[role=tab][data-tab=evidence]');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.getAttribute('[role=tab][data-tab=trace]', 'aria-selected'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.tab), 'trace');
  await page.keyboard.press('End');
  assert.equal(await page.getAttribute('[role=tab][data-tab=files]', 'aria-selected'), 'true');
  await page.waitForSelector('[data-panel=files] table');
  assert.ok(await page.locator('[data-panel=files]', { hasText: 'trace.jsonl' }).count());
  // the Perfetto export downloads the server's Chrome Trace Event Format answer
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-export=chrome] button')]);
  assert.match(dl.suggestedFilename(), /\.chrome-trace\.json$/);
  const exported = JSON.parse(readFileSync(await dl.path(), 'utf8'));
  const want = await api('/bundles/' + A[0] + '/export?format=chrome');
  assert.equal(want.status, 200);
  assert.deepEqual(exported, want.body, 'the download is the /export answer');
  assert.ok(exported.traceEvents.some((e) => e.ph === 'X'), 'complete events');
  await page.focus('[role=tab][data-tab=files]');
  await page.keyboard.press('Home');
  assert.equal(await page.getAttribute('[role=tab][data-tab=evidence]', 'aria-selected'), 'true');
  await page.click('[role=tab][data-tab=trace]');
  await page.waitForSelector('[data-panel=trace] svg g');
  for (const t of ['span_costs', 'memory', 'gpu']) {
    await page.click(`[role=tab][data-tab=${t}]`);
    assert.equal(await page.isVisible(`[data-panel=${t}]`), true);
    await page.waitForFunction((x) => document.querySelector(`[data-panel=${x}]`).children.length > 0 && !document.querySelector(`[data-panel=${x}] .wa-loading`), t);
    assert.match(await page.url(), new RegExp('tab=' + t + '$'), 'open section kept in the URL');
    if (t === 'span_costs') await page.waitForSelector('[data-panel=span_costs] table');
  }
  await page.click('[role=tab][data-tab=memory]');
  await shot(page, 'app-bundle-memory.png');
  assertClean(log);
  await context.close();
});

test('timeline draws (non-blank) and zooming changes the visible range', async () => {
  const { context, page, log } = await open('#/bundle/' + TL + '?tab=timeline');
  await page.waitForSelector('.wa-tl-panel[data-clock=host][data-drawn]');
  await page.waitForSelector('.wa-tl-panel[data-clock=cuda-event-0][data-drawn]');
  const clocks = await page.$$eval('.wa-tl-panel', (ps) => ps.map((p) => p.dataset.clock));
  assert.deepEqual(clocks, ['host', 'cuda-event-0'], 'host and device clocks in separate panels');
  const ink = await page.$eval('.wa-tl-panel[data-clock=host] canvas', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) n++;
    return n / (d.length / 4);
  });
  assert.ok(ink > 0.05, 'canvas is not blank: ' + ink);
  await shot(page, 'app-timeline.png');
  const before = await page.$eval('.wa-tl-panel[data-clock=host]', (p) => [Number(p.dataset.startNs), Number(p.dataset.endNs)]);
  const fetches0 = await page.evaluate(() => window.CG_TIMELINE_STATS.fetches);
  const box = await page.locator('.wa-tl-panel[data-clock=host] canvas').boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
  for (let i = 0; i < 6; i++) await page.mouse.wheel(0, -300);
  await page.waitForFunction(([s, e]) => { const p = document.querySelector('.wa-tl-panel[data-clock=host]'); return Number(p.dataset.endNs) - Number(p.dataset.startNs) < (e - s) / 4; }, before);
  const after = await page.$eval('.wa-tl-panel[data-clock=host]', (p) => [Number(p.dataset.startNs), Number(p.dataset.endNs)]);
  assert.ok(after[1] - after[0] < (before[1] - before[0]) / 4, 'zoomed in: ' + before + ' -> ' + after);
  assert.ok(after[0] > before[0], 'window moved towards the pointer');
  await page.waitForFunction((f) => window.CG_TIMELINE_STATS.fetches > f, fetches0);
  await page.waitForTimeout(200);
  await shot(page, 'app-timeline-zoomed.png');
  // keyboard zoom out and reset on the focused canvas
  await page.focus('.wa-tl-panel[data-clock=host] canvas');
  await page.keyboard.press('0');
  await page.waitForFunction(([s, e]) => { const p = document.querySelector('.wa-tl-panel[data-clock=host]'); return Number(p.dataset.startNs) === s && Number(p.dataset.endNs) === e; }, before);
  // the device clock panel keeps its own range
  const dev = await page.$eval('.wa-tl-panel[data-clock=cuda-event-0]', (p) => [Number(p.dataset.startNs), Number(p.dataset.endNs)]);
  assert.ok(dev[0] >= 5000, 'device clock axis starts at its own first interval');
  assertClean(log);
  await context.close();
});

test('compare of two 5-run cohorts shows the verdict and CI of GET /compare', async () => {
  const q = `a=${A.join(',')}&b=${B.join(',')}`;
  const want = await api('/compare?' + q);
  const { context, page, log } = await open('#/compare?' + q);
  assert.equal(want.status, 200);
  await page.waitForSelector('.wa-verdict');
  assert.equal(await page.getAttribute('.wa-verdict', 'data-verdict'), want.body.verdict);
  assert.notEqual(want.body.verdict, 'ineligible', 'the 5+5 cohorts are eligible: ' + JSON.stringify(want.body.reasons));
  const ci = want.body.confidence_interval;
  const ciText = await page.textContent('[data-field=ci]');
  const fmt = await page.evaluate(async (v) => (await import('/app/ui.js')).fmtNs(v), ci.lower_delta_ns);
  assert.ok(ciText.includes(fmt), `CI ${ciText} shows ${fmt}`);
  assert.equal(await page.locator('circle.wa-dot[data-cohort=a]').count(), 5);
  assert.equal(await page.locator('circle.wa-dot[data-cohort=b]').count(), 5);
  assert.equal(await page.locator('line.wa-median').count(), 2);
  assert.equal(await page.inputValue('#wc-link'), page.url(), 'shareable link is this view');
  await shot(page, 'app-compare.png');
  assertClean(log);
  await context.close();
});

test('an ineligible compare shows its reason codes', async () => {
  const q = `a=${X.join(',')}&b=${B.join(',')}`;
  const want = await api('/compare?' + q);
  const { context, page, log } = await open('#/compare?' + q);
  assert.equal(want.body.verdict, 'ineligible');
  const codes = await page.$$eval('.wa-reasons li', (l) => l.map((x) => x.dataset.code));
  assert.deepEqual(codes, want.body.reasons.map((r) => r.code));
  assert.ok(codes.includes('insufficient_runs'));
  await shot(page, 'app-compare-ineligible.png');
  assertClean(log);
  await context.close();
});

test('campaigns: list and the grid shows each state', async () => {
  const { context, page, log } = await open('#/campaigns');
  assert.ok(await page.locator('a', { hasText: CAMPAIGN }).count());
  await shot(page, 'app-campaigns.png');
  await page.click(`a:text("${CAMPAIGN}")`);
  await page.waitForSelector('.wa-page[data-page=campaign][data-ready="true"] .wa-grid');
  const want = await api('/campaigns/' + CAMPAIGN + '/status');
  const states = await page.$$eval('.wa-cell', (c) => c.map((x) => x.dataset.state));
  assert.deepEqual(states, want.body.captures.map((c) => c.state.state));
  for (const s of ['published', 'missing', 'verification_failed', 'identity_mismatch', 'failed_run']) assert.ok(states.includes(s), s);
  assert.match(await page.textContent('.wa-cell[data-state=published]'), /cpu/, 'the device a capture ran on');
  // a partial campaign: its published captures are shown, and why no series is drawn
  const withheld = await page.textContent('.wa-charts [data-series=withheld]');
  const pending = want.body.captures.filter((c) => c.state.state !== 'published');
  assert.match(withheld, new RegExp('No series is drawn.*' + pending.length + ' of ' + want.body.captures.length + ' planned captures'));
  for (const c of pending) assert.ok(withheld.includes(c.bundle + ' (step ' + c.capture_step + ')'), c.bundle);
  assert.doesNotMatch(withheld, /409|"error"|\{/, 'no raw error body');
  assert.ok(await page.locator('.wa-cell[data-state=published] a').count(), 'published captures link to their bundles');
  await shot(page, 'app-campaign-states.png');
  assertClean(log, 0); // no request that can only answer 409, no console error
  // a fully published campaign: the three series charts over capture steps
  await page.goto(URL0 + '/#/campaign/web-series');
  await page.waitForSelector('.wa-page[data-page=campaign][data-ready="true"] .wa-charts figure');
  const series = await api('/campaigns/web-series/series');
  assert.equal(series.status, 200);
  assert.deepEqual(await page.$$eval('.wa-cell', (c) => c.map((x) => x.dataset.state)), ['published', 'published', 'published']);
  const captions = await page.$$eval('.wa-charts figcaption', (f) => f.map((x) => x.textContent));
  assert.deepEqual(captions, ['Outer wall time (host)', 'Tensor-stat RMS by label', 'Gradient norms']);
  assert.equal(await page.locator('.wa-charts figure').first().locator('circle').count(), series.body.outer_wall_time.filter((p) => p.outer_wall_time_ns !== null).length);
  const labels = Object.keys(series.body.tensor_stats);
  assert.ok(labels.length > 0);
  assert.equal(await page.locator('.wa-charts figure').nth(1).locator('polyline').count(), labels.length, 'one RMS line per label');
  await shot(page, 'app-campaign.png');
  assertClean(log, 0);
  await context.close();
});

test('errors are explained: 401 without a token, 404 for an unknown bundle', async () => {
  let o = await open('#/bundles', { token: '' });
  assert.match(await o.page.textContent('.wa-error'), /401 unauthorized/);
  assert.match(await o.page.textContent('.wa-error'), /read token/);
  await shot(o.page, 'app-error-401.png');
  // the token is typed once for this tab, then the page that asked for it comes back
  await o.page.click('.wa-error a[href="#/token"]');
  await o.page.fill('#wa-token', TOKEN);
  await o.page.click('form.wa-form button[type=submit]');
  await o.page.waitForSelector('.wa-page[data-page=bundles][data-ready="true"] table.wa-bundles');
  assert.equal(await o.page.evaluate(() => sessionStorage.getItem('cg.token')), TOKEN);
  assert.match(await o.page.textContent('#wa-auth'), /Token set for this tab/);
  // the skip link focuses the content and keeps the route
  await o.page.focus('.wa-skip');
  await o.page.keyboard.press('Enter');
  assert.equal(await o.page.evaluate(() => document.activeElement.id), 'wa-main');
  assert.match(o.page.url(), /#\/bundles/);
  assertClean(o.log, 1); // the first GET /bundles answered 401
  await o.context.close();
  o = await open('#/bundle/000000000000');
  assert.match(await o.page.textContent('.wa-error'), /404 not_found/);
  await o.context.close();
  o = await open('#/bundle/zzz');
  assert.match(await o.page.textContent('.wa-error'), /400 invalid_parameter/);
  await o.context.close();
});

test('narrow window: the list and bundle view stay usable', async () => {
  const { context, page, log } = await open('#/bundles', { viewport: { width: 420, height: 800 } });
  assert.ok((await rows(page)).length >= 13);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, 'no page-level horizontal scroll: ' + overflow);
  await shot(page, 'app-narrow.png');
  assertClean(log);
  await context.close();
});

test('public read: with serve --public-read the app works without a token', async (t) => {
  if (env('CG_WEB_PUBLIC') !== '1') { t.skip('runs in the second pass of test_web_app.sh, against a --public-read server'); return; }
  const { context, page, log } = await open('#/bundles', { token: '' });
  assert.ok((await rows(page)).length >= 13);
  assert.match(await page.textContent('#wa-auth'), /No token/);
  await page.click('table.wa-bundles tbody tr a');
  await page.waitForSelector('.wa-page[data-page=bundle][data-ready="true"] [role=tab][aria-selected=true]');
  assertClean(log);
  await context.close();
});
