// The console's only door to Veena: the public HTTP API under /api/v1.
// Every call goes through request(), which adds the access token and turns
// problem+json answers into ApiError values with a message a person can read.

export const BASE = '/api/v1';
const TOKEN_KEY = 'veena.accessToken';

export function accessToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setAccessToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lives only in this page */ }
}

// Friendlier words for the stable error codes of API.md. The server's own
// detail is shown after them, because it names the token, arc or line at fault.
const CODE_WORDS = {
  definition_invalid: 'The definition file could not be loaded.',
  not_found: 'That item does not exist (any more).',
  token_complete: 'This token has already been completed. The page now shows the current state.',
  process_not_executing: 'The process is not running, so its tokens cannot change.',
  transition_not_enabled: 'That transition is not enabled in the current marking.',
  action_failed: 'The transition\'s action failed, so it did not fire.',
  backtrack_not_allowed: 'The process cannot be backtracked to this token.',
  conflict: 'The request conflicts with the current state.',
  unauthorized: 'Your access token is missing, wrong or expired. Please log in again.',
  forbidden: 'Your access token does not allow this action.',
  task_claimed: 'Another user holds this task.',
  task_not_open: 'This task is no longer open.',
  job_not_leased: 'This worker does not hold the job.',
  match_invalid: 'The condition does not compile.',
};

const STATUS_WORDS = {
  400: 'The server did not understand the request.',
  401: CODE_WORDS.unauthorized,
  403: CODE_WORDS.forbidden,
  404: CODE_WORDS.not_found,
  409: 'The request conflicts with the current state.',
  413: 'The file is too large for the server.',
  415: 'The server does not accept this kind of file.',
  422: 'The server could not accept what was sent.',
  429: 'The server is busy. Wait a moment and try again.',
  500: 'The server failed while doing this. Its log has the details.',
  502: 'The server is not reachable right now.',
  503: 'The server is not ready (its store may be unreachable).',
};

export class ApiError extends Error {
  constructor({ status, code, title, detail, errors }) {
    const lead = CODE_WORDS[code] || STATUS_WORDS[status] || title || `The server answered ${status}.`;
    // A definition that fails to load lists its errors line by line; the
    // detail repeats them in one string, so it is left out then.
    const listed = Array.isArray(errors) && errors.length > 0;
    const extra = listed ? '' : detail && detail !== lead ? detail : (title && title !== lead ? title : '');
    super(extra ? `${lead} ${extra}` : lead);
    this.status = status;
    this.code = code || '';
    this.title = title || '';
    this.detail = detail || '';
    this.errors = Array.isArray(errors) ? errors : [];
  }
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

export async function request(method, path, { body, json, accept, raw, contentType, quiet401 } = {}) {
  const headers = { Accept: accept || 'application/json' };
  const token = accessToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload;
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(json);
  } else if (body !== undefined) {
    headers['Content-Type'] = contentType || 'application/octet-stream';
    payload = body;
  }
  let res;
  try {
    res = await fetch(BASE + path, { method, headers, body: payload, cache: 'no-store' });
  } catch (e) {
    throw new ApiError({ status: 0, title: 'Cannot reach the Veena server. Check that it is running and the network is up.' });
  }
  if (!res.ok) {
    let problem = {};
    const text = await res.text().catch(() => '');
    try { problem = JSON.parse(text); } catch { problem = { detail: text.trim().slice(0, 300) }; }
    const err = new ApiError({ status: res.status, ...problem, code: problem.code });
    if (res.status === 401 && !quiet401) onUnauthorized(err);
    throw err;
  }
  if (raw) return res;
  if (res.status === 204) return null;
  const text = await res.text();
  if (!text) return null;
  try { return JSON.parse(text); } catch { return text; }
}

const enc = encodeURIComponent;

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// Lists are {"items", "next"}; a bare array is accepted too.
function page(answer) {
  if (Array.isArray(answer)) return { items: answer, next: '' };
  return { items: (answer && answer.items) || [], next: (answer && answer.next) || '' };
}

// Reads every page of a list.
async function all(path, params = {}) {
  let after = '';
  const items = [];
  for (let i = 0; i < 100; i++) {
    const p = page(await request('GET', path + query({ ...params, limit: 1000, after })));
    items.push(...p.items);
    if (!p.next || p.next === after) break;
    after = p.next;
  }
  return items;
}

