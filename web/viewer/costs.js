/* costs.js — the Span costs tab: every graph node (payload.views.span_costs.items, sorted
 * by host total descending) with host self/total, device busy per (device, clock) as
 * separate columns — never summed across clocks or with host time — and memory.
 * Attaches CG.views.costs. */
(function (CG) {
  'use strict';
  var U = CG.util, h = U.h;
  var LIMIT = 2000;

  function render(panel, payload) {
    var items = (((payload.views || {}).span_costs || {}).items) || [];
    if (!items.length) {
      panel.appendChild(U.section('Span costs', U.empty(CG.views.emptyGraphReason(payload))));
      return;
    }
    var clocks = [];
    var seen = {};
    items.forEach(function (it) {
      (it.device_timings || []).forEach(function (d) {
        var k = d.device + '\u0000' + d.clock_id;
        if (!seen[k]) { seen[k] = true; clocks.push({ key: k, device: d.device, clock: d.clock_id }); }
      });
    });
    function busy(it, c) {
      var d = (it.device_timings || []).filter(function (x) { return x.device === c.device && x.clock_id === c.clock; })[0];
      return d ? d.busy_ns : null;
    }
    var columns = [
      { key: 'label', label: 'Span', cell: function (r) {
        return h('span', { class: 'cg-span-cell', title: r.id }, h('span', null, r.label || r.id), h('span', { class: 'cg-exact' }, r.id));
      } },
      { key: 'kind', label: 'Kind', cell: function (r) { return U.badge(r.kind, 'kind'); } },
      { key: 'host_self_time_ns', label: 'Host self', num: true, cell: function (r) { return U.nsCell(r.host_self_time_ns); } },
      { key: 'host_total_time_ns', label: 'Host total', num: true, cell: function (r) { return U.nsCell(r.host_total_time_ns); } },
      { key: 'host_self_ratio', label: 'Self %', num: true, cell: function (r) {
        return h('span', { class: 'cg-ratio' }, h('span', { class: 'cg-ratio-track' }, h('span', { class: 'cg-ratio-bar', style: 'width:' + Math.round(Math.min(1, Math.max(0, r.host_self_ratio || 0)) * 100) + '%' })), U.fmtPct(r.host_self_ratio));
      } }
    ];
    clocks.forEach(function (c) {
      columns.push({ key: 'dev:' + c.key, label: 'Device busy ' + c.device + ' \u00b7 ' + c.clock, num: true,
        value: function (r) { return busy(r, c); }, cell: function (r) { return U.nsCell(busy(r, c)); } });
    });
    columns.push(
      { key: 'allocated_bytes', label: 'Allocated', num: true, cell: function (r) { return U.bytesCell(r.allocated_bytes); } },
      { key: 'peak_live_bytes', label: 'Peak live', num: true, cell: function (r) { return U.bytesCell(r.peak_live_bytes); } },
      { key: 'residual_bytes', label: 'Residual', num: true, cell: function (r) { return U.bytesCell(r.residual_bytes); } },
      { key: 'dense_bytes', label: 'Dense', num: true, cell: function (r) { return U.bytesCell(r.dense_bytes); } });

    var kinds = {};
    items.forEach(function (it) { kinds[it.kind] = (kinds[it.kind] || 0) + 1; });
    var filter = h('input', { type: 'search', class: 'cg-input', placeholder: 'Filter by name or ID', 'aria-label': 'Filter span costs' });
    var kindSel = h('select', { class: 'cg-input', 'aria-label': 'Kind filter' }, h('option', { value: '' }, 'All kinds (' + U.fmtInt(items.length) + ')'),
      Object.keys(kinds).sort().map(function (k) { return h('option', { value: k }, k + ' (' + U.fmtInt(kinds[k]) + ')'); }));
    var tbl = U.table(columns, items, { label: 'Span costs', limit: LIMIT, limitNote: 'refine with the filter' });
    function apply() {
      var q = filter.value.trim().toLowerCase(), k = kindSel.value;
      tbl.redraw(items.filter(function (it) {
        if (k && it.kind !== k) return false;
        return !q || String(it.label || '').toLowerCase().indexOf(q) >= 0 || String(it.id).toLowerCase().indexOf(q) >= 0;
      }));
    }
    filter.addEventListener('input', apply);
    kindSel.addEventListener('change', apply);
    panel.appendChild(U.section('Span costs',
      h('div', { class: 'cg-toolbar' }, filter, kindSel),
      tbl,
      { note: 'Host times are on the session\u2019s monotonic host clock. Device busy time is the union of device intervals on each (device, clock) and is shown per clock, never aligned with or added to host time.' }));
  }

  CG.views.costs = render;
})(window.CG = window.CG || {});
