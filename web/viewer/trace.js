/* trace.js — the Trace tab: dagre call/data graph of spans, ops and tensors with heat
 * (host self-time ratio or peak live memory), search, span hierarchy tree, fit/reset/zoom,
 * SVG export and an inspector. Device timings appear only as per-(device, clock) values in
 * the inspector: device clocks are never drawn on, or aligned with, the host clock.
 * Attaches CG.views.trace. */
(function (CG) {
  'use strict';
  var U = CG.util, h = U.h;
  var MAX_NODES_FULL = 600;   /* above this, tensors start hidden */
  var MAX_NODES_DRAWN = 1500; /* above this, only span nodes are laid out */

  function spanTreeRoots(payload, nodes) {
    var tree = Array.isArray(payload.span_tree) ? payload.span_tree : [];
    var nested = tree.some(function (t) { return Array.isArray(t.children); });
    if (nested) return tree;
    /* flat list (or absent): rebuild from parent_id over non-op, non-tensor nodes */
    var list = tree.length ? tree : nodes.filter(function (n) { return n.kind !== 'op' && n.kind !== 'tensor'; });
    var byId = new Map();
    list.forEach(function (n) { byId.set(n.id, Object.assign({}, n, { children: [] })); });
    var roots = [];
    byId.forEach(function (n) {
      var p = n.parent_id && byId.get(n.parent_id);
      if (p) p.children.push(n); else roots.push(n);
    });
    return roots;
  }

  function render(panel, payload) {
    var view = (payload.views && payload.views.trace) || {};
    var nodes = Array.isArray(view.nodes) ? view.nodes : [];
    var edges = Array.isArray(view.edges) ? view.edges : [];
    if (!nodes.length) {
      panel.appendChild(U.section('Call/data graph', U.empty(emptyReason(payload))));
      return;
    }
    var byId = new Map();
    nodes.forEach(function (n) { byId.set(n.id, n); });
    /* display names: relative to the parent span (drawn nodes get a shallow copy with .display) */
    var display = new Map();
    nodes.forEach(function (n) {
      var p = n.parent_id ? byId.get(n.parent_id) : null;
      display.set(n.id, n.kind === 'op' || n.kind === 'tensor' ? (n.short_label || n.label || n.id) : U.displayName(n.label || n.id, p && p.label));
    });
    var drawNodes = nodes.map(function (n) { return Object.assign({}, n, { display: display.get(n.id) }); });
    var maxPeak = 0;
    nodes.forEach(function (n) { if (U.isNum(n.peak_live_bytes) && n.peak_live_bytes > maxPeak) maxPeak = n.peak_live_bytes; });

    var st = {
      heat: 'self', showOps: true, showTensors: nodes.length <= MAX_NODES_FULL,
      selected: null, query: '', scale: 1, tx: 0, ty: 0, layout: null
    };

    /* ---- toolbar ---- */
    var search = h('input', { type: 'search', class: 'cg-input', placeholder: 'Search spans, ops, tensors', 'aria-label': 'Search graph nodes' });
    var heatSel = h('select', { class: 'cg-input', 'aria-label': 'Heat' },
      h('option', { value: 'self' }, 'Heat: host self-time ratio'),
      h('option', { value: 'memory' }, 'Heat: peak live memory'),
      h('option', { value: 'none' }, 'Heat: off'));
    var opsBox = h('input', { type: 'checkbox', checked: st.showOps });
    var tenBox = h('input', { type: 'checkbox', checked: st.showTensors });
    var matchInfo = h('span', { class: 'cg-match-info', 'aria-live': 'polite' });
    function btn(label, title, fn) { return h('button', { type: 'button', class: 'cg-btn', title: title, 'aria-label': title, onclick: fn }, label); }
    var toolbar = h('div', { class: 'cg-toolbar', role: 'toolbar', 'aria-label': 'Graph controls' },
      search, matchInfo, heatSel,
      h('label', { class: 'cg-check' }, opsBox, 'Ops'),
      h('label', { class: 'cg-check' }, tenBox, 'Tensors'),
      h('span', { class: 'cg-toolbar-sep' }),
      btn('\u2212', 'Zoom out', function () { zoomBy(1 / 1.25); }),
      btn('+', 'Zoom in', function () { zoomBy(1.25); }),
      btn('Fit', 'Fit graph to view', function () { fit(); }),
      btn('Reset', 'Reset zoom to 100%', function () { reset(); }),
      btn('Export SVG', 'Download the graph as SVG', function () { exportSvg(); }));

    /* ---- panes ---- */
    var treePane = h('nav', { class: 'cg-tree-pane', 'aria-label': 'Span hierarchy' }, h('h3', null, 'Span hierarchy'));
    var svg = U.s('svg', { 'class': 'cg-graph-svg', role: 'img', 'aria-label': 'Call and data graph' });
    var viewport = U.s('g', { 'class': 'cg-viewport' });
    svg.appendChild(viewport);
    var graphPane = h('div', { class: 'cg-graph-pane' }, svg);
    var notice = h('p', { class: 'cg-graph-notice', hidden: true });
    var legend = h('div', { class: 'cg-legend' });
    var inspector = h('aside', { class: 'cg-inspector', 'aria-label': 'Inspector' });
    panel.appendChild(h('div', { class: 'cg-trace' }, toolbar,
      h('div', { class: 'cg-trace-body' }, treePane, h('div', { class: 'cg-graph-col' }, notice, graphPane, legend), inspector)));

    /* ---- span tree ---- */
    var treeButtons = new Map();
    function treeList(items, depth) {
      var ul = h('ul', { class: 'cg-tree' });
      items.forEach(function (t) {
        var n = byId.get(t.id) || t;
        var b = h('button', { type: 'button', class: 'cg-tree-item', 'data-id': t.id,
          style: 'padding-left:' + (6 + depth * 14) + 'px', onclick: function () { select(t.id, true); } },
          h('span', { class: 'cg-tree-dot', style: 'background:' + CG.graph.heatColor(n.host_self_ratio) }),
          h('span', { class: 'cg-tree-label' }, display.get(t.id) || U.displayName(t.label || t.id, null)),
          h('span', { class: 'cg-tree-time' }, U.fmtNs(n.host_total_time_ns)));
        b.title = (t.label || t.id) + ' (' + t.id + ')';
        treeButtons.set(t.id, b);
        var li = h('li', null, b);
        if (t.children && t.children.length) li.appendChild(treeList(t.children, depth + 1));
        ul.appendChild(li);
      });
      return ul;
    }
    treePane.appendChild(treeList(spanTreeRoots(payload, nodes), 0));

    /* ---- layout ---- */
    function visibleNodes() {
      var vis = drawNodes.filter(function (n) {
        if (n.kind === 'op') return st.showOps;
        if (n.kind === 'tensor') return st.showTensors;
        return true;
      });
      if (vis.length > MAX_NODES_DRAWN) {
        vis = drawNodes.filter(function (n) { return n.kind !== 'op' && n.kind !== 'tensor'; }).slice(0, MAX_NODES_DRAWN);
        notice.hidden = false;
        notice.textContent = 'Large graph: showing ' + U.fmtInt(vis.length) + ' span nodes of ' + U.fmtInt(nodes.length) + ' (ops and tensors hidden).';
      } else if (!st.showTensors && nodes.length > MAX_NODES_FULL) {
        notice.hidden = false;
        notice.textContent = 'Tensors are hidden by default for graphs over ' + U.fmtInt(MAX_NODES_FULL) + ' nodes.';
      } else notice.hidden = true;
      return vis;
    }
    function heatOf(n) {
      if (st.heat === 'none') return null;
      if (st.heat === 'memory') return maxPeak > 0 && U.isNum(n.peak_live_bytes) ? n.peak_live_bytes / maxPeak : (n.kind === 'tensor' ? null : 0);
      return n.kind === 'tensor' ? null : (U.isNum(n.host_self_ratio) ? n.host_self_ratio : 0);
    }
    function subOf(n) {
      if (n.kind === 'tensor') return '';
      if (st.heat === 'memory') return U.isNum(n.peak_live_bytes) ? 'peak ' + U.fmtBytes(n.peak_live_bytes) : (U.isNum(n.dense_bytes) ? U.fmtBytes(n.dense_bytes) : '');
      return U.fmtNs(n.host_total_time_ns) + (n.kind === 'op' ? '' : ' \u00b7 self ' + U.fmtPct(n.host_self_ratio));
    }
    function relayout() {
      var vis = visibleNodes();
      st.layout = CG.graph.layout(vis, edges, {});
      redraw();
    }
    function redraw() {
      viewport.textContent = '';
      viewport.appendChild(CG.graph.draw(st.layout, { heat: heatOf, sub: subOf }));
      Array.prototype.forEach.call(viewport.querySelectorAll('.cg-node'), function (g) {
        g.addEventListener('click', function (e) { e.stopPropagation(); select(g.getAttribute('data-node'), false); });
      });
      drawLegend();
      applySearch();
      markSelected();
      applyTransform();
    }
    function drawLegend() {
      legend.textContent = '';
      if (st.heat !== 'none') {
        var bar = h('span', { class: 'cg-legend-bar', style: 'background:linear-gradient(to right,' + CG.graph.HEAT.join(',') + ')' });
        legend.appendChild(h('span', { class: 'cg-legend-item' }, st.heat === 'memory' ? 'peak live 0' : 'self 0%', bar,
          st.heat === 'memory' ? U.fmtBytes(maxPeak) : '100%'));
      }
      legend.appendChild(h('span', { class: 'cg-legend-item' }, h('span', { class: 'cg-legend-line' }), 'call (host)'));
      legend.appendChild(h('span', { class: 'cg-legend-item' }, h('span', { class: 'cg-legend-line cg-legend-dash' }), 'data'));
      legend.appendChild(h('span', { class: 'cg-legend-item cg-note' }, 'Host clock only; device clocks are listed per clock in the inspector, never aligned.'));
    }

    /* ---- zoom / pan ---- */
    function applyTransform() {
      viewport.setAttribute('transform', 'translate(' + st.tx.toFixed(1) + ',' + st.ty.toFixed(1) + ') scale(' + st.scale.toFixed(4) + ')');
    }
    function paneSize() { var r = graphPane.getBoundingClientRect(); return { w: r.width || 800, h: r.height || 500 }; }
    function zoomBy(f, cx, cy) {
      var sz = paneSize();
      if (cx === undefined) { cx = sz.w / 2; cy = sz.h / 2; }
      var ns = Math.min(4, Math.max(0.05, st.scale * f));
      st.tx = cx - (cx - st.tx) * (ns / st.scale);
      st.ty = cy - (cy - st.ty) * (ns / st.scale);
      st.scale = ns;
      applyTransform();
    }
    function fit() {
      var sz = paneSize(), L = st.layout;
      if (!L || !L.width) return;
      st.scale = Math.min(1.5, Math.max(0.05, Math.min(sz.w / L.width, sz.h / L.height) * 0.96));
      st.tx = (sz.w - L.width * st.scale) / 2;
      st.ty = Math.max(0, (sz.h - L.height * st.scale) / 2);
      applyTransform();
    }
    function reset() { st.scale = 1; st.tx = 0; st.ty = 0; applyTransform(); }
    /* First view: fit when that stays readable, else fit the width and start at the top. */
    function initialView() {
      var sz = paneSize(), L = st.layout;
      if (!L || !L.width) return;
      var fitScale = Math.min(sz.w / L.width, sz.h / L.height) * 0.96;
      if (fitScale >= 0.75) { fit(); return; }
      st.scale = Math.max(fitScale, Math.min(1, sz.w / L.width * 0.96), 0.3);
      var rootNode = null;
      L.nodes.forEach(function (ln) { if (!rootNode || ln.y < rootNode.y) rootNode = ln; });
      st.tx = L.width * st.scale <= sz.w ? (sz.w - L.width * st.scale) / 2 : sz.w / 2 - rootNode.x * st.scale;
      st.ty = 4;
      applyTransform();
    }
    function centerOn(id) {
      var ln = st.layout && st.layout.nodes.get(id);
      if (!ln) return;
      var sz = paneSize();
      st.tx = sz.w / 2 - ln.x * st.scale;
      st.ty = sz.h / 2 - ln.y * st.scale;
      applyTransform();
    }
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect();
      zoomBy(e.deltaY < 0 ? 1.12 : 1 / 1.12, e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    var drag = null;
    svg.addEventListener('pointerdown', function (e) {
      if (e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, tx: st.tx, ty: st.ty, moved: false };
    });
    window.addEventListener('pointermove', function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; svg.classList.add('cg-dragging'); }
      st.tx = drag.tx + dx; st.ty = drag.ty + dy;
      applyTransform();
    });
    window.addEventListener('pointerup', function () { drag = null; svg.classList.remove('cg-dragging'); });
    graphPane.tabIndex = 0;
    graphPane.setAttribute('aria-label', 'Graph canvas: arrow keys pan, + and - zoom, 0 fits');
    graphPane.addEventListener('keydown', function (e) {
      var step = 60;
      if (e.key === '+' || e.key === '=') zoomBy(1.25);
      else if (e.key === '-') zoomBy(1 / 1.25);
      else if (e.key === '0') fit();
      else if (e.key === 'ArrowLeft') st.tx += step;
      else if (e.key === 'ArrowRight') st.tx -= step;
      else if (e.key === 'ArrowUp') st.ty += step;
      else if (e.key === 'ArrowDown') st.ty -= step;
      else return;
      e.preventDefault();
      applyTransform();
    });

    /* ---- search ---- */
    function applySearch() {
      var q = st.query.trim().toLowerCase();
      var count = 0;
      Array.prototype.forEach.call(viewport.querySelectorAll('.cg-node'), function (g) {
        var n = byId.get(g.getAttribute('data-node'));
        var hit = q && n && (String(n.label || '').toLowerCase().indexOf(q) >= 0 || String(n.id).toLowerCase().indexOf(q) >= 0);
        if (hit) count++;
        g.classList.toggle('cg-hit', !!hit);
        g.classList.toggle('cg-dim', !!q && !hit);
        var box = g.querySelector('.cg-node-box');
        if (hit) { box.setAttribute('data-stroke', box.getAttribute('data-stroke') || box.getAttribute('stroke')); box.setAttribute('stroke', '#db2777'); box.setAttribute('stroke-width', '3'); }
        else if (box.getAttribute('data-stroke')) { box.setAttribute('stroke', box.getAttribute('data-stroke')); box.removeAttribute('data-stroke'); box.setAttribute('stroke-width', n && (n.kind === 'op' || n.kind === 'tensor') ? '1.2' : '1.8'); }
      });
      treeButtons.forEach(function (b, id) {
        var n = byId.get(id);
        var hit = q && n && String(n.label || '').toLowerCase().indexOf(q) >= 0;
        b.classList.toggle('cg-hit', !!hit);
      });
      matchInfo.textContent = q ? U.fmtInt(count) + (count === 1 ? ' match' : ' matches') : '';
      return count;
    }
    search.addEventListener('input', function () { st.query = search.value; applySearch(); });
    search.addEventListener('keydown', function (e) {
      if (e.key !== 'Enter') return;
      var first = viewport.querySelector('.cg-node.cg-hit');
      if (first) select(first.getAttribute('data-node'), true);
    });
    heatSel.addEventListener('change', function () { st.heat = heatSel.value; redraw(); });
    opsBox.addEventListener('change', function () { st.showOps = opsBox.checked; relayout(); fit(); });
    tenBox.addEventListener('change', function () { st.showTensors = tenBox.checked; relayout(); fit(); });

    /* ---- selection + inspector ---- */
    function markSelected() {
      Array.prototype.forEach.call(viewport.querySelectorAll('.cg-node'), function (g) {
        g.classList.toggle('cg-selected', g.getAttribute('data-node') === st.selected);
      });
      treeButtons.forEach(function (b, id) {
        b.classList.toggle('cg-selected', id === st.selected);
        if (id === st.selected) b.setAttribute('aria-current', 'true'); else b.removeAttribute('aria-current');
      });
    }
    function select(id, center) {
      st.selected = id;
      markSelected();
      renderInspector(byId.get(id));
      if (center) centerOn(id);
    }
    function edgeList(title, list, end) {
      if (!list.length) return null;
      return h('div', null, h('h4', null, title), h('ul', { class: 'cg-plain-list cg-edge-list' }, list.slice(0, 40).map(function (e) {
        var other = byId.get(e[end]);
        return h('li', null, h('button', { type: 'button', class: 'cg-link', onclick: function () { select(e[end], true); } },
          other ? (other.short_label || other.label) : e[end]),
          ' ', h('span', { class: 'cg-note' }, e.kind + (e.label ? ' \u00b7 ' + e.label : '') + (U.isNum(e.host_duration_ns) ? ' \u00b7 ' + U.fmtNs(e.host_duration_ns) : '')));
      }).concat(list.length > 40 ? [h('li', { class: 'cg-note' }, '\u2026 ' + U.fmtInt(list.length - 40) + ' more')] : [])));
    }
    function renderInspector(n) {
      inspector.textContent = '';
      inspector.appendChild(h('h3', null, 'Inspector'));
      if (!n) { inspector.appendChild(U.empty('Select a node in the graph or the span tree.')); return; }
      var parent = n.parent_id ? byId.get(n.parent_id) : null;
      inspector.appendChild(h('div', { class: 'cg-insp-title' }, U.badge(n.kind, 'kind'), h('strong', null, n.label || n.id)));
      inspector.appendChild(U.kv([
        ['ID', h('code', null, n.id)],
        ['Parent', parent ? h('button', { type: 'button', class: 'cg-link', onclick: function () { select(parent.id, true); } }, parent.label || parent.id) : (n.parent_id || null)],
        ['Start (host)', U.isNum(n.start_ns) ? U.fmtInt(n.start_ns) + ' ns' : null],
        ['Host total', U.isNum(n.host_total_time_ns) ? U.fmtNs(n.host_total_time_ns) + ' (' + U.fmtInt(n.host_total_time_ns) + ' ns)' : null],
        ['Host self', U.isNum(n.host_self_time_ns) ? U.fmtNs(n.host_self_time_ns) + ' (' + U.fmtInt(n.host_self_time_ns) + ' ns)' : null],
        ['Self ratio', U.fmtPct(n.host_self_ratio)],
        n.shape ? ['Shape', '[' + n.shape.join(', ') + ']'] : null,
        n.dtype ? ['Dtype', n.dtype] : null,
        n.device ? ['Device', n.device] : null,
        U.isNum(n.dense_bytes) ? ['Dense bytes', U.fmtBytes(n.dense_bytes) + ' (' + U.fmtInt(n.dense_bytes) + ')'] : null,
        U.isNum(n.allocated_bytes) ? ['Allocated', U.fmtBytes(n.allocated_bytes) + ' (' + U.fmtInt(n.allocated_bytes) + ')'] : null,
        U.isNum(n.peak_live_bytes) ? ['Peak live', U.fmtBytes(n.peak_live_bytes) + ' (' + U.fmtInt(n.peak_live_bytes) + ')'] : null,
        U.isNum(n.residual_bytes) ? ['Residual', U.fmtBytes(n.residual_bytes) + ' (' + U.fmtInt(n.residual_bytes) + ')'] : null
      ]));
      var dt = Array.isArray(n.device_timings) ? n.device_timings : [];
      if (dt.length) {
        inspector.appendChild(h('h4', null, 'Device busy (own clocks)'));
        inspector.appendChild(h('ul', { class: 'cg-plain-list' }, dt.map(function (d) {
          return h('li', null, h('code', null, d.device + ' \u00b7 ' + d.clock_id), ': ', U.nsCell(d.busy_ns));
        })));
        inspector.appendChild(h('p', { class: 'cg-note' }, 'Busy time on each device clock; not comparable to host start times.'));
      }
      var inE = edges.filter(function (e) { return e.to === n.id; });
      var outE = edges.filter(function (e) { return e.from === n.id; });
      var a = edgeList('Incoming', inE, 'from'), b = edgeList('Outgoing', outE, 'to');
      if (a) inspector.appendChild(a);
      if (b) inspector.appendChild(b);
    }

    /* ---- SVG export ---- */
    function exportSvgString() {
      var L = st.layout;
      var out = U.s('svg', { width: Math.ceil(L.width), height: Math.ceil(L.height), viewBox: '0 0 ' + Math.ceil(L.width) + ' ' + Math.ceil(L.height) });
      out.appendChild(U.s('rect', { width: '100%', height: '100%', fill: '#ffffff' }));
      var g = CG.graph.draw(L, { heat: heatOf, sub: subOf });
      out.appendChild(g);
      return new XMLSerializer().serializeToString(out);
    }
    function exportSvg() { U.download('candle-graph-trace.svg', 'image/svg+xml', exportSvgString()); }

    renderInspector(null);
    relayout();
    panel.cgOnShow = function () { if (!panel.cgFitted) { panel.cgFitted = true; initialView(); } };
    panel.cgApi = { select: select, search: function (q) { search.value = q; st.query = q; return applySearch(); }, exportSvgString: exportSvgString, fit: fit };
  }

  function emptyReason(payload) {
    var state = CG.health.state(payload);
    if (state === 'failed') return 'No graph: this capture failed. Failed captures are diagnosable on the Evidence tab but get no call/data graph.';
    if (state === 'invalid') return 'No graph: the trace is structurally invalid. See the Evidence tab for the health issues.';
    return 'No graph nodes in this payload.';
  }

  CG.views.trace = render;
  CG.views.emptyGraphReason = emptyReason;
})(window.CG = window.CG || {});
