// The work views: the Tasklist (inboxes by user, group and queue; claim and
// release; a form built from the task's data to save for later or complete),
// the incidents view (resolve), and the record of a process page (audit
// trail and metrics). Everything goes through the HTTP API.

import { api, request } from './api.js';
import { h, clear, fmtTime, shortId, errorToast, showError, fmtValue } from './ui.js';

const enc = encodeURIComponent;
const ACTOR_KEY = 'veena.actor';

// The work endpoints, beside those of api.js.
export const workApi = {
  tasks: (params) => request('GET', `/tasks?${new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '' && v !== undefined && v !== null))}`),
  task: (id) => request('GET', `/tasks/${enc(id)}`),
  claim: (id, actor) => request('POST', `/tasks/${enc(id)}/claim`, { json: actor }),
  release: (id, actor) => request('POST', `/tasks/${enc(id)}/release`, { json: actor }),
  save: (id, actor, data, release) => request('PATCH', `/tasks/${enc(id)}`, { json: { ...actor, data, release: !!release } }),
  complete: (id, actor, data, outcome) => request('POST', `/tasks/${enc(id)}/complete`, { json: { ...actor, data, ...(outcome ? { outcome } : {}) } }),
  incidents: (state, process) => request('GET', `/incidents?${new URLSearchParams({ state, ...(process ? { process } : {}), limit: 1000 })}`),
  resolve: (id, body) => request('POST', `/incidents/${enc(id)}/resolve`, { json: body }),
  jobs: (process) => request('GET', `/jobs?${new URLSearchParams({ process, limit: 1000 })}`),
  audit: (id) => request('GET', `/processes/${enc(id)}/audit?limit=1000`),
  metrics: (id) => request('GET', `/processes/${enc(id)}/metrics?limit=1000`),
  attachments: (id) => request('GET', `/processes/${enc(id)}/attachments`),
};

// The user the console acts as on a server without access tokens (chosen
// on the Tasklist, kept in this tab); with a token, the token's user acts
// and the server needs no name.
function storedActor() {
  try { return JSON.parse(sessionStorage.getItem(ACTOR_KEY) || '{}'); } catch { return {}; }
}
function storeActor(a) {
  try { sessionStorage.setItem(ACTOR_KEY, JSON.stringify(a)); } catch { /* storage disabled */ }
}
function actorOf(session) {
  if (session.role !== 'open') return { user: session.name, groups: session.groups || [], token: true };
  const a = storedActor();
  return { user: a.user || '', groups: a.groups || [], token: false };
}
// The body fields naming the actor (none with a token).
function actorBody(actor) {
  if (actor.token) return {};
  return { user: actor.user, ...(actor.groups.length ? { groups: actor.groups } : {}) };
}

function stateBadge(state) {
  return h('span', { class: `badge st-${state}`, 'data-task-state': state }, state);
}

// ---------------------------------------------------------------- Tasklist

