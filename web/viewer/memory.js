/* memory.js — the Memory tab (payload.views.memory = MemoryProfile {logical?, physical?}).
 * Logical plane: peak, allocation/free counts, peak by category, a live-bytes polyline over
 * host time and the last 100 timeline rows. Physical plane: per-device sample table. An
 * absent plane is stated as unknown; zero is never inferred. Attaches CG.views.memory. */
(function (CG) {
  'use strict';
  var U = CG.util, h = U.h;
  var TIMELINE_ROWS = 100;
  var CATEGORIES = ['parameter', 'activation', 'gradient', 'optimizer', 'other'];
  var CAT_COLORS = { parameter: '#2563eb', activation: '#ea580c', gradient: '#7c3aed', optimizer: '#0d9488', other: '#64748b' };

  function firstNum() {
    for (var i = 0; i < arguments.length; i++) if (U.isNum(arguments[i])) return arguments[i];
    return null;
  }

  function entries(obj) {
    if (Array.isArray(obj)) return obj.map(function (d) { return [d.device, d]; });
    return obj && typeof obj === 'object' ? Object.keys(obj).map(function (k) { return [k, obj[k]]; }) : [];
  }

  function polyline(timeline, peak) {
    var W = 760, H = 220, L = 72, R = 16, T = 14, B = 34;
    var pts = timeline.filter(function (p) { return U.isNum(p.timestamp_ns) && U.isNum(p.live_bytes); });
    var svg = U.s('svg', { viewBox: '0 0 ' + W + ' ' + H, 'class': 'cg-chart', role: 'img',
      'aria-label': 'Logical live bytes over host time, ' + pts.length + ' points' });
    if (!pts.length) return svg;
    var t0 = pts[0].timestamp_ns, t1 = pts[pts.length - 1].timestamp_ns;
    var maxB = Math.max.apply(null, pts.map(function (p) { return p.live_bytes; })) || 1;
    var span = Math.max(1, t1 - t0);
    function x(t) { return L + (t - t0) / span * (W - L - R); }
    function y(b) { return T + (1 - b / maxB) * (H - T - B); }
    for (var i = 0; i <= 4; i++) {
      var b = maxB * i / 4, yy = y(b);
      svg.appendChild(U.s('line', { x1: L, x2: W - R, y1: yy, y2: yy, stroke: '#e2e8f0', 'stroke-width': 1 }));
      svg.appendChild(U.s('text', { x: L - 8, y: yy + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#475569', text: U.fmtBytes(b) }));
    }
    svg.appendChild(U.s('text', { x: L, y: H - 10, 'font-size': 11, fill: '#475569', text: U.fmtInt(t0) + ' ns' }));
    svg.appendChild(U.s('text', { x: W - R, y: H - 10, 'text-anchor': 'end', 'font-size': 11, fill: '#475569', text: U.fmtInt(t1) + ' ns (host clock)' }));
    /* step line: live bytes hold until the next event group */
    var d = '', area = '';
    pts.forEach(function (p, k) {
      var px = x(p.timestamp_ns).toFixed(1), py = y(p.live_bytes).toFixed(1);
      if (k === 0) { d = 'M' + px + ',' + py; area = 'M' + px + ',' + y(0).toFixed(1) + 'L' + px + ',' + py; }
      else { d += 'H' + px + 'V' + py; area += 'H' + px + 'V' + py; }
    });
    area += 'V' + y(0).toFixed(1) + 'Z';
    svg.appendChild(U.s('path', { d: area, fill: '#dbeafe', stroke: 'none' }));
    svg.appendChild(U.s('path', { d: d, fill: 'none', stroke: '#1d4ed8', 'stroke-width': 2, 'class': 'cg-live-line' }));
    if (peak && U.isNum(peak.timestamp_ns) && U.isNum(peak.live_bytes)) {
      var px = x(peak.timestamp_ns), py = y(peak.live_bytes);
      svg.appendChild(U.s('circle', { cx: px, cy: py, r: 4.5, fill: '#dc2626', stroke: '#fff', 'stroke-width': 1.5 }));
      svg.appendChild(U.s('text', { x: Math.min(px + 8, W - R - 120), y: Math.max(py - 6, T + 10), 'font-size': 11, 'font-weight': 600, fill: '#991b1b',
        text: 'peak ' + U.fmtBytes(peak.live_bytes) }));
    }
    return svg;
  }

  function logicalSection(lg) {
    if (!lg) {
      return U.section('Logical memory', h('div', { class: 'cg-unknown', 'data-unknown': 'logical' },
        h('strong', null, 'Logical memory unknown'),
        ' \u2014 this capture recorded no logical allocation events, so live bytes, peak and counts are unknown; zero is not inferred.'));
    }
    var peak = lg.peak || null;
    var timeline = Array.isArray(lg.timeline) ? lg.timeline : [];
    var allocs = firstNum(lg.alloc_count, lg.storage_allocation_count);
    var frees = firstNum(lg.free_count, lg.matched_storage_free_count);
    var peakBytes = peak ? peak.live_bytes : firstNum(lg.peak_live_bytes);
    var cards = h('div', { class: 'cg-cards' },
      U.card('Logical peak live', U.isNum(peakBytes) ? U.fmtBytes(peakBytes) : 'unknown',
        U.isNum(peakBytes) ? U.fmtInt(peakBytes) + ' bytes' + (peak && U.isNum(peak.timestamp_ns) ? ' at ' + U.fmtInt(peak.timestamp_ns) + ' ns' : '') : null),
      U.card('Allocations', U.fmtInt(allocs), 'storage lifetimes opened'),
      U.card('Frees', U.fmtInt(frees), 'matched storage frees'),
      U.isNum(lg.total_allocated_bytes) ? U.card('Total allocated', U.fmtBytes(lg.total_allocated_bytes), U.fmtInt(lg.total_allocated_bytes) + ' bytes') : null);

    var byCat = (peak && peak.live_bytes_by_category) || {};
    var catKeys = CATEGORIES.concat(Object.keys(byCat).filter(function (k) { return CATEGORIES.indexOf(k) < 0; }));
    var catTotal = catKeys.reduce(function (a, k) { return a + (U.isNum(byCat[k]) ? byCat[k] : 0); }, 0) || 1;
    var catRows = h('div', { class: 'cg-bars', role: 'list', 'aria-label': 'Peak by category' }, catKeys.filter(function (k) { return k in byCat; }).map(function (k) {
      var v = byCat[k];
      return h('div', { class: 'cg-bar-row', role: 'listitem' },
        h('span', { class: 'cg-bar-label' }, k),
        h('span', { class: 'cg-bar-track' }, h('span', { class: 'cg-bar-fill', style: 'width:' + (100 * v / catTotal).toFixed(1) + '%;background:' + (CAT_COLORS[k] || '#64748b') })),
        h('span', { class: 'cg-bar-value', title: U.fmtInt(v) + ' bytes' }, Math.abs(v) < 1024 ? U.fmtBytes(v) : U.fmtBytes(v) + ' \u00b7 ' + U.fmtInt(v) + ' B'));
    }));

    var last = timeline.slice(-TIMELINE_ROWS);
    var tlTable = U.table([
      { key: 'timestamp_ns', label: 'Host time (ns)', num: true, cell: function (r) { return U.fmtInt(r.timestamp_ns); } },
      { key: 'live_bytes', label: 'Live bytes', num: true, cell: function (r) { return U.bytesCell(r.live_bytes); } }
    ].concat(CATEGORIES.map(function (c) {
      return { key: c, label: c, num: true, value: function (r) { return (r.live_bytes_by_category || {})[c]; },
        cell: function (r) { return U.bytesCell((r.live_bytes_by_category || {})[c]); } };
    })).concat([{ key: 'dev', label: 'By device', sortable: false, cell: function (r) {
      return entries(r.live_bytes_by_device).map(function (e) { return e[0] + ': ' + U.fmtBytes(e[1]); }).join(', ') || '\u2014';
    } }]), last, { label: 'Logical memory timeline', compact: true });

    var devRows = Array.isArray(lg.by_device) ? lg.by_device : [];
    return U.section('Logical memory',
      cards,
      h('div', { class: 'cg-cols cg-cols-2' },
        h('div', null, h('h3', null, 'Live bytes over host time'), polyline(timeline, peak)),
        h('div', null, h('h3', null, 'Peak by category'), Object.keys(byCat).length ? catRows : U.empty('No category breakdown at the peak.'),
          devRows.length ? h('div', null, h('h3', null, 'Per device'), U.table([
            { key: 'device', label: 'Device' },
            { key: 'storage_allocation_count', label: 'Allocs', num: true, cell: function (r) { return U.fmtInt(r.storage_allocation_count); } },
            { key: 'matched_storage_free_count', label: 'Frees', num: true, cell: function (r) { return U.fmtInt(r.matched_storage_free_count); } },
            { key: 'peak_live_bytes', label: 'Peak live', num: true, cell: function (r) { return U.bytesCell(r.peak_live_bytes); } },
            { key: 'peak_timestamp_ns', label: 'Peak at (ns)', num: true, cell: function (r) { return U.fmtInt(r.peak_timestamp_ns); } }
          ], devRows, { label: 'Logical memory per device', compact: true })) : null)),
      h('h3', null, 'Timeline (last ' + U.fmtInt(Math.min(TIMELINE_ROWS, timeline.length)) + ' of ' + U.fmtInt(timeline.length) + ' points)'),
      tlTable,
      { note: 'Logical storage lifetimes from memory events; peak is the simultaneous sum of live storages.' });
  }

  function physicalSection(ph) {
    if (!ph) {
      return U.section('Physical memory', h('div', { class: 'cg-unknown', 'data-unknown': 'physical' },
        h('strong', null, 'Physical memory unknown'),
        ' \u2014 no device memory samples were recorded; zero is not inferred.'));
    }
    var rows = Array.isArray(ph.by_device) ? ph.by_device : [];
    function at(v, t) { return U.isNum(v) ? h('span', { title: U.fmtInt(v) + ' bytes' + (U.isNum(t) ? ' at ' + U.fmtInt(t) + ' ns' : '') }, U.fmtBytes(v), U.isNum(t) ? h('span', { class: 'cg-exact' }, '@ ' + U.fmtInt(t) + ' ns') : null) : '\u2014'; }
    var samples = Array.isArray(ph.timeline) ? ph.timeline : [];
    return U.section('Physical memory',
      U.table([
        { key: 'device', label: 'Device' },
        { key: 'sample_count', label: 'Samples', num: true, cell: function (r) { return U.fmtInt(r.sample_count); } },
        { key: 'peak_used_bytes', label: 'Peak used', num: true, cell: function (r) { return at(r.peak_used_bytes, r.peak_used_timestamp_ns); } },
        { key: 'peak_reserved_bytes', label: 'Peak reserved', num: true, cell: function (r) { return at(r.peak_reserved_bytes, r.peak_reserved_timestamp_ns); } },
        { key: 'minimum_free_bytes', label: 'Minimum free', num: true, cell: function (r) { return at(r.minimum_free_bytes, r.minimum_free_timestamp_ns); } },
        { key: 'maximum_observed_capacity_bytes', label: 'Max capacity', num: true, cell: function (r) { return at(r.maximum_observed_capacity_bytes); } },
        { key: 'counts', label: 'used/free/reserved/capacity samples', sortable: false, cell: function (r) {
          return [r.used_sample_count, r.free_sample_count, r.reserved_sample_count, r.capacity_sample_count].map(function (n) { return U.isNum(n) ? U.fmtInt(n) : '\u2014'; }).join(' / ');
        } }
      ], rows, { label: 'Physical memory per device', emptyText: 'No per-device statistics.' }),
      samples.length ? h('details', { class: 'cg-details' }, h('summary', null, 'Samples (' + U.fmtInt(samples.length) + ', values verbatim)'),
        U.table([
          { key: 'timestamp_ns', label: 'Host time (ns)', num: true, cell: function (r) { return U.fmtInt(r.timestamp_ns); } },
          { key: 'device', label: 'Device' },
          { key: 'used_bytes', label: 'Used', num: true, cell: function (r) { return U.bytesCell(r.used_bytes); } },
          { key: 'free_bytes', label: 'Free', num: true, cell: function (r) { return U.bytesCell(r.free_bytes); } },
          { key: 'reserved_bytes', label: 'Reserved', num: true, cell: function (r) { return U.bytesCell(r.reserved_bytes); } },
          { key: 'capacity_bytes', label: 'Capacity', num: true, cell: function (r) { return U.bytesCell(r.capacity_bytes); } }
        ], samples, { label: 'Physical memory samples', limit: 250, compact: true })) : null,
      { note: 'Device memory checkpoints as reported by the backend. Capacity is never derived from used + free.' });
  }

  function render(panel, payload) {
    var mem = (payload.views && payload.views.memory) || {};
    panel.appendChild(h('div', { class: 'cg-memory' }, logicalSection(mem.logical || null), physicalSection(mem.physical || null)));
  }

  CG.views.memory = render;
})(window.CG = window.CG || {});
