// Headless Chromium checks of the offline viewer (viewer/5) rendered from the fixture payloads.
// Run through tests/integration/test_viewer_browser.sh, which renders the HTML files and sets:
//   CG_VIEWER_SAMPLE_HTML, CG_VIEWER_FAILED_HTML  rendered fixture payloads (opened via file://)
//   CG_VIEWER_REAL_HTML                            `candle-graph view` of the spec §15 illustrative trace
//   CG_SCREENSHOT_DIR                              where viewer-*.png are written
//   CG_CHROMIUM                                    browser binary (default /usr/bin/chromium)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(root, 'web', 'package.json'));
const { chromium } = require('playwright-core');

const sampleHtml = process.env.CG_VIEWER_SAMPLE_HTML;
const failedHtml = process.env.CG_VIEWER_FAILED_HTML;
const realHtml = process.env.CG_VIEWER_REAL_HTML;
const bigHtml = process.env.CG_VIEWER_BIG_HTML;
const shotDir = process.env.CG_SCREENSHOT_DIR || join(root, 'build', 'screenshots');
assert.ok(sampleHtml && failedHtml && realHtml, 'CG_VIEWER_SAMPLE_HTML, CG_VIEWER_FAILED_HTML and CG_VIEWER_REAL_HTML must be set');
mkdirSync(shotDir, { recursive: true });

let browser;
before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CG_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--font-render-hinting=none'],
  });
});
after(async () => { if (browser) await browser.close(); });

// Opens a rendered viewer with every request routed: file: URLs continue, anything else is
// recorded and aborted. Console errors, page errors and dialogs are recorded too.
async function open(htmlPath, viewport = { width: 1280, height: 720 }) {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const log = { external: [], requests: [], consoleErrors: [], pageErrors: [], dialogs: [] };
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:')) return route.continue();
    log.external.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('request', (r) => log.requests.push(r.url()));
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') log.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => log.pageErrors.push(String(e)));
  page.on('dialog', (d) => { log.dialogs.push(d.message()); d.dismiss(); });
  const url = pathToFileURL(htmlPath).href;
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('[role="tablist"]');
  return { context, page, log, url };
}

function assertClean(log, url) {
  assert.deepEqual(log.pageErrors, [], 'page errors');
  assert.deepEqual(log.consoleErrors, [], 'console errors/warnings');
  assert.deepEqual(log.dialogs, [], 'no dialogs (no script injection)');
  assert.deepEqual(log.external, [], 'no non-file requests');
  for (const r of log.requests) assert.ok(r === url || r.startsWith('blob:'), `unexpected request ${r}`);
}

async function selectedTab(page) {
  return page.$eval('[role="tab"][aria-selected="true"]', (t) => t.dataset.tab);
}
async function focusedTab(page) {
  return page.evaluate(() => document.activeElement && document.activeElement.dataset.tab);
}
async function visiblePanel(page) {
  return page.$$eval('[role="tabpanel"]', (ps) => ps.filter((p) => !p.hidden).map((p) => p.dataset.panel));
}
async function panelText(page, id) {
  return page.$eval(`[data-panel="${id}"]`, (p) => p.innerText);
}
async function shot(page, name) {
  await page.screenshot({ path: join(shotDir, `viewer-${name}.png`) });
}

