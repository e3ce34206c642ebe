/* util.js — shared helpers of the candle-graph viewer (offline viewer.html and web app).
 * Classic script: attaches to window.CG.util. Every value from a payload is inserted as
 * text (textContent / attributes), never parsed as HTML. */
(function (CG) {
  'use strict';

  /* Element builder: h('div', {class: 'x', onclick: fn}, child, 'text', [more]) */
  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k.slice(0, 2) === 'on' && typeof v === 'function') el.addEventListener(k.slice(2), v);
        else if (k === 'class') el.className = v;
        else if (k === 'text') el.textContent = v;
        else el.setAttribute(k, v === true ? '' : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }

  function append(el, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(el, c); }); return; }
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }

  /* SVG elements: the namespace is taken from a parsed <svg> so no URI literal is needed. */
  var svgNs = null;
  function s(tag, attrs) {
    if (!svgNs) {
      var probe = document.createElement('div');
      probe.innerHTML = '<svg></svg>';
      svgNs = probe.firstChild.namespaceURI;
    }
    var el = document.createElementNS(svgNs, tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === undefined || v === null) return;
      if (k === 'text') el.textContent = v; else el.setAttribute(k, String(v));
    });
    for (var i = 2; i < arguments.length; i++) if (arguments[i]) el.appendChild(arguments[i]);
    return el;
  }

  function isNum(v) { return typeof v === 'number' && isFinite(v); }
  function present(v) { return v !== undefined && v !== null; }

  /* 1234567 -> "1,234,567" (locale independent so tests and screenshots are stable). */
  function fmtInt(n) {
    if (!isNum(n)) return '\u2014';
    var neg = n < 0, str = String(Math.round(Math.abs(n)));
    if (Math.abs(n) >= 1e21) str = Math.abs(n).toLocaleString('en-US', { useGrouping: false });
    var out = '';
    while (str.length > 3) { out = ',' + str.slice(-3) + out; str = str.slice(0, -3); }
    return (neg ? '-' : '') + str + out;
  }

  function fmtNum(n, digits) {
    if (!isNum(n)) return '\u2014';
    if (n === 0) return '0';
    var a = Math.abs(n);
    if (a >= 1e6 || a < 1e-3) return n.toExponential(digits === undefined ? 3 : digits);
    return String(Number(n.toPrecision(digits === undefined ? 4 : digits)));
  }

  /* Durations are nanoseconds on one clock; the caller names the clock. */
  function fmtNs(ns) {
    if (!isNum(ns)) return '\u2014';
    var a = Math.abs(ns);
    if (a < 1e3) return fmtInt(ns) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(2) + ' \u00b5s';
    if (a < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }

  function fmtBytes(b) {
    if (!isNum(b)) return '\u2014';
    var a = Math.abs(b);
    if (a < 1024) return fmtInt(b) + ' B';
    var units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'], v = b, i = -1;
    do { v /= 1024; i++; } while (Math.abs(v) >= 1024 && i < units.length - 1);
    return v.toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2) + ' ' + units[i];
  }

  function fmtPct(r) { return isNum(r) ? (r * 100).toFixed(1) + '%' : '\u2014'; }

  /* Value cell with the exact number in a tooltip. */
  function nsCell(ns) { return isNum(ns) ? h('span', { title: fmtInt(ns) + ' ns' }, fmtNs(ns)) : '\u2014'; }
  function bytesCell(b) { return isNum(b) ? h('span', { title: fmtInt(b) + ' bytes' }, fmtBytes(b)) : '\u2014'; }

  var LEVEL_CLASS = {
    complete: 'ok', available: 'ok', bound: 'ok', present: 'ok', valid: 'ok',
    partial: 'warn', warning: 'warn', zero: 'warn', unavailable: 'muted', missing: 'muted', none: 'muted',
    invalid: 'bad', failed: 'bad', error: 'bad', mismatch: 'bad', non_finite: 'bad'
  };
  function badge(text, kind) {
    var k = kind || LEVEL_CLASS[String(text)] || 'muted';
    return h('span', { class: 'cg-badge cg-badge-' + k }, String(text));
  }

  /* section(title, child, child, ..., [opts]) — opts is a plain object {note, className}. */
  function section(title) {
    var kids = Array.prototype.slice.call(arguments, 1), opts = {};
    if (kids.length && isPlainObject(kids[kids.length - 1])) opts = kids.pop();
    var sec = h('section', { class: 'cg-section' + (opts.className ? ' ' + opts.className : '') });
    var head = h('div', { class: 'cg-section-head' }, h('h2', null, title));
    if (opts.note) head.appendChild(h('p', { class: 'cg-note' }, opts.note));
    sec.appendChild(head);
    kids.forEach(function (k) { append(sec, k); });
    return sec;
  }
  function isPlainObject(v) { return v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype; }

  function empty(msg) { return h('p', { class: 'cg-empty' }, msg); }

  /* Definition grid from [label, value] pairs; values may be nodes. */
  function kv(pairs) {
    var dl = h('dl', { class: 'cg-kv' });
    pairs.forEach(function (p) {
      if (!p) return;
      dl.appendChild(h('dt', null, p[0]));
      var v = p[1];
      dl.appendChild(h('dd', null, v === undefined || v === null || v === '' ? '\u2014' : v));
    });
    return dl;
  }

  function plain(v) {
    if (v === undefined || v === null) return '\u2014';
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (Array.isArray(v)) return v.length ? v.map(plain).join(', ') : '\u2014';
    if (typeof v === 'object') return JSON.stringify(v);
    if (typeof v === 'number') return Number.isInteger(v) ? fmtInt(v) : fmtNum(v, 6);
    return String(v);
  }

  function card(label, value, sub, title) {
    return h('div', { class: 'cg-card', title: title || null },
      h('div', { class: 'cg-card-label' }, label),
      h('div', { class: 'cg-card-value' }, value),
      sub ? h('div', { class: 'cg-card-sub' }, sub) : null);
  }

  /* Sortable table.
   * columns: [{key, label, num, value(row) -> sortable, cell(row) -> node|string, className}]
   * opts: {limit, caption, sortKey, sortDir, emptyText, rowClass(row), onRowClick(row), label} */
  function table(columns, rows, opts) {
    opts = opts || {};
    var state = { key: opts.sortKey || null, dir: opts.sortDir || 'desc' };
    var wrap = h('div', { class: 'cg-table-wrap' });
    var tbl = h('table', { class: 'cg-table' + (opts.compact ? ' cg-table-compact' : '') });
    if (opts.label) tbl.setAttribute('aria-label', opts.label);
    var thead = h('thead'), tbody = h('tbody'), info = h('p', { class: 'cg-table-info' });
    var hr = h('tr');
    columns.forEach(function (c) {
      var th = h('th', { scope: 'col', class: (c.num ? 'num ' : '') + (c.className || '') });
      if (c.sortable === false || opts.sortable === false) th.textContent = c.label;
      else {
        th.appendChild(h('button', { type: 'button', class: 'cg-sort', onclick: function () {
          if (state.key === c.key) state.dir = state.dir === 'asc' ? 'desc' : 'asc';
          else { state.key = c.key; state.dir = c.num ? 'desc' : 'asc'; }
          draw();
        } }, c.label));
      }
      hr.appendChild(th);
    });
    thead.appendChild(hr);
    tbl.appendChild(thead); tbl.appendChild(tbody);
    wrap.appendChild(tbl);
    function valueOf(c, r) { return c.value ? c.value(r) : r[c.key]; }
    function draw() {
      var list = rows.slice();
      if (state.key) {
        var col = columns.filter(function (c) { return c.key === state.key; })[0];
        if (col) {
          var sign = state.dir === 'asc' ? 1 : -1;
          list.sort(function (a, b) {
            var x = valueOf(col, a), y = valueOf(col, b);
            if (!present(x) && !present(y)) return 0;
            if (!present(x)) return 1;
            if (!present(y)) return -1;
            if (typeof x === 'number' && typeof y === 'number') return (x - y) * sign;
            return String(x).localeCompare(String(y)) * sign;
          });
        }
      }
      Array.prototype.forEach.call(thead.querySelectorAll('th'), function (th, i) {
        var c = columns[i];
        if (state.key === c.key) th.setAttribute('aria-sort', state.dir === 'asc' ? 'ascending' : 'descending');
        else th.removeAttribute('aria-sort');
      });
      tbody.textContent = '';
      var shown = opts.limit ? list.slice(0, opts.limit) : list;
      shown.forEach(function (r) {
        var tr = h('tr', { class: opts.rowClass ? opts.rowClass(r) : null });
        if (opts.onRowClick) {
          tr.classList.add('cg-clickable');
          tr.tabIndex = 0;
          tr.addEventListener('click', function () { opts.onRowClick(r); });
          tr.addEventListener('keydown', function (e) { if (e.key === 'Enter') opts.onRowClick(r); });
        }
        columns.forEach(function (c) {
          var v = c.cell ? c.cell(r) : plain(r[c.key]);
          tr.appendChild(h('td', { class: (c.num ? 'num ' : '') + (c.className || '') }, v));
        });
        tbody.appendChild(tr);
      });
      if (!list.length) {
        tbody.appendChild(h('tr', null, h('td', { colspan: columns.length, class: 'cg-empty-cell' }, opts.emptyText || 'No rows.')));
      }
      info.textContent = list.length > shown.length
        ? 'Showing ' + fmtInt(shown.length) + ' of ' + fmtInt(list.length) + ' rows' + (opts.limitNote ? ' (' + opts.limitNote + ')' : '') + '.'
        : '';
    }
    draw();
    var out = h('div', { class: 'cg-table-block' }, wrap, info);
    out.redraw = function (newRows) { rows = newRows; draw(); };
    return out;
  }

  function download(name, mime, text) {
    var blob = new Blob([text], { type: mime });
    var a = document.createElement('a');
    a.download = name;
    a.href = URL.createObjectURL(blob); /* a blob: URL, local to this page */
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  }

  /* Display name of a node under its parent: the label without the parent's label prefix
   * ("a/b/forward" under "a/b" -> "forward"); otherwise the last two "::" segments
   * ("toy::model::Linear::forward" -> "Linear::forward"). The full label stays in tooltips. */
  function displayName(label, parentLabel) {
    var s = String(label || '');
    var p = parentLabel ? String(parentLabel) : '';
    if (p && s.length > p.length + 1 && s.slice(0, p.length) === p && (s[p.length] === '/' || s[p.length] === ':')) {
      return s.slice(p.length).replace(/^[/:]+/, '');
    }
    var parts = s.split('::');
    return parts.length > 2 ? parts.slice(-2).join('::') : s;
  }

  function shortLabel(label) {
    var s = String(label || '');
    var i = s.lastIndexOf('::');
    return i >= 0 ? s.slice(i + 2) : s;
  }

  /* The lists of one tab that the bounded payload cut (payload.truncation, keyed by
   * dotted path "views.<tab>.<list>"), each stated as "<list>: N of M shown (order)". */
  var CUT_ORDER = { first: 'the first ones', downsampled: 'downsampled, each bucket\u2019s first and highest point kept' };
  function cutNotes(payload, tab) {
    var t = (payload && payload.truncation) || {}, prefix = 'views.' + tab + '.', out = [];
    Object.keys(t).forEach(function (path) {
      var c = t[path];
      if (path.indexOf(prefix) !== 0 || !c || !c.truncated) return;
      var list = path.slice(prefix.length).replace(/\./g, ' \u203a ');
      out.push(h('li', { 'data-truncated': path }, list + ': ' + fmtInt(c.displayed) + ' of ' + fmtInt(c.total) +
        ' shown (' + (CUT_ORDER[c.order] || c.order) + ')'));
    });
    if (!out.length) return null;
    return h('div', { class: 'cg-warning cg-cut', role: 'note' },
      h('p', null, 'This offline viewer is bounded: long lists are cut. The bundle\u2019s evidence.json holds every item.'), h('ul', null, out));
  }

  CG.util = {
    cutNotes: cutNotes,
    h: h, s: s, append: append, isNum: isNum, present: present,
    fmtInt: fmtInt, fmtNum: fmtNum, fmtNs: fmtNs, fmtBytes: fmtBytes, fmtPct: fmtPct,
    nsCell: nsCell, bytesCell: bytesCell, badge: badge, section: section, empty: empty, kv: kv,
    plain: plain, card: card, table: table, download: download, shortLabel: shortLabel, displayName: displayName
  };
  CG.views = CG.views || {};
})(window.CG = window.CG || {});
