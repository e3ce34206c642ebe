/* graph.js — call/data graph layout (dagre) and SVG drawing for the Trace tab.
 * CG.graph.layout(nodes, edges, opts) -> {width, height, nodes: Map id -> {x, y, w, h, node},
 *   edges: [{edge, points}]}; CG.graph.draw(layout, opts) -> SVG <g>.
 * Shapes carry presentation attributes (not CSS classes) so an exported SVG renders alone.
 * Only host-clock quantities are encoded; device clocks are never placed on an axis. */
(function (CG) {
  'use strict';
  var U = CG.util;

  var KIND_STROKE = { root: '#1e293b', 'function': '#334155', module: '#6d28d9', op: '#0369a1', tensor: '#047857', other: '#64748b' };
  /* Light-to-warm heat ramp; every stop keeps dark text readable (contrast >= 4.5). */
  var HEAT = ['#f1f5f9', '#fef9c3', '#fde68a', '#fdba74', '#fca5a5'];

  function heatColor(t) {
    if (!U.isNum(t) || t <= 0) return HEAT[0];
    if (t >= 1) return HEAT[HEAT.length - 1];
    var x = t * (HEAT.length - 1), i = Math.floor(x), f = x - i;
    return mix(HEAT[i], HEAT[i + 1], f);
  }
  function mix(a, b, f) {
    var pa = parseInt(a.slice(1), 16), pb = parseInt(b.slice(1), 16);
    var r = Math.round(((pa >> 16) & 255) * (1 - f) + ((pb >> 16) & 255) * f);
    var g = Math.round(((pa >> 8) & 255) * (1 - f) + ((pb >> 8) & 255) * f);
    var bl = Math.round((pa & 255) * (1 - f) + (pb & 255) * f);
    return '#' + ((1 << 24) | (r << 16) | (g << 8) | bl).toString(16).slice(1);
  }

  function nodeSize(n) {
    var label = n.display || n.short_label || U.shortLabel(n.label) || n.id;
    var chars = Math.min(Math.max(String(label).length, 8), 34);
    var w = Math.round(chars * 7.2 + 28);
    if (n.kind !== 'tensor') w = Math.max(w, 160); /* room for the "time · self %" line */
    return { w: w, h: n.kind === 'tensor' ? 34 : 44 };
  }

  function layout(nodes, edges, opts) {
    opts = opts || {};
    var g = new window.dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: opts.rankdir || 'TB', nodesep: 18, ranksep: 40, edgesep: 10, marginx: 20, marginy: 20 });
    g.setDefaultEdgeLabel(function () { return {}; });
    var byId = new Map();
    nodes.forEach(function (n) {
      var sz = nodeSize(n);
      byId.set(n.id, n);
      g.setNode(n.id, { width: sz.w, height: sz.h });
    });
    var kept = [];
    edges.forEach(function (e) {
      if (!byId.has(e.from) || !byId.has(e.to) || e.from === e.to) return;
      g.setEdge(e.from, e.to, { weight: e.kind === 'call' ? 2 : 1, minlen: 1 }, e.id);
      kept.push(e);
    });
    window.dagre.layout(g);
    var out = { width: g.graph().width || 0, height: g.graph().height || 0, nodes: new Map(), edges: [] };
    g.nodes().forEach(function (id) {
      var p = g.node(id);
      out.nodes.set(id, { x: p.x, y: p.y, w: p.width, h: p.height, node: byId.get(id) });
    });
    kept.forEach(function (e) {
      var p = g.edge(e.from, e.to, e.id);
      out.edges.push({ edge: e, points: p && p.points ? p.points : [] });
    });
    return out;
  }

  function pathFor(points) {
    if (!points.length) return '';
    var d = 'M' + points[0].x.toFixed(1) + ',' + points[0].y.toFixed(1);
    if (points.length === 2) return d + 'L' + points[1].x.toFixed(1) + ',' + points[1].y.toFixed(1);
    for (var i = 1; i < points.length - 1; i++) {
      var mx = (points[i].x + points[i + 1].x) / 2, my = (points[i].y + points[i + 1].y) / 2;
      d += 'Q' + points[i].x.toFixed(1) + ',' + points[i].y.toFixed(1) + ' ' + (i === points.length - 2 ? points[i + 1].x : mx).toFixed(1) + ',' + (i === points.length - 2 ? points[i + 1].y : my).toFixed(1);
    }
    return d;
  }

  function truncate(text, w, px) {
    var max = Math.max(4, Math.floor((w - 12) / (px || 7.2)));
    text = String(text);
    return text.length > max ? text.slice(0, max - 1) + '\u2026' : text;
  }

  /* opts.heat(node) -> 0..1 | null; opts.sub(node) -> second line text. Returns <g>. */
  function draw(lay, opts) {
    var s = U.s;
    var root = s('g', { 'class': 'cg-graph-root' });
    var defs = s('defs');
    defs.appendChild(s('marker', { id: 'cg-arrow-call', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0L10,5L0,10z', fill: '#475569' })));
    defs.appendChild(s('marker', { id: 'cg-arrow-data', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0L10,5L0,10z', fill: '#059669' })));
    root.appendChild(defs);
    var eg = s('g', { 'class': 'cg-edges' });
    lay.edges.forEach(function (le) {
      var call = le.edge.kind === 'call';
      var p = s('path', {
        d: pathFor(le.points), fill: 'none', stroke: call ? '#64748b' : '#10b981',
        'stroke-width': call ? 1.4 : 1.2, 'stroke-dasharray': call ? null : '5 4',
        'marker-end': 'url(#cg-arrow-' + (call ? 'call' : 'data') + ')',
        'data-edge': le.edge.id
      });
      p.appendChild(s('title', { text: (call ? 'call ' : 'data ') + le.edge.from + ' \u2192 ' + le.edge.to +
        (le.edge.label ? ' (' + le.edge.label + ')' : '') + (U.isNum(le.edge.host_duration_ns) ? ' \u00b7 host ' + U.fmtNs(le.edge.host_duration_ns) : '') }));
      eg.appendChild(p);
    });
    root.appendChild(eg);
    var ng = s('g', { 'class': 'cg-nodes' });
    lay.nodes.forEach(function (ln, id) {
      var n = ln.node;
      var heat = opts && opts.heat ? opts.heat(n) : null;
      var fill = n.kind === 'tensor' && heat === null ? '#ecfdf5' : heatColor(heat);
      var g = s('g', { transform: 'translate(' + (ln.x - ln.w / 2).toFixed(1) + ',' + (ln.y - ln.h / 2).toFixed(1) + ')', 'data-node': id, 'class': 'cg-node', tabindex: '-1' });
      g.appendChild(s('rect', { width: ln.w, height: ln.h, rx: n.kind === 'tensor' ? ln.h / 2 : 6, fill: fill,
        stroke: KIND_STROKE[n.kind] || KIND_STROKE.other, 'stroke-width': n.kind === 'op' || n.kind === 'tensor' ? 1.2 : 1.8, 'class': 'cg-node-box' }));
      var label = n.display || n.short_label || U.shortLabel(n.label) || id;
      var sub = opts && opts.sub ? opts.sub(n) : '';
      g.appendChild(s('text', { x: ln.w / 2, y: sub ? 18 : ln.h / 2 + 4, 'text-anchor': 'middle', 'font-size': 12, 'font-weight': n.kind === 'op' || n.kind === 'tensor' ? 400 : 600,
        fill: '#0f172a', 'font-family': 'system-ui, -apple-system, Segoe UI, Roboto, sans-serif', text: truncate(label, ln.w) }));
      if (sub) g.appendChild(s('text', { x: ln.w / 2, y: 34, 'text-anchor': 'middle', 'font-size': 10.5, fill: '#334155',
        'font-family': 'system-ui, -apple-system, Segoe UI, Roboto, sans-serif', text: truncate(sub, ln.w, 6) }));
      g.appendChild(s('title', { text: (n.label || id) + ' [' + n.kind + ']' }));
      ng.appendChild(g);
    });
    root.appendChild(ng);
    return root;
  }

  CG.graph = { layout: layout, draw: draw, heatColor: heatColor, HEAT: HEAT, KIND_STROKE: KIND_STROKE };
})(window.CG = window.CG || {});