test('sample payload: evidence first, every tab by keyboard and click, numbers on screen', async () => {
  const { context, page, log, url } = await open(sampleHtml);
  try {
    assert.equal(await page.title(), 'toy::train::update \u2014 candle-graph viewer');
    assert.equal(await selectedTab(page), 'evidence');
    assert.deepEqual(await visiblePanel(page), ['evidence']);
    assert.equal(await page.$eval('.cg-header [data-health]', (e) => e.dataset.health), 'complete');
    const ev = await panelText(page, 'evidence');
    assert.match(ev, /2\.750 ms/);
    assert.match(ev, /2,750,000 ns/);            // outer wall time, exact
    assert.match(ev, /589,828 bytes/);           // logical peak, exact
    assert.match(ev, /Measured-scope host time/); // capability matrix rows
    assert.equal(await page.$$eval('.cg-table[aria-label="Capability matrix"] tbody tr', (r) => r.length), 11);
    assert.match(ev, /largest_nsight_kernel_total/);
    assert.match(ev, /toy\.linear\.weight/);
    assert.match(ev, /run-4242-1730000000123456789/);
    await shot(page, 'evidence');

    // tablist semantics
    const tabs = await page.$$eval('[role="tab"]', (ts) => ts.map((t) => ({
      id: t.dataset.tab, controls: t.getAttribute('aria-controls'), tabindex: t.getAttribute('tabindex') })));
    assert.deepEqual(tabs.map((t) => t.id), ['evidence', 'trace', 'span_costs', 'memory', 'gpu']);
    assert.deepEqual(tabs.map((t) => t.tabindex), ['0', '-1', '-1', '-1', '-1']);
    for (const t of tabs) assert.equal(await page.$eval(`#${t.controls}`, (p) => p.getAttribute('role')), 'tabpanel');

    // keyboard: ArrowRight through every tab
    await page.focus('[role="tab"][data-tab="evidence"]');
    await page.keyboard.press('ArrowRight');
    assert.equal(await selectedTab(page), 'trace');
    assert.equal(await focusedTab(page), 'trace');
    assert.deepEqual(await visiblePanel(page), ['trace']);
    await page.waitForSelector('.cg-node');
    assert.equal(await page.$$eval('.cg-node', (n) => n.length), 24);
    assert.equal(await page.$$eval('.cg-edges path', (n) => n.length), 32);
    assert.equal(await page.$$eval('.cg-tree-item', (n) => n.length), 7);
    await shot(page, 'trace');

    await page.keyboard.press('ArrowRight');
    assert.equal(await selectedTab(page), 'span_costs');
    const costs = await panelText(page, 'span_costs');
    assert.match(costs, /toy::train::update/);
    assert.match(costs, /Device busy cuda:0 · cuda-event-0/);
    assert.match(costs, /2\.410 ms/);  // s2 device busy on its own clock
    const firstRow = await page.$eval('[data-panel="span_costs"] tbody tr', (r) => r.innerText);
    assert.match(firstRow, /toy::train::update/); // sorted by host total desc
    await shot(page, 'span-costs');

    await page.keyboard.press('ArrowRight');
    assert.equal(await selectedTab(page), 'memory');
    const mem = await panelText(page, 'memory');
    assert.match(mem, /589,828 bytes at 2,050,000 ns/);
    assert.match(mem, /Allocations\s*5/i);
    assert.match(mem, /Frees\s*5/i);
    assert.match(mem, /gradient\s*512 KiB · 524,288 B/);
    assert.match(mem, /Timeline \(last 10 of 10 points\)/i);
    assert.match(mem, /1\.13 GiB/); // physical peak used 1,207,959,552
    assert.equal(await page.$$eval('[data-panel="memory"] .cg-live-line', (n) => n.length), 1);
    await shot(page, 'memory');

    await page.keyboard.press('ArrowRight');
    assert.equal(await selectedTab(page), 'gpu');
    const gpu = await panelText(page, 'gpu');
    assert.match(gpu, /GPU evidence correlated and bound to this run/);
    assert.match(gpu, /ampere_sgemm_128x64_tn/);
    assert.ok(gpu.includes('void gelu_kernel<float>(float*, float const*, int)'), 'kernel name with <> shown verbatim');
    assert.match(gpu, /nsight\/report\.nsys-rep/);
    assert.match(gpu, /3f0c1b8e9d2a4c6b7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d/);
    for (const title of ['Phase GPU attribution (3)', 'NVTX projected ranges (3)', 'CUDA kernels (6)', 'CUDA runtime calls (3)',
      'GPU memory operations (2)', 'GPU timeline (7)']) assert.ok(gpu.includes(title), title);
    assert.match(gpu, /clocks remain separate/);
    await shot(page, 'gpu');

    // wrap-around, Home, End, ArrowLeft
    await page.keyboard.press('ArrowRight');
    assert.equal(await selectedTab(page), 'evidence');
    await page.keyboard.press('End');
    assert.equal(await selectedTab(page), 'gpu');
    assert.equal(await focusedTab(page), 'gpu');
    await page.keyboard.press('Home');
    assert.equal(await selectedTab(page), 'evidence');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await selectedTab(page), 'gpu');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await selectedTab(page), 'memory');
    assert.deepEqual(await page.$$eval('[role="tab"]', (ts) => ts.map((t) => t.getAttribute('tabindex'))), ['-1', '-1', '-1', '0', '-1']);

    // click every tab
    for (const id of ['evidence', 'trace', 'span_costs', 'memory', 'gpu', 'evidence']) {
      await page.click(`[role="tab"][data-tab="${id}"]`);
      assert.equal(await selectedTab(page), id);
      assert.deepEqual(await visiblePanel(page), [id]);
    }
    assertClean(log, url);
  } finally {
    await context.close();
  }
});

