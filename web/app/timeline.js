// timeline.js — the Timeline section: host spans/ops on the host clock and device
// intervals per device clock, each clock in its own panel with its own axis (the
// clocks are never aligned). Boxes come from GET /bundles/{id}/timeline, which
// merges a track to about px boxes for the requested window, so drawing costs
// the same for a 10,000- or a 1,000,000-record trace. Zoom: wheel, + / - keys,
// buttons; pan: drag, arrow keys; reset: 0 or Home. While a fetch for a new
// window is in flight the previous boxes are drawn at the new scale.
// Stats for tests and bench/web_timeline: window.CG_TIMELINE_STATS
//   {firstPaintMs (since the tab mounted), firstPaintSinceNavigationMs, frames: [ms per draw], fetches}.
import { getJson, query } from './api.js';
import { h, errorPanel, fmtNs } from './ui.js';

const LANE_H = 20, AXIS_H = 22, LABEL_W = 170;
const stats = window.CG_TIMELINE_STATS = window.CG_TIMELINE_STATS || { firstPaintMs: null, frames: [], fetches: 0, mountedAt: 0 };

export async function mountTimeline(pane, id) {
  stats.mountedAt = performance.now(); stats.firstPaintMs = null; stats.frames = []; stats.fetches = 0;
  pane.append(h('h2', null, 'Timeline'),
    h('p', { class: 'wa-note' }, 'Host spans and ops are on the host clock; device intervals are on each device\u2019s own clock. The clocks are separate and are never aligned: each has its own panel and axis. Zoom with the mouse wheel or the + and \u2212 keys, pan by dragging or with the arrow keys, reset with 0.'));
  const wrap = h('div', { class: 'wa-timeline' }, h('p', { class: 'wa-loading' }, 'Loading timeline\u2026'));
  pane.append(wrap);
  const px = Math.max(200, Math.round((pane.clientWidth || 1000) - LABEL_W));
  let first;
  try { first = await getJson('/bundles/' + id + '/timeline' + query({ clock: 'host', px })); stats.fetches++; } catch (e) {
    wrap.textContent = ''; wrap.append(errorPanel(e, 'Timeline')); return;
  }
  wrap.textContent = '';
  for (const c of first.clocks) {
    if (c.records === 0 && c.kind === 'host' && first.clocks.length > 1) continue;
    wrap.append(clockPanel(id, c, c.clock === first.clock ? first : null));
  }
}

