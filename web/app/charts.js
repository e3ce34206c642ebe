// charts.js — small SVG line charts (series over capture steps). Text only, no HTML.
import { h, s, isNum, fmtNum } from './ui.js';

const COLORS = ['#2f6f9f', '#b35900', '#3d7a4f', '#7a5195', '#a23b72', '#52606d', '#0f7b8a', '#8a6d0f'];

/* series: [{name, points: [{x, y}]}]; y null points are skipped (gaps). */
export function lineChart(title, series, { fmtY = (v) => fmtNum(v), xLabel = 'capture step' } = {}) {
  const pts = series.flatMap((x) => x.points.filter((p) => isNum(p.y)));
  const fig = h('figure', { class: 'wa-figure' }, h('figcaption', null, title));
  if (!pts.length) { fig.append(h('p', { class: 'wa-empty' }, 'No values.')); return fig; }
  let x0 = Math.min(...pts.map((p) => p.x)), x1 = Math.max(...pts.map((p) => p.x));
  let y0 = Math.min(...pts.map((p) => p.y)), y1 = Math.max(...pts.map((p) => p.y));
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
  const W = 560, H = 220, L = 80, R = 12, T = 10, B = 34;
  const X = (v) => L + (v - x0) / (x1 - x0) * (W - L - R), Y = (v) => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'wa-chart', role: 'img', 'aria-label': title });
  svg.append(s('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#9aa5b1' }), s('line', { x1: L, x2: L, y1: T, y2: H - B, stroke: '#9aa5b1' }));
  for (let i = 0; i <= 3; i++) {
    const v = y0 + (y1 - y0) * i / 3;
    svg.append(s('text', { x: L - 6, y: Y(v) + 4, 'font-size': 11, 'text-anchor': 'end', fill: '#52606d' }, fmtY(v)));
  }
  const xs = [...new Set(pts.map((p) => p.x))].sort((a, b) => a - b);
  const step = Math.max(1, Math.ceil(xs.length / 8));
  xs.forEach((v, i) => { if (i % step === 0) svg.append(s('text', { x: X(v), y: H - B + 16, 'font-size': 11, 'text-anchor': 'middle', fill: '#52606d' }, String(v))); });
  svg.append(s('text', { x: (L + W - R) / 2, y: H - 4, 'font-size': 11, 'text-anchor': 'middle', fill: '#52606d' }, xLabel));
  const legend = h('ul', { class: 'wa-legend' });
  series.forEach((se, i) => {
    const c = COLORS[i % COLORS.length];
    const good = se.points.filter((p) => isNum(p.y)).sort((a, b) => a.x - b.x);
    if (good.length > 1) svg.append(s('polyline', { points: good.map((p) => X(p.x) + ',' + Y(p.y)).join(' '), fill: 'none', stroke: c, 'stroke-width': 2 }));
    good.forEach((p) => svg.append(s('circle', { cx: X(p.x), cy: Y(p.y), r: 3.5, fill: c }, s('title', null, se.name + ' @ ' + p.x + ': ' + fmtY(p.y)))));
    legend.append(h('li', null, h('span', { class: 'wa-swatch', style: 'background:' + c }), se.name));
  });
  fig.append(svg);
  if (series.length > 1 || series[0].name) fig.append(legend);
  return fig;
}