test('trace tab: search, span tree, inspector, zoom, heat and SVG export', async () => {
  const { context, page, log, url } = await open(sampleHtml);
  try {
    await page.click('[role="tab"][data-tab="trace"]');
    await page.waitForSelector('.cg-node');
    await page.fill('[data-panel="trace"] input[type="search"]', 'gelu');
    assert.equal(await page.$eval('.cg-match-info', (e) => e.textContent), '4 matches');
    assert.equal(await page.$$eval('.cg-node.cg-hit', (n) => n.length), 4);
    await page.fill('[data-panel="trace"] input[type="search"]', '');
    assert.equal(await page.$$eval('.cg-node.cg-dim', (n) => n.length), 0);

    await page.click('.cg-tree-item[data-id="s4"]');
    const insp = await page.$eval('.cg-inspector', (e) => e.innerText);
    assert.match(insp, /toy\/update-000000000003\/backward/);
    assert.match(insp, /1,000,000 ns/);
    assert.match(insp, /cuda:0 · cuda-event-0/);
    assert.match(insp, /786\.00 µs/);
    assert.equal(await page.$eval('.cg-node.cg-selected', (n) => n.dataset.node), 's4');

    await page.click('.cg-node[data-node="s6/op/0"]');
    assert.match(await page.$eval('.cg-inspector', (e) => e.innerText), /matmul[\s\S]*\[32, 512\]/);

    const before = await page.$eval('.cg-viewport', (g) => g.getAttribute('transform'));
    await page.click('button[aria-label="Zoom in"]');
    const zoomed = await page.$eval('.cg-viewport', (g) => g.getAttribute('transform'));
    assert.notEqual(zoomed, before);
    await page.click('button[aria-label="Reset zoom to 100%"]');
    assert.match(await page.$eval('.cg-viewport', (g) => g.getAttribute('transform')), /translate\(0\.0,0\.0\) scale\(1\.0000\)/);
    await page.click('button[aria-label="Fit graph to view"]');

    await page.selectOption('[data-panel="trace"] select', 'memory');
    assert.match(await page.$eval('.cg-legend', (e) => e.innerText), /576 KiB/);
    await page.selectOption('[data-panel="trace"] select', 'self');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('button[aria-label="Download the graph as SVG"]'),
    ]);
    assert.equal(download.suggestedFilename(), 'candle-graph-trace.svg');
    const path = await download.path();
    const { readFileSync } = await import('node:fs');
    const svg = readFileSync(path, 'utf8');
    assert.match(svg, /^<svg[^>]*viewBox="0 0 \d+ \d+"/);
    assert.match(svg, /Linear::forward|Linear/);
    assert.equal((svg.match(/data-node=/g) || []).length, 24);
    assertClean(log, url);
  } finally {
    await context.close();
  }
});

test('narrow window: no horizontal page overflow, tabs reachable', async () => {
  const { context, page, log, url } = await open(sampleHtml, { width: 420, height: 860 });
  try {
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(await overflow() <= 1, 'evidence fits the width');
    await shot(page, 'narrow-evidence');
    for (const id of ['trace', 'span_costs', 'memory', 'gpu']) {
      await page.click(`[role="tab"][data-tab="${id}"]`);
      assert.ok(await overflow() <= 1, `${id} fits the width`);
    }
    await page.click('[role="tab"][data-tab="trace"]');
    await shot(page, 'narrow-trace');
    assertClean(log, url);
  } finally {
    await context.close();
  }
});

