// cohorts.js — the baseline (a) and candidate (b) selections, per browser tab.
const KEY = 'cg.cohorts';
export function getCohorts() {
  try { const c = JSON.parse(sessionStorage.getItem(KEY) || '{}'); return { a: c.a || [], b: c.b || [] }; } catch (_) { return { a: [], b: [] }; }
}
export function setCohorts(c) { sessionStorage.setItem(KEY, JSON.stringify({ a: c.a || [], b: c.b || [] })); }
export function addTo(which, ids) {
  const c = getCohorts();
  const other = which === 'a' ? 'b' : 'a';
  for (const id of ids) {
    if (!c[which].includes(id)) c[which].push(id);
    c[other] = c[other].filter((x) => x !== id);
  }
  setCohorts(c);
  return c;
}
export function clearCohorts() { setCohorts({ a: [], b: [] }); }
