// Headless Chromium check that uploaded HTML never runs with the app's origin
// (issue 14, security item): GET /bundles/{id}/viewer and any .html under /files
// are served with "Content-Security-Policy: sandbox allow-scripts …" (an opaque
// origin), so a script inside an uploaded page cannot read the app's token in
// sessionStorage, nor localStorage or cookies, of the origin that serves it.
// Run through tests/integration/test_server_html_sandbox.sh, which sets:
//   CG_WEB_URL, CG_WEB_TOKEN   server and a read token
//   CG_SANDBOX_ID              bundle whose viewer.html and probe.html read storage
//   CG_CHROMIUM                browser binary (default /usr/bin/chromium)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(root, 'web', 'package.json'));
const { chromium } = require('playwright-core');
const env = (k) => process.env[k] || '';
const URL0 = env('CG_WEB_URL'), TOKEN = env('CG_WEB_TOKEN'), ID = env('CG_SANDBOX_ID');
assert.ok(URL0 && TOKEN && ID, 'CG_WEB_URL, CG_WEB_TOKEN and CG_SANDBOX_ID must be set');

let browser;
before(async () => {
  browser = await chromium.launch({ executablePath: env('CG_CHROMIUM') || '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
});
after(async () => { if (browser) await browser.close(); });

for (const path of ['viewer', 'files/viewer.html', 'files/probe.html']) {
  test(`uploaded /bundles/{id}/${path} cannot read the app's token or storage`, async () => {
    const context = await browser.newContext();
    const external = [];
    await context.route('**/*', (route) => {
      const u = route.request().url();
      if (u.startsWith(URL0 + '/')) return route.continue();
      external.push(u);
      return route.abort();
    });
    const page = await context.newPage();
    // the app's origin holds the token (as the web app keeps it) and a localStorage entry
    await page.goto(URL0 + '/', { waitUntil: 'load' });
    await page.evaluate((t) => { sessionStorage.setItem('cg.token', t); localStorage.setItem('cg.probe', 'local-secret'); document.cookie = 'cg_probe=cookie-secret; path=/'; }, TOKEN);
    // the uploaded page, opened in the same tab on the same server (token sent as the app would)
    await page.setExtraHTTPHeaders({ Authorization: 'Bearer ' + TOKEN });
    const resp = await page.goto(URL0 + '/bundles/' + ID + '/' + path, { waitUntil: 'load' });
    assert.equal(resp.status(), 200);
    await page.waitForSelector('#probe-result[data-done="1"]');
    const seen = JSON.parse(await page.textContent('#probe-result'));
    assert.equal(seen.ran, true, 'the uploaded script ran (sandbox allows scripts)');
    assert.equal(seen.origin, 'null', 'opaque origin');
    assert.ok(!JSON.stringify(seen).includes(TOKEN), 'the token is not readable: ' + JSON.stringify(seen));
    assert.ok(!JSON.stringify(seen).includes('local-secret'), 'localStorage is not readable');
    assert.ok(!JSON.stringify(seen).includes('cookie-secret'), 'cookies are not readable');
    assert.match(seen.session, /^denied:/);
    assert.match(seen.local, /^denied:/);
    assert.deepEqual(external, [], 'no request leaves the server');
    const csp = resp.headers()['content-security-policy'] || '';
    assert.match(csp, /sandbox allow-scripts/);
    assert.match(csp, /frame-ancestors 'none'/);
    // and the app's own origin still has its token (nothing was cleared or overwritten)
    await page.goto(URL0 + '/', { waitUntil: 'load' });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('cg.token')), TOKEN);
    await context.close();
  });
}
