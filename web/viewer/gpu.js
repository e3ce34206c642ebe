/* gpu.js — the GPU tab (payload.views.gpu = NsightEvidence + correlation_capability +
 * provenance_capability). Status from the two capabilities; the unavailable state with its
 * reason; hashed artifacts; coverage, provenance and correlation; then Phase GPU
 * attribution, NVTX projected ranges, CUDA kernels, CUDA runtime calls, GPU memory
 * operations and the GPU timeline, up to 250 rows each. Nsight times are on the Nsight
 * clock and are never aligned with host time. Attaches CG.views.gpu. */
(function (CG) {
  'use strict';
  var U = CG.util, h = U.h;
  var ROWS = 250;

  function capState(c) { return c && c.level ? c : { level: 'unavailable', source: 'none', reason: 'capability was not recorded by this evidence schema' }; }

  function statusBlock(gpu) {
    var corr = capState(gpu.correlation_capability), prov = capState(gpu.provenance_capability);
    var both = corr.level === 'complete' && prov.level === 'complete';
    var headline = both ? 'GPU evidence correlated and bound to this run'
      : gpu.status === 'available' ? 'GPU evidence present, qualified by its capabilities'
        : gpu.status === 'failed' ? 'GPU evidence failed to load' : 'GPU evidence unavailable';
    return h('div', { class: 'cg-gpu-status' },
      h('div', { class: 'cg-gpu-headline' }, U.badge(gpu.status || 'unavailable'), h('strong', null, headline)),
      h('div', { class: 'cg-cols cg-cols-2' },
        h('div', { class: 'cg-cap-box', 'data-cap': 'gpu_correlation' }, h('div', { class: 'cg-card-label' }, 'GPU correlation'), U.badge(corr.level),
          h('p', null, corr.reason), h('p', { class: 'cg-note' }, 'Source: ' + U.plain(corr.source))),
        h('div', { class: 'cg-cap-box', 'data-cap': 'provenance_binding' }, h('div', { class: 'cg-card-label' }, 'Provenance binding'), U.badge(prov.level),
          h('p', null, prov.reason), h('p', { class: 'cg-note' }, 'Source: ' + U.plain(prov.source)))));
  }

  function artifactsSection(gpu) {
    var arts = [];
    if (gpu.raw_report) arts.push(Object.assign({ role: 'raw report' }, gpu.raw_report));
    (gpu.source_csv || []).forEach(function (a) { arts.push(Object.assign({ role: 'stats CSV' }, a)); });
    if (!arts.length) return null;
    return U.section('Hashed artifacts', U.table([
      { key: 'path', label: 'Path', cell: function (r) { return h('code', null, r.path); } },
      { key: 'role', label: 'Role' },
      { key: 'size_bytes', label: 'Size', num: true, cell: function (r) { return U.bytesCell(r.size_bytes); } },
      { key: 'sha256', label: 'SHA-256', cell: function (r) { return h('code', { class: 'cg-hash' }, r.sha256); } }
    ], arts, { label: 'Hashed artifacts' }));
  }

  function coverageRow(cov) {
    var keys = ['kernel_summary', 'runtime_summary', 'memory_summary', 'nvtx_projection', 'gpu_timeline'];
    cov = cov || {};
    return h('div', { class: 'cg-inline-facts' }, keys.map(function (k) {
      var v = cov[k];
      var b = typeof v === 'boolean' ? U.badge(v ? 'present' : 'absent', v ? 'ok' : 'muted') : U.badge(U.plain(v));
      return h('span', null, k.replace(/_/g, ' ') + ': ', b);
    }));
  }

  function provenanceBlock(p) {
    if (!p || typeof p !== 'object') return U.empty('No provenance recorded.');
    var pairs = Object.keys(p).map(function (k) {
      var v = p[k];
      if (k === 'binding' || k === 'state' || k === 'status') return [k, U.badge(String(v))];
      if (v && typeof v === 'object' && !Array.isArray(v)) return [k.replace(/_/g, ' '), h('code', { class: 'cg-wrap' }, JSON.stringify(v))];
      return [k.replace(/_/g, ' '), Array.isArray(v) && v.length && typeof v[0] === 'string' ? h('ul', { class: 'cg-plain-list' }, v.map(function (x) { return h('li', null, x); })) : U.plain(v)];
    });
    return U.kv(pairs);
  }

  function correlationBlock(c) {
    if (!c) return U.empty('No correlation recorded.');
    var ledger = c.ledger || {};
    var keys = ['expected', 'cpu_only', 'observed', 'matched', 'missing_expected', 'unexpected_observed', 'unexpected_cpu_only', 'duplicates'];
    return h('div', null,
      U.kv([
        ['Mode', h('code', null, c.mode)],
        ['Complete', U.badge(c.complete ? 'complete' : 'partial', c.complete ? 'ok' : 'warn')],
        ['Clocks aligned', 'no \u2014 Nsight and host clocks remain separate'],
        ['Reason', c.reason]
      ]),
      h('div', { class: 'cg-ledger' }, keys.map(function (k) {
        var v = ledger[k] || [];
        return h('div', { class: 'cg-ledger-item' + ((k === 'missing_expected' || k.indexOf('unexpected') === 0 || k === 'duplicates') && v.length ? ' cg-ledger-bad' : '') },
          h('div', { class: 'cg-card-label' }, k.replace(/_/g, ' ') + ' (' + v.length + ')'),
          v.length ? h('ul', { class: 'cg-plain-list' }, v.slice(0, 50).map(function (x) {
            return h('li', null, h('code', null, typeof x === 'string' ? x : (x.semantic_key + ' \u00d7' + x.occurrences)));
          })) : h('span', { class: 'cg-note' }, 'none'));
      })));
  }

  function rowsSection(title, rows, columns, note, limits) {
    rows = Array.isArray(rows) ? rows : [];
    return U.section(title + ' (' + U.fmtInt(rows.length) + ')',
      rows.length ? U.table(columns, rows, { label: title, limit: ROWS, compact: true, limitNote: 'first ' + ROWS + ' rows shown' })
        : U.empty('No rows.'),
      note ? { note: note } : undefined);
  }

  var nameCol = { key: 'name', label: 'Name', cell: function (r) { return h('code', { class: 'cg-wrap' }, r.name); } };
  function summaryCols() {
    return [nameCol,
      { key: 'total_ns', label: 'Total', num: true, cell: function (r) { return U.nsCell(r.total_ns); } },
      { key: 'count', label: 'Count', num: true, cell: function (r) { return U.fmtInt(r.count); } },
      { key: 'average_ns', label: 'Average', num: true, cell: function (r) { return U.nsCell(r.average_ns); } },
      { key: 'minimum_ns', label: 'Min', num: true, cell: function (r) { return U.nsCell(r.minimum_ns); } },
      { key: 'maximum_ns', label: 'Max', num: true, cell: function (r) { return U.nsCell(r.maximum_ns); } }];
  }
  function keyCols() {
    return [
      { key: 'device', label: 'Device' }, { key: 'context', label: 'Ctx' }, { key: 'stream', label: 'Stream' },
      { key: 'correlation_id', label: 'Corr ID' }];
  }

  function render(panel, payload) {
    var gpu = (payload.views && payload.views.gpu) || {};
    var root = h('div', { class: 'cg-gpu' }, statusBlock(gpu));
    panel.appendChild(root);
    if (gpu.status !== 'available') {
      root.appendChild(h('div', { class: 'cg-unknown', 'data-unknown': 'gpu' },
        h('strong', null, gpu.status === 'failed' ? 'GPU evidence failed' : 'GPU evidence unavailable'),
        ' \u2014 ', gpu.reason || 'no reason recorded'));
      if (Array.isArray(gpu.diagnostics) && gpu.diagnostics.length)
        root.appendChild(U.section('Diagnostics', h('ul', { class: 'cg-gaps' }, gpu.diagnostics.map(function (d) { return h('li', null, U.plain(d)); }))));
      var art = artifactsSection(gpu);
      if (art) root.appendChild(art);
      return;
    }
    root.appendChild(artifactsSection(gpu) || U.section('Hashed artifacts', U.empty('No artifacts recorded.')));
    root.appendChild(U.section('Coverage, provenance and correlation',
      h('h3', null, 'Report coverage'), coverageRow(gpu.coverage),
      h('div', { class: 'cg-cols cg-cols-2' },
        h('div', null, h('h3', null, 'Provenance'), provenanceBlock(gpu.provenance)),
        h('div', null, h('h3', null, 'Correlation'), correlationBlock(gpu.correlation)))));
    if (Array.isArray(gpu.diagnostics) && gpu.diagnostics.length)
      root.appendChild(U.section('Diagnostics', h('ul', { class: 'cg-gaps' }, gpu.diagnostics.map(function (d) { return h('li', null, U.plain(d)); }))));
    var lim = gpu.limits || {};
    var limKeys = Object.keys(lim).filter(function (k) { return lim[k] && lim[k].truncated; });
    if (limKeys.length) root.appendChild(h('p', { class: 'cg-note' }, 'Truncated reports: ' + limKeys.map(function (k) {
      return k + ' (' + U.fmtInt(lim[k].displayed_rows) + ' of ' + U.fmtInt(lim[k].total_rows) + ' rows)';
    }).join('; ')));

    root.appendChild(rowsSection('Phase GPU attribution', gpu.phase_attribution, [
      { key: 'semantic_key', label: 'Semantic key', cell: function (r) { return h('code', null, r.semantic_key); } },
      { key: 'gpu_busy_ns', label: 'GPU busy', num: true, cell: function (r) { return U.nsCell(r.gpu_busy_ns); } },
      { key: 'gpu_operation_count', label: 'GPU ops', num: true, cell: function (r) { return U.fmtInt(r.gpu_operation_count); } },
      { key: 'projected_start_ns', label: 'Projected start (Nsight ns)', num: true, cell: function (r) { return U.fmtInt(r.projected_start_ns); } },
      { key: 'projected_duration_ns', label: 'Projected duration', num: true, cell: function (r) { return U.nsCell(r.projected_duration_ns); } },
      { key: 'join_keys', label: 'Join keys', value: function (r) { return (r.join_keys || []).join(', '); }, cell: function (r) { return (r.join_keys || []).join(', '); } }
    ], 'Busy time is the union of joined GPU rows clipped to the projected range, on the Nsight clock (clock_aligned: false).'));
    root.appendChild(rowsSection('NVTX projected ranges', gpu.nvtx_ranges, [
      nameCol,
      { key: 'start_ns', label: 'CPU start (ns)', num: true, cell: function (r) { return U.fmtInt(r.start_ns); } },
      { key: 'duration_ns', label: 'CPU duration', num: true, cell: function (r) { return U.nsCell(r.duration_ns); } },
      { key: 'projected_start_ns', label: 'GPU projected start (ns)', num: true, cell: function (r) { return U.fmtInt(r.projected_start_ns); } },
      { key: 'projected_duration_ns', label: 'GPU projected duration', num: true, cell: function (r) { return U.nsCell(r.projected_duration_ns); } },
      { key: 'gpu_operations', label: 'GPU ops', num: true, cell: function (r) { return U.present(r.gpu_operations) ? U.fmtInt(r.gpu_operations) : '\u2014'; } }
    ].concat(keyCols().slice(0, 3)), 'Original (CPU-side) and projected (GPU-side) times are reported by Nsight; neither is aligned with the trace\u2019s host clock.'));
    root.appendChild(rowsSection('CUDA kernels', gpu.kernels, summaryCols()));
    root.appendChild(rowsSection('CUDA runtime calls', gpu.runtime_calls, summaryCols()));
    root.appendChild(rowsSection('GPU memory operations', gpu.memory_operations, summaryCols()));
    root.appendChild(rowsSection('GPU timeline', gpu.gpu_timeline, [
      nameCol,
      { key: 'start_ns', label: 'Start (Nsight ns)', num: true, cell: function (r) { return U.fmtInt(r.start_ns); } },
      { key: 'duration_ns', label: 'Duration', num: true, cell: function (r) { return U.nsCell(r.duration_ns); } }
    ].concat(keyCols()), 'Times on the Nsight GPU clock.'));
  }

  CG.views.gpu = render;
})(window.CG = window.CG || {});