export async function tasklistView(el, query, session) {
  let actor = actorOf(session);
  const filter = {
    scope: query.get('scope') || 'mine', // mine, group, queue, all
    group: query.get('group') || '',
    queue: query.get('queue') || '',
    state: query.get('state') || '',
  };
  let selected = query.get('task') || '';
  let tasks = [];
  let destroyed = false;

  const userIn = h('input#actor-user', { type: 'text', value: actor.user, placeholder: 'your user name', autocomplete: 'username', disabled: actor.token });
  const groupsIn = h('input#actor-groups', { type: 'text', value: actor.groups.join(', '), placeholder: 'groups, comma-separated', disabled: actor.token });
  const scopeSel = h('select#scope', { 'aria-label': 'Which tasks' },
    [['mine', 'My tasks (mine and my groups)'], ['group', 'A group'], ['queue', 'A queue'], ['all', 'All open tasks']]
      .map(([v, t]) => h('option', { value: v, selected: filter.scope === v }, t)));
  const groupIn = h('input#filter-group', { type: 'text', value: filter.group, placeholder: 'group', 'aria-label': 'group' });
  const queueIn = h('input#filter-queue', { type: 'text', value: filter.queue, placeholder: 'queue', 'aria-label': 'queue' });
  const stateSel = h('select#filter-state', { 'aria-label': 'State' },
    [['', 'open and claimed'], ['open', 'open'], ['claimed', 'claimed'], ['completed', 'completed'], ['canceled', 'canceled']]
      .map(([v, t]) => h('option', { value: v, selected: filter.state === v }, t)));
  const refreshBtn = h('button.small', { type: 'button', 'data-action': 'refresh-tasks', onclick: () => load() }, 'Refresh');
  const listBox = h('div.table-wrap.tasklist', { 'aria-live': 'polite' });
  const panel = h('aside.panel.side.task-panel', { 'aria-labelledby': 'h-task' });
  const status = h('p.muted.small');

  function syncFilterInputs() {
    groupIn.hidden = filter.scope !== 'group';
    queueIn.hidden = filter.scope !== 'queue';
  }
  syncFilterInputs();

  const form = h('form.task-filters.card', {
    onsubmit: (e) => { e.preventDefault(); applyFilters(); },
  },
  h('div.filter-row',
    h('label', { for: 'actor-user' }, 'Acting as'), userIn, groupsIn,
    actor.token ? h('span.muted.small', '(your access token says who you are)') : null),
  h('div.filter-row',
    h('label', { for: 'scope' }, 'Show'), scopeSel, groupIn, queueIn, stateSel,
    h('button.primary', { type: 'submit', 'data-action': 'apply-filters' }, 'Show tasks'), refreshBtn));
  scopeSel.addEventListener('change', () => { filter.scope = scopeSel.value; syncFilterInputs(); });

  el.append(h('div.page-head', h('div', h('h1', 'Tasklist'),
    h('p.sub', 'Work waiting for people: claim a task to lock it, save it for later, complete it.'))),
  form, h('div.split',
    h('section.panel', { 'aria-labelledby': 'h-tasks' }, h('h2#h-tasks', 'Tasks'), status, listBox),
    panel));

  function applyFilters() {
    if (!actor.token) {
      actor = { user: userIn.value.trim(), groups: groupsIn.value.split(',').map((s) => s.trim()).filter(Boolean), token: false };
      storeActor({ user: actor.user, groups: actor.groups });
    }
    filter.group = groupIn.value.trim();
    filter.queue = queueIn.value.trim();
    filter.state = stateSel.value;
    load();
  }

  function params() {
    const p = { limit: 200 };
    if (filter.state) p.state = filter.state;
    if (filter.scope === 'mine') {
      p.mine = 'true';
      if (!actor.token) { p.user = actor.user; if (actor.groups.length) p.groups = actor.groups.join(','); }
    } else if (filter.scope === 'group') p.candidateGroup = filter.group;
    else if (filter.scope === 'queue') p.queue = filter.queue;
    return p;
  }

  async function load() {
    if (filter.scope === 'mine' && !actor.token && !actor.user) {
      clear(listBox).append(h('p.muted', 'Enter your user name above to see your tasks.'));
      renderPanel();
      return;
    }
    try {
      const page = await workApi.tasks(params());
      if (destroyed) return;
      tasks = page.items || [];
      status.textContent = `${tasks.length} task${tasks.length === 1 ? '' : 's'} · updated ${new Date().toLocaleTimeString()}`;
      renderList();
      if (selected) await renderPanel();
    } catch (err) { if (!destroyed) errorToast(err); }
  }

  function heldBy(t) {
    if (!t.claimedBy) return h('span.muted', 'free');
    const mine = t.claimedBy === actor.user;
    return h('span', { class: mine ? 'held mine' : 'held other', 'data-held-by': t.claimedBy }, mine ? `you (${t.claimedBy})` : t.claimedBy);
  }

  function renderList() {
    clear(listBox);
    if (!tasks.length) { listBox.append(h('p.muted.empty', 'No tasks here.')); return; }
    listBox.append(h('table.list.tasks',
      h('thead', h('tr', ['Task', 'State', 'Held by', 'Priority', 'Due', 'Offered to', 'Process'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', tasks.map((t) => h('tr', {
        class: t.id === selected ? 'selected' : '', 'data-task': t.id, tabindex: '0',
        onclick: () => select(t.id),
        onkeydown: (e) => { if (e.key === 'Enter') select(t.id); },
      },
      h('td', h('strong', t.label), h('div.muted.small', t.node)),
      h('td', stateBadge(t.state)),
      h('td', heldBy(t)),
      h('td', String(t.priority)),
      h('td', t.dueAt ? fmtTime(t.dueAt) : ''),
      h('td.small', [...(t.assignee ? [`assignee ${t.assignee}`] : []), ...t.candidateUsers, ...t.candidateGroups.map((g) => `@${g}`), ...(t.queue ? [`queue ${t.queue}`] : [])].join(', ')),
      h('td', h('a', { href: `#/processes/${enc(t.process)}`, title: t.process, onclick: (e) => e.stopPropagation() }, shortId(t.process))))))));
  }

  function select(id) {
    selected = id;
    renderList();
    renderPanel();
  }

  // The definition's arcs leaving a node: the outcomes a person may choose.
  const defCache = new Map();
  async function outcomesOf(task) {
    const proc = await api.process(task.process);
    const key = `${proc.definition}@${proc.version}`;
    if (!defCache.has(key)) defCache.set(key, await api.definition(proc.definition, proc.version));
    const def = defCache.get(key);
    const names = new Set();
    for (const a of def.arcs || []) {
      if (a.from === task.node && !a.fromExternal && a.name) names.add(a.name);
    }
    return [...names];
  }

  async function renderPanel() {
    clear(panel).append(h('h2#h-task', 'Task'));
    if (!selected) { panel.append(h('p.muted', 'Choose a task to work on it.')); return; }
    let t;
    try { t = await workApi.task(selected); } catch (err) { showError(panel.appendChild(h('div.error-box', { role: 'alert' })), err); return; }
    if (destroyed || t.id !== selected) return;
    const open = t.state === 'open' || t.state === 'claimed';
    const mine = t.claimedBy && t.claimedBy === actor.user;
    const other = t.claimedBy && !mine;
    const canAct = session.canAct && open && !!actor.user;
    const msg = h('div.error-box', { role: 'alert', hidden: true });
    panel.append(
      h('p', h('strong.task-label', t.label), ' ', stateBadge(t.state)),
      h('dl.facts',
        h('dt', 'Held by'), h('dd', { 'data-field': 'held-by' }, t.claimedBy ? `${t.claimedBy} since ${fmtTime(t.claimedAt)}` : 'nobody'),
        h('dt', 'Node'), h('dd', t.node),
        h('dt', 'Process'), h('dd', h('a', { href: `#/processes/${enc(t.process)}`, title: t.process }, shortId(t.process)), ` (${t.definition})`),
        h('dt', 'Priority'), h('dd', String(t.priority)),
        t.dueAt ? [h('dt', 'Due'), h('dd', fmtTime(t.dueAt))] : null,
        t.followUpAt ? [h('dt', 'Follow up'), h('dd', fmtTime(t.followUpAt))] : null,
        t.completedAt ? [h('dt', 'Ended'), h('dd', `${fmtTime(t.completedAt)}${t.completedBy ? ` by ${t.completedBy}` : ''}`)] : null),
      msg);
    if (other && open) panel.append(h('p.notice', { 'data-notice': 'taken' }, `${t.claimedBy} is working on this task. You can see it, but not change it.`));

    // act runs an action, then shows the task as it is now, with what came
    // of the action below it (the panel is drawn anew).
    const act = async (fn, done, ok) => {
      msg.hidden = true;
      let failure = null;
      try {
        await fn();
        if (done) done();
      } catch (err) { failure = err; }
      await load();
      if (failure) {
        const box = h('div.error-box', { role: 'alert', 'data-error': failure.code || 'error' });
        showError(box, failure);
        panel.append(box);
      } else if (ok) {
        panel.append(h('p.ok-note', { 'data-ok': ok, role: 'status' }, ok));
      }
    };
    const actorJSON = actorBody(actor);
    const buttons = h('div.buttons');
    if (canAct && !t.claimedBy) buttons.append(h('button.primary', { type: 'button', 'data-action': 'claim', onclick: () => act(() => workApi.claim(t.id, actorJSON)) }, 'Claim'));
    if (canAct && mine) buttons.append(h('button', { type: 'button', 'data-action': 'release', onclick: () => act(() => workApi.release(t.id, actorJSON)) }, 'Release'));
    if (canAct && other) buttons.append(h('button', { type: 'button', 'data-action': 'claim', onclick: () => act(() => workApi.claim(t.id, actorJSON)) }, 'Try to claim'));
    panel.append(buttons);

    // The form: one field per attribute of the task's data.
    const editable = canAct && !other;
    const fields = h('div.task-fields');
    const inputs = new Map();
    const addField = (name, value) => {
      let input;
      const id = `f-${name.replace(/[^\w-]/g, '_')}`;
      if (typeof value === 'boolean') input = h('input', { type: 'checkbox', id, checked: value, disabled: !editable });
      else if (typeof value === 'number') input = h('input', { type: 'number', step: 'any', id, value: String(value), disabled: !editable });
      else if (value !== null && typeof value === 'object') input = h('textarea', { id, rows: 2, disabled: true }, JSON.stringify(value));
      else input = h('input', { type: 'text', id, value: value ?? '', disabled: !editable });
      input.dataset.field = name;
      inputs.set(name, { input, value });
      fields.append(h('div.field', h('label', { for: id }, name), input));
    };
    for (const k of Object.keys(t.data || {}).sort()) addField(k, t.data[k]);
    const newName = h('input', { type: 'text', placeholder: 'new field name', 'aria-label': 'new field name', disabled: !editable });
    const form2 = h('form.task-form', { onsubmit: (e) => e.preventDefault() },
      h('h3', 'Data'), fields,
      editable ? h('div.filter-row', newName, h('button.small', {
        type: 'button',
        onclick: () => { const n = newName.value.trim(); if (n && !inputs.has(n)) { addField(n, ''); newName.value = ''; } },
      }, '+ Field')) : null);
    panel.append(form2);
    const changed = () => {
      const out = {};
      for (const [name, { input, value }] of inputs) {
        if (input.disabled && input.tagName === 'TEXTAREA') continue;
        let v;
        if (input.type === 'checkbox') v = input.checked;
        else if (input.type === 'number') v = input.value === '' ? null : Number(input.value);
        else v = input.value;
        if (v !== value) out[name] = v;
      }
      return out;
    };
    if (editable && open) {
      const outcomes = await outcomesOf(t).catch(() => []);
      const outcomeSel = h('select#outcome', { 'aria-label': 'Outcome' },
        h('option', { value: '' }, outcomes.length ? 'default route' : 'complete'),
        outcomes.map((o) => h('option', { value: o }, o)));
      panel.append(h('div.buttons.task-actions',
        h('button', { type: 'button', 'data-action': 'save', onclick: () => act(() => workApi.save(t.id, actorJSON, changed(), false), null, 'Saved for later.') }, 'Save for later'),
        mine ? h('button', { type: 'button', 'data-action': 'save-release', onclick: () => act(() => workApi.save(t.id, actorJSON, changed(), true), null, 'Saved and released.') }, 'Save and release') : null),
      h('div.buttons.task-actions',
        h('label', { for: 'outcome' }, 'Outcome'), outcomeSel,
        h('button.primary', {
          type: 'button', 'data-action': 'complete',
          onclick: () => act(() => workApi.complete(t.id, actorJSON, changed(), outcomeSel.value), () => { selected = ''; }),
        }, 'Complete')));
    }
  }

  await load();
  const timer = setInterval(() => { if (!document.hidden) load(); }, 5000);
  return () => { destroyed = true; clearInterval(timer); };
}