test('row limits via CG.app.mount (web-app path): 250 GPU rows, last 100 memory points, large graphs', async () => {
  const { context, page, log, url } = await open(sampleHtml);
  try {
    await page.evaluate(() => {
      const p = JSON.parse(document.getElementById('cg-payload').textContent);
      const g = p.views.gpu;
      g.kernels = Array.from({ length: 300 }, (_, i) => ({ name: `kernel_${i}`, total_ns: 1000 + i, count: 1, average_ns: 1000 + i, minimum_ns: 1000 + i, maximum_ns: 1000 + i }));
      g.gpu_timeline = Array.from({ length: 260 }, (_, i) => ({ name: `k${i}`, kind: 'gpu_operation', start_ns: i * 10, duration_ns: 5 }));
      const lg = p.views.memory.logical;
      lg.timeline = Array.from({ length: 150 }, (_, i) => ({ timestamp_ns: 1000 * (i + 1), live_bytes: 64 * (i % 7), live_bytes_by_device: {}, live_bytes_by_category: {} }));
      // a wide graph: 700 tensor nodes hanging off s3 (tensors hidden by default above 600 nodes)
      for (let i = 0; i < 700; i++) p.views.trace.nodes.push({ id: `tensor/T${i}`, label: `t${i}`, short_label: `t${i}`, kind: 'tensor', parent_id: 's3', start_ns: 0, host_self_time_ns: 0, host_total_time_ns: 0, host_self_ratio: 0, device_timings: [] });
      window.CG.app.mount(document.getElementById('cg-app'), p);
    });
    await page.click('[role="tab"][data-tab="gpu"]');
    assert.equal(await page.$$eval('table[aria-label="CUDA kernels"] tbody tr', (r) => r.length), 250);
    assert.equal(await page.$$eval('table[aria-label="GPU timeline"] tbody tr', (r) => r.length), 250);
    const gpu = await panelText(page, 'gpu');
    assert.match(gpu, /CUDA kernels \(300\)/);
    assert.match(gpu, /Showing 250 of 300 rows/);
    await page.click('[role="tab"][data-tab="memory"]');
    assert.equal(await page.$$eval('table[aria-label="Logical memory timeline"] tbody tr', (r) => r.length), 100);
    assert.equal(await page.$eval('table[aria-label="Logical memory timeline"] tbody tr td', (c) => c.textContent), '51,000');
    assert.match(await panelText(page, 'memory'), /last 100 of 150 points/i);
    await page.click('[role="tab"][data-tab="trace"]');
    await page.waitForSelector('.cg-node');
    assert.equal(await page.$$eval('.cg-node', (n) => n.length), 14); // 7 spans + 7 ops; tensors hidden
    assert.match(await page.$eval('.cg-graph-notice', (e) => e.textContent), /Tensors are hidden by default/);
    assertClean(log, url);
  } finally {
    await context.close();
  }
});

