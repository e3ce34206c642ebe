// Shared helpers of the headless Chromium checks (tests/browser/*.test.mjs):
// playwright-core from web/node_modules, the browser's lifecycle, opening the
// web app with a token, waiting for a rendered route, and the clean-page check.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(root, 'web', 'package.json'));
export const { chromium } = require('playwright-core');
export const env = (k) => process.env[k] || '';

// Where screenshots go ($CG_SCREENSHOT_DIR, default build/screenshots); created.
export function screenshotDir() {
  const d = env('CG_SCREENSHOT_DIR') || join(root, 'build', 'screenshots');
  mkdirSync(d, { recursive: true });
  return d;
}

// Launches Chromium ($CG_CHROMIUM) before the file's tests and closes it after
// them; returns a getter for the browser.
export function useBrowser(extraArgs = ['--font-render-hinting=none']) {
  let browser;
  before(async () => {
    browser = await chromium.launch({ executablePath: env('CG_CHROMIUM') || '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', ...extraArgs] });
  });
  after(async () => { if (browser) await browser.close(); });
  return () => browser;
}

// Waits until the page of the *current* route has finished rendering (a hash-only
// navigation leaves the previous route's finished page in place for a moment).
export const ready = (page, sel = '') =>
  page.waitForFunction((s) => {
    const p = document.querySelector('.wa-page[data-ready="true"]');
    return !!p && p.dataset.route === location.hash && (!s || !!p.querySelector(s));
  }, sel);

// Opens the app of the server at base on hash with token in sessionStorage; every
// request outside the server's origin is recorded in log.external and aborted.
export async function openApp(browser, base, hash, { token = '', viewport = { width: 1280, height: 720 }, acceptDownloads = false } = {}) {
  const context = await browser.newContext({ viewport, acceptDownloads });
  const log = { external: [], consoleErrors: [], pageErrors: [] };
  await context.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith(base + '/')) return route.continue();
    log.external.push(u);
    return route.abort();
  });
  if (token) await context.addInitScript((t) => sessionStorage.setItem('cg.token', t), token);
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') log.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => log.pageErrors.push(String(e)));
  await page.goto(base + '/' + hash, { waitUntil: 'load' });
  await ready(page);
  return { context, page, log };
}

// No page errors, no external requests, no console errors but the expected
// number of failed loads (Chromium logs a 4xx fetch as "Failed to load resource").
export function assertClean(log, expectedStatusErrors = 0) {
  assert.deepEqual(log.pageErrors, [], 'page errors');
  assert.deepEqual(log.external, [], 'external requests');
  const other = log.consoleErrors.filter((m) => !/Failed to load resource: the server responded with a status of/.test(m));
  assert.deepEqual(other, [], 'console errors');
  assert.equal(log.consoleErrors.length - other.length, expectedStatusErrors, 'failed resource loads: ' + log.consoleErrors.join(' | '));
}
