// Headless Chromium checks of the History and Alerts pages (issue 15) against
// the real server. Run through tests/integration/test_web_history.sh, which
// uploads two histories and sets:
//   CG_WEB_URL, CG_WEB_TOKEN   server and an admin token (read + upload)
//   CG_HIST_SHIFT, CG_HIST_PREV  commit of the planted (confirmed) shift of web-h and its predecessor
//   CG_HIST_UNCONF             commit of web-u's change point whose cohort has 3 runs
//   CG_SCREENSHOT_DIR, CG_CHROMIUM
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { env, useBrowser, ready, openApp, assertClean, screenshotDir } from './lib.mjs';

const URL0 = env('CG_WEB_URL'), TOKEN = env('CG_WEB_TOKEN');
const SHIFT = env('CG_HIST_SHIFT'), PREV = env('CG_HIST_PREV'), UNCONF = env('CG_HIST_UNCONF');
assert.ok(URL0 && TOKEN && SHIFT && PREV && UNCONF, 'CG_WEB_* / CG_HIST_* must be set (run tests/integration/test_web_history.sh)');
const shotDir = screenshotDir();
const browser = useBrowser();

const open = (hash) => openApp(browser(), URL0, hash, { token: TOKEN, viewport: { width: 1280, height: 900 } });
const clean = assertClean;

test('History: median with its band, the planted change point confirmed, a point opens its bundles and the comparison with the previous commit', async () => {
  const { context, page, log } = await open('#/history?workload_id=web-h&branch=main');
  assert.equal(await page.locator('circle.wa-point').count(), 12);
  assert.equal(await page.locator('polygon.wa-band').count(), 1);
  const confirmed = await page.$$eval('line.wa-cp[data-state="confirmed"]', (ls) => ls.map((l) => l.dataset.commit));
  assert.deepEqual(confirmed, [SHIFT]);
  assert.match(await page.locator(`table.wa-cps tr[data-commit="${SHIFT}"]`).innerText(), /confirmed/);
  await page.screenshot({ path: join(shotDir, 'app-history.png') });
  await page.click(`circle.wa-point[data-commit="${SHIFT}"]`);
  await page.waitForSelector(`.wa-point-detail[data-commit="${SHIFT}"]`);
  assert.equal(await page.locator('.wa-point-bundles a').count(), 5);
  const href = await page.getAttribute('a.wa-compare-prev', 'href');
  assert.match(href, /^#\/compare\?a=[0-9a-f]{64}(%2C[0-9a-f]{64}){4}&b=[0-9a-f]{64}(%2C[0-9a-f]{64}){4}$/);
  assert.match(await page.locator('a.wa-compare-prev').innerText(), new RegExp(PREV.slice(0, 12)));
  await page.click('a.wa-compare-prev');
  await ready(page, '.wa-verdict, [data-verdict]');
  assert.match(await page.locator('.wa-page').innerText(), /slower/i);
  clean(log);
  await context.close();
});

test('History: an unconfirmable change point is drawn unconfirmed with the comparison reason', async () => {
  const { context, page, log } = await open('#/history?workload_id=web-u');
  const commits = await page.$$eval('line.wa-cp[data-state="unconfirmed"]', (ls) => ls.map((l) => l.dataset.commit));
  assert.ok(commits.includes(UNCONF), 'unconfirmed marker at ' + UNCONF + ': ' + commits);
  assert.equal(await page.locator('line.wa-cp[data-state="confirmed"]').count(), 0);
  const row = await page.locator(`table.wa-cps tr[data-commit="${UNCONF}"]`).innerText();
  assert.match(row, /unconfirmed/);
  assert.match(row, /at least 5 independent runs/);
  clean(log);
  await context.close();
});

test('History: filters matching two branches list the series to choose from', async () => {
  const { context, page, log } = await open('#/history?workload_id=web-h');
  const links = page.locator('.wa-series-choices a');
  assert.equal(await links.count(), 2);
  await links.filter({ hasText: 'branch main' }).click();
  await ready(page, 'circle.wa-point');
  assert.match(await page.evaluate(() => location.hash), /branch=main/);
  clean(log, 1);
  await context.close();
});

test('Alerts: the planted alert is open; triage with a note changes its state on the server', async () => {
  const { context, page, log } = await open('#/alerts?state=open');
  const row = page.locator('table.wa-alerts tbody tr').first();
  assert.equal(await page.locator('table.wa-alerts tbody tr').count(), 1);
  assert.equal(await row.getAttribute('data-state'), 'open');
  const id = await row.getAttribute('data-id');
  await page.screenshot({ path: join(shotDir, 'app-alerts.png') });
  await row.locator('input[name=note]').fill('looking into it');
  await row.locator('button[data-action="acknowledged"]').click();
  await page.waitForSelector(`table.wa-alerts tr[data-id="${id}"][data-state="acknowledged"]`);
  const r = await fetch(URL0 + '/alerts?state=acknowledged', { headers: { Authorization: 'Bearer ' + TOKEN } });
  const body = await r.json();
  assert.equal(body.items.length, 1);
  assert.equal(String(body.items[0].id), id);
  assert.equal(body.items[0].note, 'looking into it');
  clean(log);
  await context.close();
  const again = await open('#/alerts?state=open');
  assert.match(await again.page.locator('.wa-page').innerText(), /No alerts/);
  clean(again.log);
  await again.context.close();
});

test('Bundle list: branch and commit filters', async () => {
  const { context, page, log } = await open('#/bundles?commit=' + SHIFT.slice(0, 12));
  assert.equal(await page.locator('table.wa-bundles tbody tr').count(), 5);
  await page.goto(URL0 + '/#/bundles?branch=feature');
  await ready(page, 'table.wa-bundles');
  assert.equal(await page.locator('table.wa-bundles tbody tr').count(), 1);
  assert.equal(await page.inputValue('#wf-branch'), 'feature');
  clean(log);
  await context.close();
});

test('Compare: an ineligible pair (3 runs) shows the run-k-more advice', async () => {
  const r = await fetch(URL0 + '/history?workload_id=web-u', { headers: { Authorization: 'Bearer ' + TOKEN } });
  const doc = await r.json();
  const i = doc.points.findIndex((p) => p.commit === UNCONF);
  assert.ok(i > 0);
  const { context, page, log } = await open('#/compare?a=' + doc.points[i - 1].bundles.join(',') + '&b=' + doc.points[i].bundles.join(','));
  await page.waitForSelector('.wa-advice');
  assert.equal(await page.getAttribute('[data-verdict]', 'data-verdict'), 'ineligible');
  const k = Number(await page.getAttribute('.wa-advice', 'data-runs'));
  assert.ok(k >= 2, 'advice: ' + k);
  assert.match(await page.locator('.wa-advice').innerText(), /more runs? per side/);
  clean(log);
  await context.close();
});
