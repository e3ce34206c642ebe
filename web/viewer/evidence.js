/* evidence.js — the Evidence tab: health badge, provenance, trace health and issues,
 * capability matrix, qualified findings, gaps, structured facts, tensor checkpoints and
 * gradient evidence (payload.views.evidence). Attaches CG.views.evidence and CG.health. */
(function (CG) {
  'use strict';
  var U = CG.util, h = U.h;

  /* complete | failed | invalid, from summary (or evidence.health as a fallback). */
  function healthState(payload) {
    var s = (payload && payload.summary) || {};
    var hl = (((payload || {}).views || {}).evidence || {}).health || {};
    var valid = U.present(s.structurally_valid) ? s.structurally_valid : hl.structurally_valid;
    var complete = U.present(s.capture_complete) ? s.capture_complete : hl.capture_complete;
    if (valid !== true) return 'invalid';
    if (complete !== true) return 'failed';
    return 'complete';
  }
  var STATE_TEXT = {
    complete: 'Complete capture',
    failed: 'Failed capture',
    invalid: 'Structurally invalid'
  };
  var STATE_DETAIL = {
    complete: 'The trace passed structural validation and the capture completed.',
    failed: 'Structurally valid but not complete: the observations are diagnostic only. No graph and no findings are derived.',
    invalid: 'The trace failed structural validation. No graph and no findings are derived.'
  };
  function healthBadge(state) {
    return h('span', { class: 'cg-health cg-health-' + state, 'data-health': state }, STATE_TEXT[state]);
  }

  /* The 11 capabilities in report.md order: [payload field, display name]. */
  var CAPABILITIES = [
    ['structural_trace', 'Structural trace'],
    ['outer_wall_time', 'Outer wall time'],
    ['nested_host_time', 'Measured-scope host time'],
    ['nested_device_time', 'Nested device time'],
    ['operation_coverage', 'Operations'],
    ['tensor_coverage', 'Tensors'],
    ['gradient_coverage', 'Gradients'],
    ['logical_memory_coverage', 'Logical memory'],
    ['physical_memory_coverage', 'Physical memory'],
    ['gpu_correlation', 'GPU correlation'],
    ['provenance_binding', 'Provenance binding']
  ];

  function factValue(v) {
    if (!v || typeof v !== 'object') return U.plain(v);
    switch (v.kind) {
      case 'duration_ns': return h('span', null, U.fmtNs(v.value), h('span', { class: 'cg-exact' }, U.fmtInt(v.value) + ' ns'));
      case 'bytes': return h('span', null, U.fmtBytes(v.value), h('span', { class: 'cg-exact' }, U.fmtInt(v.value) + ' bytes'));
      case 'count': return U.fmtInt(v.value);
      default: return U.plain(v.value);
    }
  }

  function provenanceSection(p) {
    if (!p) return U.section('Provenance', U.empty('No run metadata in this payload.'));
    var c = p.capture_contract || {};
    var id = p.comparison_identity;
    var tags = p.tags || {};
    var tagKeys = Object.keys(tags);
    var grid = h('div', { class: 'cg-cols' },
      h('div', null, h('h3', null, 'Run'), U.kv([
        ['Run ID', h('code', null, p.run_id || '')],
        ['Correlation ID', h('code', null, p.correlation_id || '')],
        ['Entrypoint', h('code', null, p.entrypoint || '')],
        ['Phase', p.phase],
        ['Timestamp', p.timestamp],
        ['Capture step', U.plain(p.capture_step)],
        ['Warm-up steps', U.plain(p.warmup_steps)],
        ['Device', p.device],
        ['Timing mode', p.timing_mode],
        ['Measured region synchronized', U.plain(!!p.measured_region_device_synchronized)],
        ['Trace schema', p.schema],
        p.candle_version ? ['Candle version', p.candle_version] : null
      ])),
      h('div', null, h('h3', null, 'Declared capture contract'), U.kv([
        ['Measurement scope', c.measurement_scope],
        ['Operations', c.operations ? U.badge(c.operations) : null],
        ['Tensors', c.tensors ? U.badge(c.tensors) : null],
        ['Gradients', c.gradients ? U.badge(c.gradients) : null],
        ['Logical memory', c.logical_memory ? U.badge(c.logical_memory) : null],
        ['Physical memory', c.physical_memory ? U.badge(c.physical_memory) : null],
        ['Device timing', c.device_timing ? U.badge(c.device_timing) : null],
        ['Required labels', labelList(c.required_semantic_labels)],
        ['GPU-expected labels', labelList(c.gpu_expected_semantic_labels)],
        ['CPU-only labels', labelList(c.cpu_only_semantic_labels)],
        c.gradient_contract ? ['Gradient manifest', h('code', null, c.gradient_contract.manifest_sha256 || '')] : null
      ])),
      h('div', null,
        h('h3', null, 'Comparison identity'),
        id ? U.kv(Object.keys(id).map(function (k) { return [k.replace(/_/g, ' '), U.plain(id[k])]; }))
          : U.empty('No comparison identity declared.'),
        h('h3', null, 'Tags (descriptive only)'),
        tagKeys.length ? U.kv(tagKeys.map(function (k) { return [k, tags[k]]; })) : U.empty('No tags.')));
    return U.section('Provenance', grid);
  }

  function labelList(list) {
    if (!Array.isArray(list) || !list.length) return null;
    return h('ul', { class: 'cg-plain-list' }, list.map(function (l) { return h('li', null, h('code', null, l)); }));
  }

  function healthSection(hl) {
    hl = hl || {};
    var issues = Array.isArray(hl.issues) ? hl.issues : [];
    var errors = issues.filter(function (i) { return i.severity === 'error'; }).length;
    var cov = hl.coverage || {};
    var covKeys = Object.keys(cov);
    return U.section('Trace health',
      h('div', { class: 'cg-inline-facts' },
        h('span', null, 'Structurally valid: ', U.badge(hl.structurally_valid ? 'yes' : 'no', hl.structurally_valid ? 'ok' : 'bad')),
        h('span', null, 'Capture complete: ', U.badge(hl.capture_complete ? 'yes' : 'no', hl.capture_complete ? 'ok' : 'bad')),
        h('span', null, U.fmtInt(errors) + ' errors, ' + U.fmtInt(issues.length - errors) + ' warnings')),
      issues.length ? U.table([
        { key: 'severity', label: 'Severity', cell: function (r) { return U.badge(r.severity); } },
        { key: 'code', label: 'Code', cell: function (r) { return h('code', null, r.code); } },
        { key: 'message', label: 'Message' }
      ], issues, { label: 'Health issues' }) : U.empty('No health issues.'),
      covKeys.length ? h('div', null, h('h3', null, 'Observed evidence counts'),
        h('div', { class: 'cg-counts' }, covKeys.map(function (k) {
          return h('div', { class: 'cg-count' }, h('span', { class: 'cg-count-n' }, U.fmtInt(cov[k])), h('span', { class: 'cg-count-l' }, k.replace(/_/g, ' ')));
        }))) : null);
  }

  function capabilitySection(caps) {
    caps = caps || {};
    var rows = CAPABILITIES.map(function (c) {
      var st = caps[c[0]] || { level: 'unavailable', source: 'none', reason: 'capability was not recorded by this evidence schema' };
      return { key: c[0], name: c[1], level: st.level, source: st.source, reason: st.reason };
    });
    return U.section('Capability matrix', U.table([
      { key: 'name', label: 'Capability', sortable: false },
      { key: 'level', label: 'Level', sortable: false, cell: function (r) { return U.badge(r.level); } },
      { key: 'source', label: 'Source', sortable: false },
      { key: 'reason', label: 'Reason', sortable: false }
    ], rows, { label: 'Capability matrix', sortable: false, rowClass: function (r) { return 'cg-cap-' + r.key; } }),
    { note: 'What this capture can support. A finding is only as strong as the weakest capability it requires.' });
  }

  function findingsSection(findings) {
    if (!Array.isArray(findings) || !findings.length)
      return U.section('Qualified findings', U.empty('No findings: findings are derived only from complete, structurally valid captures.'));
    return U.section('Qualified findings', h('ul', { class: 'cg-findings' }, findings.map(function (f) {
      return h('li', { class: 'cg-finding' },
        h('div', { class: 'cg-finding-head' }, U.badge(f.qualification), h('code', null, f.code)),
        h('p', null, f.summary),
        h('p', { class: 'cg-note' }, 'Source: ' + U.plain(f.source) + ' \u00b7 requires: ' + U.plain(f.requires)));
    })));
  }

  function gapsSection(gaps) {
    if (!Array.isArray(gaps) || !gaps.length) return U.section('Gaps', U.empty('No gaps recorded.'));
    return U.section('Gaps', h('ul', { class: 'cg-gaps' }, gaps.map(function (g) { return h('li', null, g); })),
      { note: 'Warnings and the reasons of every capability that is not complete.' });
  }

  function factsSection(facts) {
    if (!Array.isArray(facts) || !facts.length) return U.section('Structured facts', U.empty('No structured facts.'));
    return U.section('Structured facts', U.table([
      { key: 'label', label: 'Fact' },
      { key: 'value', label: 'Value', num: true, sortable: false, cell: function (r) { return factValue(r.value); } },
      { key: 'code', label: 'Code', cell: function (r) { return h('code', null, r.code); } },
      { key: 'source', label: 'Source' },
      { key: 'capability', label: 'Capability' }
    ], facts, { label: 'Structured facts' }));
  }

  function tensorsSection(stats) {
    if (!Array.isArray(stats) || !stats.length) return U.section('Tensor checkpoints', U.empty('No tensor checkpoints (tensor_stats) were recorded.'));
    return U.section('Tensor checkpoints', U.table([
      { key: 'label', label: 'Label', cell: function (r) { return h('code', null, r.label); } },
      { key: 'span_id', label: 'Span' },
      { key: 'shape', label: 'Shape', value: function (r) { return '[' + (r.shape || []).join(', ') + ']'; }, cell: function (r) { return '[' + (r.shape || []).join(', ') + ']'; } },
      { key: 'dtype', label: 'Dtype' },
      { key: 'elements', label: 'Elements', num: true, cell: function (r) { return U.fmtInt(r.elements); } },
      { key: 'non_finite', label: 'Non-finite', num: true, cell: function (r) { return r.non_finite > 0 ? U.badge(U.fmtInt(r.non_finite), 'bad') : '0'; } },
      { key: 'rms', label: 'RMS', num: true, cell: function (r) { return U.fmtNum(r.rms); } },
      { key: 'abs_max', label: '|max|', num: true, cell: function (r) { return U.fmtNum(r.abs_max); } },
      { key: 'mean', label: 'Mean', num: true, cell: function (r) { return U.fmtNum(r.mean); } }
    ], stats, { label: 'Tensor checkpoints' }));
  }

  function gradientsSection(grads) {
    if (!Array.isArray(grads) || !grads.length) return U.section('Gradient evidence', U.empty('No gradient events were recorded.'));
    var counts = {};
    grads.forEach(function (g) { counts[g.state] = (counts[g.state] || 0) + 1; });
    return U.section('Gradient evidence',
      h('div', { class: 'cg-inline-facts' }, Object.keys(counts).sort().map(function (k) { return h('span', null, U.badge(k), ' ' + U.fmtInt(counts[k])); })),
      U.table([
        { key: 'root', label: 'Root' },
        { key: 'key', label: 'Parameter key', cell: function (r) { return h('code', null, r.key); } },
        { key: 'state', label: 'State', cell: function (r) { return U.badge(r.state); } },
        { key: 'norm', label: 'Norm', num: true, cell: function (r) { return U.present(r.norm) ? U.fmtNum(r.norm, 6) : '\u2014'; } }
      ], grads, { label: 'Gradient evidence' }));
  }

  function render(panel, payload) {
    var ev = (payload.views && payload.views.evidence) || {};
    var state = healthState(payload);
    var s = payload.summary || {};
    var banner = h('div', { class: 'cg-banner cg-banner-' + state },
      healthBadge(state),
      h('p', null, STATE_DETAIL[state]));
    var cards = h('div', { class: 'cg-cards' },
      U.card('Outer wall time (host)', U.isNum(s.outer_wall_time_ns) ? U.fmtNs(s.outer_wall_time_ns) : 'unknown',
        U.isNum(s.outer_wall_time_ns) ? U.fmtInt(s.outer_wall_time_ns) + ' ns' : 'no graph for this capture'),
      U.card('Logical peak live', U.isNum(s.logical_peak_live_bytes) ? U.fmtBytes(s.logical_peak_live_bytes) : 'unknown',
        U.isNum(s.logical_peak_live_bytes) ? U.fmtInt(s.logical_peak_live_bytes) + ' bytes' : 'not inferred'),
      U.card('Findings', U.fmtInt((ev.findings || []).length), 'capability-qualified'),
      U.card('Gaps', U.fmtInt((ev.gaps || []).length), 'warnings and incomplete capabilities'));
    panel.appendChild(h('div', { class: 'cg-evidence' },
      banner, cards,
      provenanceSection(ev.provenance),
      healthSection(ev.health),
      capabilitySection(ev.capabilities),
      findingsSection(ev.findings),
      gapsSection(ev.gaps),
      factsSection(ev.facts),
      tensorsSection(ev.tensors),
      gradientsSection(Array.isArray(ev.gradients) ? ev.gradients : payload.gradients)));
  }

  CG.health = { state: healthState, badge: healthBadge, text: STATE_TEXT };
  CG.views.evidence = render;
})(window.CG = window.CG || {});
