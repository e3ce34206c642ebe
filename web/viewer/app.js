/* app.js — viewer shell: header (entrypoint, phase, health badge, key figures) and the
 * tabs Evidence (default), Trace, Span costs, Memory, GPU as an ARIA tablist (arrow keys,
 * Home, End; automatic activation). Panels render lazily on first display.
 * CG.app.mount(rootElement, payload) is used by the offline viewer.html (payload from
 * the JSON script element with id cg-payload) and by the web app (fetched payload).
 * Failed or invalid captures always open on Evidence. */
(function (CG) {
  'use strict';
  var U = CG.util, h = U.h;
  var SCHEMA = 'candle-graph/viewer/5';
  var TABS = [
    { id: 'evidence', label: 'Evidence', render: function (p, d) { CG.views.evidence(p, d); } },
    { id: 'trace', label: 'Trace', render: function (p, d) { CG.views.trace(p, d); } },
    { id: 'span_costs', label: 'Span costs', render: function (p, d) { CG.views.costs(p, d); } },
    { id: 'memory', label: 'Memory', render: function (p, d) { CG.views.memory(p, d); } },
    { id: 'gpu', label: 'GPU', render: function (p, d) { CG.views.gpu(p, d); } }
  ];
  var seq = 0;

  function mount(root, payload) {
    var uid = 'cg' + (++seq);
    root.textContent = '';
    root.classList.add('cg-app');
    var state = CG.health.state(payload);
    var s = payload.summary || {};
    var header = h('header', { class: 'cg-header' },
      h('div', { class: 'cg-header-main' },
        h('span', { class: 'cg-brand' }, 'candle-graph'),
        h('h1', { class: 'cg-title', title: s.entrypoint || '' }, s.entrypoint || 'Unnamed entrypoint'),
        CG.health.badge(state)),
      h('div', { class: 'cg-header-facts' },
        fact('Phase', s.phase || '\u2014'),
        fact('Outer wall (host)', U.isNum(s.outer_wall_time_ns) ? U.fmtNs(s.outer_wall_time_ns) : 'unknown', U.isNum(s.outer_wall_time_ns) ? U.fmtInt(s.outer_wall_time_ns) + ' ns' : null),
        fact('Logical peak', U.isNum(s.logical_peak_live_bytes) ? U.fmtBytes(s.logical_peak_live_bytes) : 'unknown', U.isNum(s.logical_peak_live_bytes) ? U.fmtInt(s.logical_peak_live_bytes) + ' bytes' : null),
        fact('Schema', payload.schema || '\u2014')));
    var tablist = h('div', { class: 'cg-tabs', role: 'tablist', 'aria-label': 'Viewer sections' });
    var panels = h('main', { class: 'cg-panels' });
    var tabs = [], panes = [];
    TABS.forEach(function (t, i) {
      var tab = h('button', { type: 'button', role: 'tab', id: uid + '-tab-' + t.id, class: 'cg-tab',
        'aria-controls': uid + '-panel-' + t.id, 'aria-selected': 'false', tabindex: '-1', 'data-tab': t.id }, t.label);
      var pane = h('section', { role: 'tabpanel', id: uid + '-panel-' + t.id, class: 'cg-panel', 'aria-labelledby': tab.id,
        tabindex: '0', hidden: true, 'data-panel': t.id });
      tab.addEventListener('click', function () { activate(i, false); });
      tab.addEventListener('keydown', function (e) {
        var k = e.key, n = TABS.length, to = null;
        if (k === 'ArrowRight') to = (i + 1) % n;
        else if (k === 'ArrowLeft') to = (i - 1 + n) % n;
        else if (k === 'Home') to = 0;
        else if (k === 'End') to = n - 1;
        if (to === null) return;
        e.preventDefault();
        activate(to, true);
      });
      tabs.push(tab); panes.push(pane);
      tablist.appendChild(tab);
      panels.appendChild(pane);
    });
    root.appendChild(header);
    root.appendChild(h('nav', { class: 'cg-tabbar' }, tablist));
    root.appendChild(panels);
    if (payload.schema !== SCHEMA) {
      panels.insertBefore(h('p', { class: 'cg-warning', role: 'note' }, 'This payload declares schema ' + U.plain(payload.schema) + '; this viewer reads ' + SCHEMA + '.'), panels.firstChild);
    }

    function activate(i, focus) {
      tabs.forEach(function (t, k) {
        var on = k === i;
        t.setAttribute('aria-selected', on ? 'true' : 'false');
        t.tabIndex = on ? 0 : -1;
        panes[k].hidden = !on;
      });
      var pane = panes[i];
      if (!pane.cgRendered) {
        pane.cgRendered = true;
        var cut = U.cutNotes(payload, TABS[i].id);
        if (cut) pane.appendChild(cut);
        try { TABS[i].render(pane, payload); } catch (err) {
          pane.appendChild(h('p', { class: 'cg-warning', role: 'alert' }, 'This section could not be displayed: ' + (err && err.message ? err.message : String(err))));
          if (window.console) console.error(err);
        }
      }
      if (pane.cgOnShow) pane.cgOnShow();
      if (focus) tabs[i].focus();
      root.setAttribute('data-active-tab', TABS[i].id);
    }

    /* default_view is honoured only for complete captures; failed/invalid open on Evidence */
    var start = 0;
    if (state === 'complete' && payload.default_view) {
      TABS.forEach(function (t, i) { if (t.id === payload.default_view) start = i; });
    }
    activate(start, false);
    return { activate: function (id) { TABS.forEach(function (t, i) { if (t.id === id) activate(i, false); }); }, tabs: tabs, panels: panes };
  }

  function fact(label, value, title) {
    return h('div', { class: 'cg-hfact', title: title || null }, h('span', { class: 'cg-hfact-label' }, label), h('span', { class: 'cg-hfact-value' }, value));
  }

  function boot() {
    var el = document.getElementById('cg-payload');
    var root = document.getElementById('cg-app');
    if (!el || !root) return;
    var payload;
    try { payload = JSON.parse(el.textContent); } catch (err) {
      root.textContent = '';
      root.appendChild(h('p', { class: 'cg-warning', role: 'alert' }, 'The embedded payload is not valid JSON: ' + err.message));
      return;
    }
    CG.app.instance = mount(root, payload);
  }

  CG.app = { mount: mount, boot: boot, TABS: TABS, SCHEMA: SCHEMA };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot); else boot();
})(window.CG = window.CG || {});
