// bench.mjs — drives the Timeline tab for each bundle in CG_BENCH_IDS ("N=id …"):
//   first_paint_cold_ms  tab opened right after upload (the server builds its index)
//   first_paint_ms       median of 3 later opens (index cached on the server)
//   page_load_to_first_paint_ms  the same measured from navigation start (includes the
//                        bundle summary and the viewer payload the section tabs need)
//   frame_ms             draw time per frame while zooming in 40 wheel steps and out again
//                        (p50/p95/max), and the rAF interval p95 over the same period
// CG_BENCH_MODE=restart: one open per bundle only (run.sh uses it after restarting the
// server, when no timeline index is cached)
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { chromium } = createRequire(join(root, 'web', 'package.json'))('playwright-core');
const URL0 = process.env.CG_WEB_URL, TOKEN = process.env.CG_WEB_TOKEN;
const ids = (process.env.CG_BENCH_IDS || '').trim().split(/\s+/).map((x) => x.split('='));
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : null; };
const r1 = (v) => v === null ? null : Math.round(v * 100) / 100;

const browser = await chromium.launch({ executablePath: process.env.CG_CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
async function openTimeline(id) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  await ctx.addInitScript((t) => sessionStorage.setItem('cg.token', t), TOKEN);
  const page = await ctx.newPage();
  await page.goto(URL0 + '/#/bundle/' + id + '?tab=timeline');
  await page.waitForFunction(() => window.CG_TIMELINE_STATS && window.CG_TIMELINE_STATS.firstPaintMs !== null, null, { timeout: 600000 });
  return { ctx, page, firstPaint: await page.evaluate(() => window.CG_TIMELINE_STATS.firstPaintMs), sinceNav: await page.evaluate(() => window.CG_TIMELINE_STATS.firstPaintSinceNavigationMs) };
}
const report = { bench: 'web_timeline', viewport: '1280x720', sizes: [] };
if (process.env.CG_BENCH_MODE === 'restart') {
  for (const [n, id] of ids) {
    const o = await openTimeline(id);
    report.sizes.push({ records: Number(n), first_paint_ms: r1(o.firstPaint), page_load_to_first_paint_ms: r1(o.sinceNav) });
    await o.ctx.close();
  }
  await browser.close();
  console.log(JSON.stringify(report, null, 2));
  process.exit(0);
}
for (const [n, id] of ids) {
  const cold = await openTimeline(id);
  await cold.ctx.close();
  const warm = [], nav = [];
  let last;
  for (let i = 0; i < 3; i++) { last = await openTimeline(id); warm.push(last.firstPaint); nav.push(last.sinceNav); if (i < 2) await last.ctx.close(); }
  const { page, ctx } = last;
  await page.waitForSelector('.wa-tl-panel[data-clock=host][data-drawn]');
  const box = await page.locator('.wa-tl-panel[data-clock=host] canvas').boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
  await page.evaluate(() => {
    window.CG_TIMELINE_STATS.frames = [];
    const iv = window.__rafIntervals = []; let prev = performance.now();
    const loop = (t) => { iv.push(t - prev); prev = t; if (!window.__rafStop) requestAnimationFrame(loop); };
    requestAnimationFrame(loop);
  });
  for (let i = 0; i < 40; i++) { await page.mouse.wheel(0, -200); await page.waitForTimeout(16); }
  for (let i = 0; i < 40; i++) { await page.mouse.wheel(0, 200); await page.waitForTimeout(16); }
  await page.waitForTimeout(300);
  const { frames, raf, fetches } = await page.evaluate(() => { window.__rafStop = true; return { frames: window.CG_TIMELINE_STATS.frames, raf: window.__rafIntervals.slice(1), fetches: window.CG_TIMELINE_STATS.fetches }; });
  await ctx.close();
  report.sizes.push({ records: Number(n), first_paint_cold_ms: r1(cold.firstPaint), first_paint_ms: r1(q(warm, 0.5)), page_load_to_first_paint_ms: r1(q(nav, 0.5)), page_load_to_first_paint_cold_ms: r1(cold.sinceNav),
    frames: frames.length, frame_ms: { p50: r1(q(frames, 0.5)), p95: r1(q(frames, 0.95)), max: r1(Math.max(...frames)) },
    raf_interval_ms_p95: r1(q(raf, 0.95)), lod_fetches: fetches });
}
await browser.close();
if (report.sizes.length === 2) {
  const [a, b] = report.sizes;
  report.ratio_large_to_small = { first_paint: r1(b.first_paint_ms / a.first_paint_ms), frame_p95: r1(b.frame_ms.p95 / a.frame_ms.p95) };
}
console.log(JSON.stringify(report, null, 2));