// --------------------------------------------------------------- Incidents

export async function incidentsView(el, query, session) {
  let state = query.get('state') || 'open';
  const box = h('div.table-wrap.incidents');
  const stateSel = h('select#incident-state', { 'aria-label': 'State', onchange: () => { state = stateSel.value; load(); } },
    [['open', 'open'], ['resolved', 'resolved'], ['open,resolved', 'all']].map(([v, t]) => h('option', { value: v, selected: v === state }, t)));
  el.append(h('div.page-head', h('div', h('h1', 'Incidents'),
    h('p.sub', 'Problems that hold a process until someone resolves them: a job out of retries, an error nobody caught, a step that failed.')),
  h('div.actions', h('label', { for: 'incident-state' }, 'Show'), stateSel)), h('section.panel', box));
  let destroyed = false;

  async function load() {
    try {
      const page = await workApi.incidents(state);
      if (destroyed) return;
      render(page.items || []);
    } catch (err) { if (!destroyed) errorToast(err); }
  }

  function render(items) {
    clear(box);
    if (!items.length) { box.append(h('p.muted.empty', state === 'open' ? 'No open incidents.' : 'No incidents.')); return; }
    box.append(h('table.list.incidents',
      h('thead', h('tr', ['Kind', 'Node', 'Message', 'Process', 'Opened', 'State', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', items.map((i) => {
        const retries = h('input', { type: 'number', min: 1, value: 1, 'aria-label': `retries for ${i.id}`, class: 'retries' });
        const msg = h('div.error-box', { role: 'alert', hidden: true });
        const resolve = h('button.primary.small', {
          type: 'button', 'data-action': 'resolve', 'data-incident': i.id,
          onclick: async () => {
            try {
              await workApi.resolve(i.id, i.kind === 'job_failed' ? { retries: Number(retries.value) || 1 } : {});
              await load();
            } catch (err) { showError(msg, err); msg.hidden = false; }
          },
        }, i.kind === 'job_failed' ? 'Retry the job' : 'Run the step again');
        return h('tr', { 'data-incident': i.id },
          h('td', h('code', i.kind)),
          h('td', i.node),
          h('td.message', i.message),
          h('td', h('a', { href: `#/processes/${enc(i.process)}`, title: i.process }, shortId(i.process))),
          h('td', fmtTime(i.createdAt)),
          h('td', i.state === 'open' ? i.state : `resolved ${fmtTime(i.resolvedAt)}`),
          h('td', i.state === 'open' && session.canAct ? [i.kind === 'job_failed' ? [retries, ' '] : null, resolve, msg] : null));
      }))));
  }

  await load();
  const timer = setInterval(() => { if (!document.hidden) load(); }, 5000);
  return () => { destroyed = true; clearInterval(timer); };
}