export const api = {
  whoami: () => request('GET', '/whoami', { quiet401: true }),

  definitions: () => all('/definitions'),
  definition: (name, version) => request('GET', version
    ? `/definitions/${enc(name)}/versions/${enc(version)}`
    : `/definitions/${enc(name)}`),
  definitionSource: async (name, version) => {
    const res = await request('GET', `/definitions/${enc(name)}/versions/${enc(version)}/source`, { raw: true, accept: '*/*' });
    return res.text();
  },
  loadDefinition: (text, format) => request('POST', `/definitions${query({ format })}`, {
    body: text, contentType: sniffContentType(text),
  }),

  processes: async (filters, after, limit = 25) =>
    page(await request('GET', `/processes${query({ ...filters, after, limit })}`)),
  processesAll: (filters) => all('/processes', filters),
  process: (id) => request('GET', `/processes/${enc(id)}`),
  startProcess: (definition, version, env) => request('POST', '/processes', {
    json: { definition, ...(version ? { version: Number(version) } : {}), ...(env && Object.keys(env).length ? { env } : {}) },
  }),
  cancelProcess: (id) => request('POST', `/processes/${enc(id)}/cancel`, { json: {} }),
  // The token sets of a process, each with its shared environment and one
  // environment per member (memberEnvs[i] is member i's).
  tokenSets: (id) => request('GET', `/processes/${enc(id)}/token-sets`),
  // The token history, read page by page (at most 1000 tokens a request):
  // both lists in creation order. A history beyond 100 pages is cut short
  // (truncated: true); the graph then shows its beginning.
  tokens: async (id) => {
    const out = { nodeTokens: [], arcTokens: [], truncated: false };
    let after = '';
    for (let i = 0; ; i++) {
      if (i === 100) { out.truncated = true; break; }
      const p = await request('GET', `/processes/${enc(id)}/tokens${query({ limit: 1000, after })}`);
      out.nodeTokens.push(...(p.nodeTokens || []));
      out.arcTokens.push(...(p.arcTokens || []));
      if (!p.next || p.next === after) break;
      after = p.next;
    }
    return out;
  },
  // The events of a process in the order they fired, read 1000 at a time.
  events: async (id) => {
    const out = [];
    let after = 0;
    for (let i = 0; i < 100; i++) {
      const answer = await request('GET', `/processes/${enc(id)}/events${query({ limit: 1000, after: after || undefined })}`);
      const evs = Array.isArray(answer) ? answer : [];
      out.push(...evs);
      if (evs.length < 1000) break;
      after = Number(evs[evs.length - 1].seq) || 0;
    }
    return out;
  },
  processEnv: (id) => request('GET', `/processes/${enc(id)}/env`),
  almanac: (id) => request('GET', `/processes/${enc(id)}/almanac`),
  schemaNodes: (id) => request('GET', `/processes/${enc(id)}/nodes`),
  // Petri nets.
  marking: (id) => request('GET', `/processes/${enc(id)}/marking`),
  fire: (id, transition) => request('POST', `/processes/${enc(id)}/fire`, { json: { transition } }),
  transitionEvent: (id, name, args) => request('POST', `/processes/${enc(id)}/transition-events`, { json: { name, args: args || {} } }),
  analysis: (name, version) => request('GET', `/definitions/${enc(name)}/analysis${query({ version })}`),

  nodeToken: (id) => request('GET', `/node-tokens/${enc(id)}`),
  completeToken: (id, body) => request('POST', `/node-tokens/${enc(id)}/complete`, { json: body || {} }),
  backtrackToken: (id) => request('POST', `/node-tokens/${enc(id)}/backtrack`, { json: {} }),

  // Process lists with every filter of GET /processes; a filter given as an
  // array (context pairs) is sent as a repeated parameter.
  processesPage: async (filters, after, limit = 25) =>
    request('GET', `/processes${queryAll({ ...filters, after, limit })}`),
  waiting: async (filters, after, limit = 50) =>
    request('GET', `/waiting${queryAll({ ...filters, after, limit })}`),
  patchProcessEnv: (id, patch) => request('PATCH', `/processes/${enc(id)}/env`, { json: patch }),
  tokenEnv: (id) => request('GET', `/node-tokens/${enc(id)}/env`),
  patchTokenEnv: (id, patch) => request('PATCH', `/node-tokens/${enc(id)}/env`, { json: patch }),
  startProcessWith: (body) => request('POST', '/processes', { json: body }),
  sendEvent: (body) => request('POST', '/events', { json: body }),
};

// query, with array values as repeated parameters.
function queryAll(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) for (const x of v) { if (x !== '') q.append(k, x); }
    else if (v !== undefined && v !== null && v !== '' && v !== false) q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

function sniffContentType(text) {
  const t = String(text).trimStart();
  if (t.startsWith('<')) return 'application/xml';
  if (t.startsWith('{') || t.startsWith('[')) return 'application/json';
  return 'text/plain; charset=utf-8';
}

// Follows the live event stream of one process. EventSource cannot send an
// Authorization header, so the token travels as ?access_token=. On a broken
// connection it reconnects from the last event seen, unless stop() was called.
export function followEvents(processId, afterSeq, { onEvent, onState, onProblem }) {
  let source = null;
  let last = afterSeq || 0;
  let stopped = false;
  let retry = 1000;
  let timer = 0;

  function open() {
    if (stopped) return;
    const params = { after: last || undefined, access_token: accessToken() || undefined };
    source = new EventSource(`${BASE}/processes/${enc(processId)}/events${query(params)}`);
    source.onopen = () => { retry = 1000; onState('live'); };
    source.onmessage = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch { return; }
      const seq = Number(ev.seq || m.lastEventId || 0);
      if (seq && seq <= last) return;
      if (seq) last = seq;
      onEvent(ev);
    };
    source.onerror = (e) => {
      // The server may name an event "error" with a message before it ends the stream.
      if (e && e.data && onProblem) onProblem(String(e.data).replace(/^"|"$/g, ''));
      source.close();
      if (stopped) return;
      onState('reconnecting');
      timer = setTimeout(open, retry);
      retry = Math.min(retry * 2, 15000);
    };
  }
  open();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      if (source) source.close();
      onState('stopped');
    },
    get lastSeq() { return last; },
  };
}
