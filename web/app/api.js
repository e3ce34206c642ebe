// api.js — talks to the candle-graph server (same origin only). The read token is
// typed once per browser tab and kept in sessionStorage (never in localStorage,
// never in a URL). Every failure becomes an ApiError with the server's code and
// a plain-words explanation for the status.
const TOKEN_KEY = 'cg.token';

export function getToken() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) { if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY); }

const STATUS_WORDS = {
  400: 'The request was not accepted.',
  401: 'A read token is needed (or the one given is unknown or expired). Enter a token with the read scope.',
  403: 'The token does not allow this (it lacks the read scope).',
  404: 'Not found: it does not exist on this server, or not yet.',
  405: 'This server does not offer that operation.',
  409: 'Conflict with the current state on the server.',
  422: 'The server cannot answer this for these inputs.',
  429: 'The server is busy; try again shortly.',
  503: 'The server cannot reach its database or store right now; try again shortly.',
};

export class ApiError extends Error {
  constructor(status, code, message, detail, retryAfter) {
    super(message);
    this.status = status; this.code = code; this.detail = detail; this.retryAfter = retryAfter;
  }
  get explanation() { return STATUS_WORDS[this.status] || (this.status ? 'The server answered with status ' + this.status + '.' : 'The server could not be reached.'); }
}

async function request(path, { text = false, signal, method = 'GET', body } = {}) {
  const headers = { Accept: text ? 'text/html' : 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, signal, credentials: 'omit', cache: 'no-cache', body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'The server could not be reached: ' + (e && e.message ? e.message : e));
  }
  if (!res.ok) {
    let code = 'http_' + res.status, message = res.statusText || 'error', detail;
    try {
      const body = await res.json();
      if (body && body.error) { code = body.error.code || code; message = body.error.message || message; detail = body.error.detail; }
    } catch (_) { /* not JSON */ }
    throw new ApiError(res.status, code, message, detail, res.headers.get('Retry-After'));
  }
  return text ? res.text() : res.json();
}

export const getJson = (path, opts) => request(path, opts);
export const getText = (path, opts) => request(path, { ...(opts || {}), text: true });
// A JSON body sent with method (alert triage: PATCH /alerts/{id}, upload scope).
export const sendJson = (method, path, body) => request(path, { method, body });

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? '?' + s : '';
}