test('bounded viewer of a large trace: every tab renders and states what was cut', async () => {
  const { context, page, log, url } = await open(bigHtml);
  try {
    const cut = (id) => page.$$eval('[data-panel="' + id + '"] .cg-cut li', (l) => l.map((x) => x.dataset.truncated + ' | ' + x.textContent));
    await page.click('[role="tab"][data-tab="trace"]');
    await page.waitForSelector('[data-panel="trace"] .cg-cut');
    const trace = await cut('trace');
    assert.ok(trace.some((l) => /^views\.trace\.nodes \| nodes: [\d,]+ of [\d,]+ shown \(heaviest by host total time/.test(l)), trace.join('\n'));
    await page.click('[role="tab"][data-tab="span_costs"]');
    assert.ok((await cut('span_costs')).some((l) => l.startsWith('views.span_costs.items')));
    await page.click('[role="tab"][data-tab="memory"]');
    assert.ok((await cut('memory')).some((l) => /logical \u203a timeline: [\d,]+ of [\d,]+ shown \(downsampled/.test(l)));
    await page.click('[role="tab"][data-tab="gpu"]');
    await page.click('[role="tab"][data-tab="evidence"]');
    await page.click('[role="tab"][data-tab="trace"]');
    await shot(page, 'bounded');
    assertClean(log, url);
  } finally {
    await context.close();
  }
});

test('structurally invalid capture: invalid badge, Evidence first even when default_view names another tab', async () => {
  const { context, page, log, url } = await open(sampleHtml);
  try {
    await page.evaluate(() => {
      const p = JSON.parse(document.getElementById('cg-payload').textContent);
      p.summary.structurally_valid = false;
      p.summary.outer_wall_time_ns = null;
      p.default_view = 'trace';
      p.views.trace = { nodes: [], edges: [] };
      p.views.span_costs = { items: [] };
      p.span_tree = [];
      p.views.evidence.health.structurally_valid = false;
      p.views.evidence.health.issues = [{ severity: 'error', code: 'root_count', message: 'expected exactly one root span, found 2' }];
      window.CG.app.mount(document.getElementById('cg-app'), p);
    });
    assert.equal(await selectedTab(page), 'evidence');
    assert.equal(await page.$eval('.cg-header [data-health]', (e) => e.dataset.health), 'invalid');
    const ev = await panelText(page, 'evidence');
    assert.match(ev, /Structurally invalid/);
    assert.match(ev, /root_count/);
    await page.click('[role="tab"][data-tab="trace"]');
    assert.match(await panelText(page, 'trace'), /No graph: the trace is structurally invalid/);
    assertClean(log, url);
  } finally {
    await context.close();
  }
});

test('real pipeline: candle-graph view of the illustrative trace renders every tab', async () => {
  const { context, page, log, url } = await open(realHtml);
  try {
    assert.equal(await selectedTab(page), 'evidence');
    assert.equal(await page.$eval('.cg-header [data-health]', (e) => e.dataset.health), 'complete');
    assert.match(await panelText(page, 'evidence'), /950 ns/); // outer wall (spec §15)
    await page.click('[role="tab"][data-tab="trace"]');
    await page.waitForSelector('.cg-node');
    const ids = await page.$$eval('.cg-node', (n) => n.map((g) => g.dataset.node).sort());
    for (const id of ['s1', 's2', 's3', 's4', 's5', 's3/op/0', 'tensor/TensorId(1)', 'tensor/TensorId(2)', 'tensor/TensorId(3)'])
      assert.ok(ids.includes(id), `graph node ${id}`);
    await page.click('[role="tab"][data-tab="span_costs"]');
    assert.match(await panelText(page, 'span_costs'), /Device busy cuda:0 · cuda-event-0/);
    await page.click('[role="tab"][data-tab="memory"]');
    assert.match(await panelText(page, 'memory'), /512 bytes at 210 ns/);
    await page.click('[role="tab"][data-tab="gpu"]');
    assert.match(await panelText(page, 'gpu'), /Nsight capture was not requested/);
    assertClean(log, url);
  } finally {
    await context.close();
  }
});

test('failed payload: opens on Evidence, empty graph views, unknown memory, GPU unavailable', async () => {
  const { context, page, log, url } = await open(failedHtml);
  try {
    assert.equal(await selectedTab(page), 'evidence');
    assert.equal(await page.$eval('.cg-header [data-health]', (e) => e.dataset.health), 'failed');
    const ev = await panelText(page, 'evidence');
    assert.match(ev, /Failed capture/);
    assert.match(ev, /capture_failed/);
    assert.match(ev, /CUDA error: out of memory/);
    assert.match(ev, /No findings/);
    assert.ok(ev.includes("<script>alert('x')</script>"), 'hostile tag value is shown as text');
    assert.match(await page.$eval('.cg-header', (e) => e.innerText), /Outer wall \(host\)\s*unknown/i);
    await shot(page, 'failed-evidence');

    await page.click('[role="tab"][data-tab="trace"]');
    assert.match(await panelText(page, 'trace'), /No graph: this capture failed/);
    assert.equal(await page.$$eval('.cg-node', (n) => n.length), 0);
    assert.equal(await page.$$eval('[data-panel="trace"] svg', (n) => n.length), 0);
    await page.click('[role="tab"][data-tab="span_costs"]');
    assert.match(await panelText(page, 'span_costs'), /No graph: this capture failed/);
    assert.equal(await page.$$eval('[data-panel="span_costs"] table', (n) => n.length), 0);
    await page.click('[role="tab"][data-tab="memory"]');
    const mem = await panelText(page, 'memory');
    assert.match(mem, /Logical memory unknown/);
    assert.match(mem, /zero is not inferred/);
    assert.match(mem, /Physical memory unknown/);
    await page.click('[role="tab"][data-tab="gpu"]');
    const gpu = await panelText(page, 'gpu');
    assert.match(gpu, /GPU evidence unavailable/);
    assert.match(gpu, /Nsight capture was not requested/);
    assert.equal(await page.$$eval('[data-panel="gpu"] table', (n) => n.length), 0);
    await shot(page, 'failed-gpu');
    assertClean(log, url);
  } finally {
    await context.close();
  }
});
