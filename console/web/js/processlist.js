// The processes list and the waiting work: newest first (or oldest), with
// a total, filters (search by id start or context value, definition,
// state, node, context pair, creation time, stalled), where each process
// waits and its context.

import { api } from './api.js';
import {
  h, clear, fmtTime, fmtAgo, shortId, idCode, navigate, routeHref, errorToast, stateBadge, PROCESS_STATES,
  copyButton, contextChips, joinProgressWords,
} from './ui.js';
import { sendEventDialog } from './actions.js';

// Cursors of the pages already seen, so "Previous" can go back.
let trail = { key: '', cursors: [] };

// The filters a list page reads from its route.
const FILTERS = ['q', 'definition', 'state', 'node', 'stalled', 'createdAfter', 'createdBefore', 'order', 'parentToken'];

function filtersOf(query) {
  const f = {};
  for (const k of FILTERS) f[k] = query.get(k) || '';
  f.context = query.getAll('context').filter(Boolean);
  return f;
}

// routeOf is the route of a list with these filters.
function routeOf(base, f, extra = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...f, ...extra })) {
    if (Array.isArray(v)) for (const x of v) { if (x) q.append(k, x); }
    else if (v) q.set(k, v);
  }
  const s = q.toString();
  return `#/${base}${s ? `?${s}` : ''}`;
}