// ---------------------------------------------------- the process record

// AUDIT_WORDS are the audit trail's actions as the record page says them
// (the action's code stays in the cell's title and the row's data-audit).
const AUDIT_WORDS = {
  process_started: 'process started',
  process_completed: 'process completed',
  process_canceled: 'process canceled',
  step_completed: 'step completed',
  backtracked: 'backtracked',
  task_created: 'task created',
  task_claimed: 'task claimed',
  task_released: 'task released',
  task_saved: 'task saved for later',
  task_completed: 'task completed',
  job_created: 'job created',
  job_completed: 'job completed',
  job_failed: 'job failed',
  job_error: 'job threw an error',
  incident_opened: 'incident opened',
  incident_resolved: 'incident resolved',
  env_changed: 'data changed',
  attachment_set: 'attachment set',
  message_correlated: 'message received',
  transition_fired: 'transition fired',
  action_completed: 'action completed',
};

// recordPanel shows a process's tasks, jobs and incidents, its audit trail
// and metrics; refresh() reads them again.
export function recordPanel(id) {
  const work = h('div.table-wrap.process-work');
  const audit = h('div.table-wrap.audit', { tabindex: '0', 'aria-label': 'Audit trail' });
  const metrics = h('div.table-wrap.metrics', { tabindex: '0', 'aria-label': 'Metrics' });
  const atts = h('div.attachments');
  const el = h('div.split.lower.record',
    h('section.panel', { 'aria-labelledby': 'h-audit' }, h('h2#h-audit', 'Audit trail'), audit),
    h('aside.panel.side',
      h('section', { 'aria-labelledby': 'h-work' }, h('h2#h-work', 'Tasks, jobs and incidents'), work),
      h('section', { 'aria-labelledby': 'h-metrics' }, h('h2#h-metrics', 'Metrics'), metrics),
      h('section', { 'aria-labelledby': 'h-atts' }, h('h2#h-atts', 'Attachments'), atts)));

  async function refresh() {
    try {
      const [a, m, t, j, inc, at] = await Promise.all([workApi.audit(id), workApi.metrics(id),
        workApi.tasks({ process: id, state: 'open,claimed,completed,canceled', limit: 1000 }), workApi.jobs(id),
        workApi.incidents('open,resolved', id), workApi.attachments(id)]);
      clear(audit).append((a.items || []).length ? h('table.list.audit-trail',
        h('thead', h('tr', ['When', 'Action', 'Node', 'User', 'Detail'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', a.items.map((e) => h('tr', { 'data-audit': e.action },
          h('td', fmtTime(e.at)), h('td', { title: e.action }, AUDIT_WORDS[e.action] || e.action), h('td', e.label || e.node || ''),
          h('td', { 'data-user': e.user || '' }, e.user || ''), h('td.small', e.detail || '')))))
        : h('p.muted', 'Nothing recorded yet.'));
      clear(metrics).append((m.items || []).length ? h('table.list.metric-table',
        h('thead', h('tr', ['Step', 'Took', 'OK'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', m.items.map((x) => h('tr', { class: x.success ? '' : 'failed' },
          h('td', x.label || x.node), h('td', fmtDuration(x.durationMs)), h('td', x.success ? '✓' : '✗')))))
        : h('p.muted', 'No step has finished yet.'));
      const rows = [
        ...(t.items || []).map((x) => h('li', 'task ', h('a', { href: `#/tasks?scope=all&state=${x.state}&task=${enc(x.id)}` }, x.label), ' ', stateBadge(x.state), x.claimedBy ? ` held by ${x.claimedBy}` : '')),
        ...(j.items || []).map((x) => h('li', 'job ', h('code', x.type), ' ', stateBadge(x.state), x.worker ? ` (${x.worker})` : '', ` retries ${x.retries}`)),
        ...(inc.items || []).map((x) => h('li', 'incident ', h('a', { href: '#/incidents' }, x.kind), ' ', stateBadge(x.state), ` ${x.message}`)),
      ];
      clear(work).append(rows.length ? h('ul.work-items', rows) : h('p.muted', 'None.'));
      clear(atts).append((at.items || []).length ? h('ul', at.items.map((x) => h('li', h('strong', x.name), ' ', x.uri ? h('code', x.uri) : h('span.muted', '(empty slot)'), x.cardinality !== 1 ? ` ×${x.cardinality}` : '')))
        : h('p.muted', 'None.'));
    } catch (err) { errorToast(err); }
  }
  return { el, refresh };
}

function fmtDuration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

export { fmtValue };