function clockPanel(id, clock, initial) {
  const title = clock.kind === 'host' ? 'Host clock' : 'Device clock ' + clock.clock + ' (' + clock.devices.join(', ') + ')';
  const range = h('span', { class: 'wa-range', 'aria-live': 'polite' });
  const canvas = h('canvas', { class: 'wa-tl-canvas', tabindex: '0', role: 'img', 'aria-label': title + ' timeline; + and \u2212 zoom, arrow keys pan, 0 resets' });
  const panel = h('section', { class: 'wa-tl-panel', 'data-clock': clock.clock, 'aria-label': title },
    h('div', { class: 'wa-tl-head' }, h('h3', null, title), ' ',
      h('span', { class: 'wa-sub' }, clock.records.toLocaleString('en-US') + ' records'), ' ', range,
      h('span', { class: 'wa-tl-tools' },
        h('button', { type: 'button', 'data-action': 'zoom-in', 'aria-label': 'Zoom in', onclick: () => zoom(0.5, 0.5) }, '+'),
        h('button', { type: 'button', 'data-action': 'zoom-out', 'aria-label': 'Zoom out', onclick: () => zoom(2, 0.5) }, '\u2212'),
        h('button', { type: 'button', 'data-action': 'reset', onclick: () => reset() }, 'Reset'))),
    canvas);
  const full = { start: clock.min_ns, end: Math.max(clock.max_ns + 1, clock.min_ns + 1) };
  const view = { ...full };
  let data = initial && initial.start_ns <= view.start && initial.end_ns >= view.end ? initial : null;
  let inflight = false, pending = false, drawQueued = false, firstDone = false;

  function width() { return Math.max(100, Math.round(panel.clientWidth || 1000)); }
  function reset() { view.start = full.start; view.end = full.end; changed(); }
  function zoom(factor, at) {
    const span = view.end - view.start;
    let ns = Math.max(span * factor, 1000 > span ? span : 1000);
    ns = Math.min(ns, (full.end - full.start) * 1.0);
    const pivot = view.start + span * at;
    view.start = pivot - ns * at; view.end = view.start + ns;
    clamp(); changed();
  }
  function pan(frac) { const span = view.end - view.start; view.start += span * frac; view.end += span * frac; clamp(); changed(); }
  function clamp() {
    const span = view.end - view.start;
    if (view.start < full.start) { view.start = full.start; view.end = full.start + span; }
    if (view.end > full.end) { view.end = full.end; view.start = Math.max(full.start, full.end - span); }
  }
  function changed() {
    panel.dataset.startNs = String(Math.round(view.start));
    panel.dataset.endNs = String(Math.round(view.end));
    range.textContent = fmtNs(view.start - full.start) + ' \u2013 ' + fmtNs(view.end - full.start) + ' (window ' + fmtNs(view.end - view.start) + ')';
    queueDraw();
    const covered = data && data.start_ns <= view.start && data.end_ns >= view.end;
    const fine = data && (data.end_ns - data.start_ns) <= 3 * (view.end - view.start);
    if (!covered || !fine) fetchView();
  }
  async function fetchView() {
    if (inflight) { pending = true; return; }
    inflight = true;
    const span = view.end - view.start;
    const s = Math.max(full.start, Math.floor(view.start - span / 2));
    const e = Math.min(full.end, Math.ceil(view.end + span / 2));
    const px = Math.min(10000, Math.round((width() - LABEL_W) * (e - s) / span));
    try {
      const d = await getJson('/bundles/' + id + '/timeline' + query({ clock: clock.clock, start_ns: s, end_ns: Math.max(e, s + 1), px: Math.max(1, px) }));
      stats.fetches++;
      data = d;
      queueDraw();
    } catch (err) {
      panel.append(errorPanel(err, 'Timeline data'));
    } finally {
      inflight = false;
      if (pending) { pending = false; fetchView(); }
    }
  }
  function queueDraw() { if (!drawQueued) { drawQueued = true; requestAnimationFrame(() => { drawQueued = false; draw(); }); } }
  function draw() {
    if (!data) return;
    const t0 = performance.now();
    const W = width(), tracks = data.tracks;
    const H = AXIS_H + tracks.length * LANE_H + 4;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== W * dpr || canvas.height !== H * dpr) {
      canvas.width = W * dpr; canvas.height = H * dpr; canvas.style.width = W + 'px'; canvas.style.height = H + 'px';
    }
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#ffffff'; g.fillRect(0, 0, W, H);
    const x0 = LABEL_W, plotW = W - LABEL_W, span = view.end - view.start, k = plotW / span;
    // axis
    g.fillStyle = '#1f2933'; g.font = '11px system-ui, sans-serif'; g.textBaseline = 'middle';
    g.strokeStyle = '#9aa5b1'; g.beginPath();
    for (let i = 0; i <= 5; i++) {
      const x = x0 + plotW * i / 5;
      g.moveTo(x + 0.5, AXIS_H - 6); g.lineTo(x + 0.5, AXIS_H);
      const label = fmtNs(view.start - full.start + span * i / 5);
      g.textAlign = i === 0 ? 'left' : i === 5 ? 'right' : 'center';
      g.fillText(label, x, 8);
    }
    g.stroke();
    // lanes
    g.save();
    tracks.forEach((t, li) => {
      const y = AXIS_H + li * LANE_H;
      g.fillStyle = li % 2 ? '#f5f7fa' : '#ffffff'; g.fillRect(0, y, W, LANE_H);
      g.fillStyle = '#1f2933'; g.textAlign = 'left';
      g.fillText(t.label.length > 26 ? t.label.slice(0, 25) + '\u2026' : t.label, 4, y + LANE_H / 2);
    });
    g.beginPath(); g.rect(x0, AXIS_H, plotW, H - AXIS_H); g.clip();
    tracks.forEach((t, li) => {
      const y = AXIS_H + li * LANE_H + 2, bh = LANE_H - 4;
      const base = t.kind === 'device' ? '#2f6f9f' : t.kind === 'op' ? '#7a5195' : '#3d7a4f';
      const boxes = t.boxes;
      for (let i = 0; i < boxes.length; i++) {
        const b = boxes[i];
        if (b[1] < view.start || b[0] > view.end) continue;
        const bx = x0 + (b[0] - view.start) * k;
        const bw = Math.max(1, (b[1] - b[0]) * k);
        g.fillStyle = b[2] > 1 ? '#5c6b7a' : base;
        g.fillRect(bx, y, bw, bh);
        if (bw > 48) {
          const text = b[2] > 1 ? b[2].toLocaleString('en-US') + ' merged' : (b[3] || '');
          g.fillStyle = '#ffffff'; g.textAlign = 'left';
          g.fillText(text.length * 6 > bw ? text.slice(0, Math.max(1, Math.floor(bw / 6) - 1)) + '\u2026' : text, Math.max(bx, x0) + 3, y + bh / 2);
        }
      }
    });
    g.restore();
    const dt = performance.now() - t0;
    stats.frames.push(dt);
    if (!firstDone) {
      firstDone = true;
      if (stats.firstPaintMs === null) { stats.firstPaintMs = performance.now() - stats.mountedAt; stats.firstPaintSinceNavigationMs = performance.now(); performance.mark('cg-timeline-first-paint'); }
    }
    panel.dataset.drawn = String(Number(panel.dataset.drawn || 0) + 1);
  }

  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    const at = Math.min(1, Math.max(0, (e.clientX - r.left - LABEL_W) / (r.width - LABEL_W)));
    zoom(Math.pow(1.0015, e.deltaY), at);
  }, { passive: false });
  let drag = null;
  canvas.addEventListener('pointerdown', (e) => { drag = { x: e.clientX, start: view.start, end: view.end }; canvas.setPointerCapture(e.pointerId); });
  canvas.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const span = drag.end - drag.start, dx = (e.clientX - drag.x) / Math.max(1, width() - LABEL_W) * span;
    view.start = drag.start - dx; view.end = drag.end - dx; clamp(); changed();
  });
  canvas.addEventListener('pointerup', () => { drag = null; });
  canvas.addEventListener('keydown', (e) => {
    const m = { '+': () => zoom(0.5, 0.5), '=': () => zoom(0.5, 0.5), '-': () => zoom(2, 0.5), ArrowLeft: () => pan(-0.1), ArrowRight: () => pan(0.1), '0': reset, Home: reset };
    if (m[e.key]) { e.preventDefault(); m[e.key](); }
  });
  new ResizeObserver(() => queueDraw()).observe(panel);
  changed();
  return panel;
}