// A datetime-local input's value as RFC 3339 (local time), or ''.
function toRFC3339(local) {
  if (!local) return '';
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

function toLocalInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// The filter form of the processes list and the waiting work.
async function filterForm(base, f, { states }) {
  const defs = await api.definitions().catch(() => []);
  const search = h('input#f-q', { type: 'search', name: 'q', value: f.q, placeholder: 'id start or context value', autocomplete: 'off', 'aria-label': 'Search by the start of an id or a context value' });
  const defSelect = h('select#f-definition', { name: 'definition' },
    h('option', { value: '' }, 'all definitions'),
    defs.map((d) => h('option', { value: d.name, selected: d.name === f.definition }, d.name)));
  if (f.definition && !defs.some((d) => d.name === f.definition)) {
    defSelect.append(h('option', { value: f.definition, selected: true }, f.definition));
  }
  const nodes = h('datalist#f-node-list');
  const fillNodes = () => {
    clear(nodes);
    const def = defs.find((d) => d.name === defSelect.value);
    const names = new Set();
    for (const d of def ? [def] : defs) {
      for (const n of d.nodes || []) names.add(n.external ? `${n.external}:${n.name}` : n.name);
    }
    for (const n of [...names].sort()) nodes.append(h('option', { value: n }));
  };
  fillNodes();
  const node = h('input#f-node', { type: 'text', name: 'node', value: f.node, list: 'f-node-list', placeholder: 'waiting at node', autocomplete: 'off', size: 14 });
  const ctx = h('input#f-context', { type: 'text', name: 'context', value: f.context.join(' '), placeholder: 'key=value', autocomplete: 'off', size: 14 });
  const from = h('input#f-from', { type: 'datetime-local', name: 'createdAfter', value: toLocalInput(f.createdAfter) });
  const to = h('input#f-to', { type: 'datetime-local', name: 'createdBefore', value: toLocalInput(f.createdBefore) });
  const stalled = h('input#f-stalled', { type: 'checkbox', name: 'stalled', checked: f.stalled === 'true' });
  const order = h('select#f-order', { name: 'order' },
    h('option', { value: states ? '' : 'newest', selected: states ? f.order !== 'oldest' : f.order === 'newest' }, 'newest first'),
    h('option', { value: states ? 'oldest' : '', selected: states ? f.order === 'oldest' : f.order !== 'newest' }, 'oldest first'));
  let stateSelect = null;
  if (states) {
    stateSelect = h('select#f-state', { name: 'state' },
      h('option', { value: '' }, 'any state'),
      PROCESS_STATES.map((s) => h('option', { value: s, selected: s === f.state }, s.replace('_', ' '))));
  }
  const read = () => ({
    q: search.value.trim(),
    definition: defSelect.value,
    state: stateSelect ? stateSelect.value : '',
    node: node.value.trim(),
    context: ctx.value.split(/\s+/).filter((x) => x.includes('=')),
    createdAfter: toRFC3339(from.value),
    createdBefore: toRFC3339(to.value),
    stalled: stalled.checked ? 'true' : '',
    order: order.value,
    parentToken: f.parentToken,
  });
  // On a narrow screen the less used filters fold away (open when one is set).
  const extras = [
    h('div.filter', h('label', { for: 'f-node' }, 'Waiting at'), node, nodes),
    h('div.filter', h('label', { for: 'f-context' }, 'Context'), ctx),
    h('div.filter', h('label', { for: 'f-from' }, 'Created from'), from),
    h('div.filter', h('label', { for: 'f-to' }, 'to'), to),
    h('div.filter.check', stalled, h('label', { for: 'f-stalled' }, 'stalled only')),
    h('div.filter', h('label', { for: 'f-order' }, 'Order'), order),
  ];
  const anyExtra = !!(f.node || f.context.length || f.createdAfter || f.createdBefore || f.stalled || f.order);
  const narrow = window.matchMedia && window.matchMedia('(max-width: 700px)').matches;
  const more = narrow ? h('details.more-filters', { open: anyExtra }, h('summary', 'More filters'), h('div.filters-inner', extras)) : extras;
  const form = h('form.filters', {
    'aria-label': 'Filters',
    onsubmit: (e) => { e.preventDefault(); trail = { key: '', cursors: [] }; navigate(routeOf(base, read())); },
  },
  h('div.filter', h('label', { for: 'f-q' }, 'Search'), search),
  h('div.filter', h('label', { for: 'f-definition' }, 'Definition'), defSelect),
  stateSelect ? h('div.filter', h('label', { for: 'f-state' }, 'State'), stateSelect) : null,
  more,
  f.parentToken ? h('span.chip', 'nested under token ', idCode(f.parentToken), ' ',
    h('a', { href: routeOf(base, { ...f, parentToken: '' }), 'aria-label': 'Remove the parent token filter' }, '×')) : null,
  h('div.filter-buttons',
    h('button.primary', { type: 'submit', 'data-action-filter': 'apply' }, 'Apply'),
    h('a.button', { href: `#/${base}` }, 'Clear')));
  for (const el of [defSelect, stateSelect, stalled, order].filter(Boolean)) {
    el.addEventListener('change', () => { if (el === defSelect) fillNodes(); form.requestSubmit(); });
  }
  return form;
}

// countLine says how many a list holds and which it shows.
function countLine(page, shown, noun, nouns) {
  if (page.total === undefined || page.total === null) return null;
  const total = page.totalCapped ? `more than ${page.total.toLocaleString()}` : page.total.toLocaleString();
  const word = page.total === 1 && !page.totalCapped ? noun : nouns;
  return h('p.count', { 'data-total': page.total, 'data-capped': page.totalCapped ? 'yes' : 'no' },
    shown < page.total || page.totalCapped ? `${total} ${word}; ${shown} shown` : `${total} ${word}`);
}

function pager(base, f, after, next) {
  const nav = h('nav.pager', { 'aria-label': 'Pages' });
  if (after) {
    nav.append(h('button', {
      type: 'button', 'data-pager': 'previous',
      onclick: () => { const prev = trail.cursors.pop() || ''; navigate(routeOf(base, f, { after: prev })); },
    }, '← Previous'));
  }
  if (next) {
    nav.append(h('button', {
      type: 'button', 'data-pager': 'next',
      onclick: () => { trail.cursors.push(after); navigate(routeOf(base, f, { after: next })); },
    }, 'Next →'));
  }
  return nav.childNodes.length ? nav : null;
}

// waitingWords says where a process waits, in short.
export function waitWords(w) {
  const node = w.external ? `${w.external}:${w.node}` : w.node;
  switch (w.kind) {
    case 'join': return `${node} (join)`;
    case 'delayed': return `${node} (delayed)`;
    case 'nested': return `${node} (nested)`;
    case 'incident': return `${node} (incident)`;
    default: return node;
  }
}

function waitingCell(p) {
  const ws = p.waitingAt || [];
  if (!ws.length) return h('span.muted', '—');
  const seen = [];
  for (const w of ws) { const s = waitWords(w); if (!seen.includes(s)) seen.push(s); }
  if (p.waitingMore) seen.push(`+${p.waitingMore} more`);
  return h('span.waiting', seen.map((s, i) => [i ? ', ' : '', h('span', { class: /\((join|incident)\)/.test(s) ? 'wait-warn' : '' }, s)]));
}

export async function processesView(el, query, session) {
  const f = filtersOf(query);
  const after = query.get('after') || '';
  const key = JSON.stringify(f);
  if (trail.key !== key) trail = { key, cursors: [] };

  const head = h('div.page-head', h('h1', 'Processes'));
  if (session.canAct) {
    head.append(h('div.actions', h('button', { type: 'button', 'data-action': 'send-event', onclick: () => sendEventDialog() }, 'Send an event…')));
  }
  el.append(head, await filterForm('processes', f, { states: true }));
  const page = await api.processesPage({ ...f, context: f.context }, after, 25);
  const items = page.items || [];
  if (!items.length) {
    el.append(h('p.empty', after ? 'No more processes.' : 'No process matches these filters.'));
    return;
  }
  el.append(countLine(page, items.length, 'process', 'processes'));
  el.append(h('div.table-wrap', { tabindex: '0', role: 'region', 'aria-label': 'Processes (scrolls sideways on a narrow screen)' }, h('table.list.processes',
    h('caption.visually-hidden', 'Processes'),
    h('thead', h('tr', ['process', 'definition', 'state', 'waiting at', 'context', 'started', 'parent'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', items.map((p) => h('tr', { 'data-row': p.id, class: p.stalled ? 'stalled' : '' },
      h('td.id-cell', h('a', { href: routeHref('processes', p.id), 'data-process': p.id, title: p.id }, h('code', shortId(p.id))), ' ', copyButton(p.id, '')),
      h('td', h('a', { href: routeHref('definitions', p.definition, 'versions', p.version) }, `${p.definition} v${p.version}`)),
      h('td', stateBadge(p.state), p.stalled ? h('span.badge.stalled', { title: 'No active token; joins wait for arcs that nothing will complete' }, 'stalled') : null),
      h('td', waitingCell(p)),
      h('td', contextChips(p.context) || h('span.muted', '—')),
      h('td', fmtTime(p.createdAt)),
      h('td', p.parentToken ? h('button.link', { type: 'button', onclick: () => openParent(p.parentToken) }, 'parent process') : h('span.muted', '—'))))))));
  const nav = pager('processes', f, after, page.next);
  if (nav) el.append(nav);
}

async function openParent(tokenId) {
  try {
    const t = await api.nodeToken(tokenId);
    navigate(routeHref('processes', t.process));
  } catch (err) { errorToast(err); }
}

const KIND_WORDS = {
  token: 'active token', nested: 'nested process runs', delayed: 'delayed', join: 'join', incident: 'incident open',
};

// The waiting work of executing processes: every active token and waiting
// join, oldest process first.
export async function waitingView(el, query, session) {
  const f = filtersOf(query);
  const after = query.get('after') || '';
  const key = `w${JSON.stringify(f)}`;
  if (trail.key !== key) trail = { key, cursors: [] };
  const head = h('div.page-head', h('div', h('h1', 'Waiting work'),
    h('p.sub', 'Every active token and every join where arcs wait, in the executing processes; the longest waiting first.')));
  if (session.canAct) {
    head.append(h('div.actions', h('button', { type: 'button', 'data-action': 'send-event', onclick: () => sendEventDialog() }, 'Send an event…')));
  }
  el.append(head, await filterForm('waiting', f, { states: false }));
  const page = await api.waiting({ ...f, context: f.context }, after, 50);
  const items = page.items || [];
  if (!items.length) {
    el.append(h('p.empty', after ? 'No more waiting work.' : 'Nothing waits.'));
    return;
  }
  const processes = new Set(items.map((i) => i.process)).size;
  el.append(countLine(page, processes, 'process waits', 'processes wait'));
  const now = Date.now();
  el.append(h('div.table-wrap', { tabindex: '0', role: 'region', 'aria-label': 'Waiting work (scrolls sideways on a narrow screen)' }, h('table.list.waiting',
    h('caption.visually-hidden', 'Waiting work'),
    h('thead', h('tr', ['node', 'waits', 'since', 'for', 'process', 'definition', 'context'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', items.map((w) => h('tr', { 'data-wait': `${w.process} ${w.node} ${w.kind}`, class: w.stalled || w.kind === 'incident' ? 'stalled' : '' },
      h('td', h('strong', w.external ? `${w.external}:${w.node}` : w.node)),
      h('td', KIND_WORDS[w.kind] || w.kind, w.kind === 'delayed' && w.until ? h('span.muted', ` until ${fmtTime(w.until)}`) : null,
        w.kind === 'join' ? h('span.muted.join-progress', { 'data-join': w.node }, ` (${joinProgressWords(w)})`) : null, w.stalled ? h('span.badge.stalled', 'stalled') : null),
      h('td', fmtTime(w.since)),
      h('td.num', fmtAgo(w.since, now)),
      h('td.id-cell', h('a', { href: routeHref('processes', w.process), 'data-process': w.process, title: w.process }, h('code', shortId(w.process)))),
      h('td', `${w.definition} v${w.version}`),
      h('td', contextChips(w.context) || h('span.muted', '—'))))))));
  const nav = pager('waiting', f, after, page.next);
  if (nav) el.append(nav);
  fillJoinProgress(el, items);
}

// A list gives a join only how many arc tokens wait there; the process
// says how many its strategy needs. Each process with a join row is read
// once, and its joins' rows say "2 of 3 arcs arrived".
async function fillJoinProgress(el, items) {
  const ids = [...new Set(items.filter((w) => w.kind === 'join').map((w) => w.process))];
  await Promise.all(ids.map(async (id) => {
    const p = await api.process(id).catch(() => null);
    if (!p) return;
    for (const w of p.waitingAt || []) {
      if (w.kind !== 'join' || !(w.progress || []).length) continue;
      const row = el.querySelector(`tr[data-wait="${CSS.escape(`${id} ${w.node} join`)}"]`);
      const span = row && row.querySelector('.join-progress');
      if (span) { span.textContent = ` (${joinProgressWords(w)})`; span.dataset.progress = 'yes'; }
    }
  }));
}
