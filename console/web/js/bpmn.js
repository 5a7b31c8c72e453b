// The BPMN view: a BPMN definition drawn with bpmn-js from the file's own
// diagram (its BPMNDiagram), and, on a process page, the live overlay
// Camunda Operate users know: how many tokens are active on each element,
// the path taken so far, incidents, the tasks and jobs waiting; a click on
// an element shows its tokens. Open tasks can be completed from here.

import { api, request } from './api.js';
import { h, clear, shortId, fmtClock, modal, attributeEditor, toast, errorToast } from './ui.js';

export function isBPMNDefinition(def) {
  return !!def && def.format === 'bpmn';
}

// The viewer's script and styles, loaded once.
let loading = null;
function loadViewer() {
  if (window.BpmnJS) return Promise.resolve(window.BpmnJS);
  if (loading) return loading;
  for (const css of ['/vendor/diagram-js.css', '/vendor/bpmn-js.css']) {
    if (!document.querySelector(`link[href="${css}"]`)) {
      document.head.append(h('link', { rel: 'stylesheet', href: css }));
    }
  }
  loading = new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = '/vendor/bpmn-navigated-viewer.production.min.js';
    s.onload = () => (window.BpmnJS ? resolve(window.BpmnJS) : reject(new Error('bpmn-js did not load')));
    s.onerror = () => { loading = null; reject(new Error('The BPMN viewer could not be loaded (run `make console`).')); };
    document.head.append(s);
  });
  return loading;
}

// bpmnDiagram draws a definition's file. It resolves with the viewer, or
// null when the file has no diagram to draw.
export function bpmnDiagram(def, { onSelect } = {}) {
  const canvasEl = h('div.bpmn-canvas', { 'data-bpmn': def.name, role: 'img', 'aria-label': `BPMN diagram of ${def.name}` });
  const note = h('p.muted.small.bpmn-note');
  const el = h('div.bpmn-view', canvasEl, note);
  let viewer = null;
  const ready = (async () => {
    const xml = await api.definitionSource(def.name, def.version);
    if (!/BPMNDiagram/.test(xml)) {
      note.textContent = 'The file has no diagram (BPMN DI): only the graph below shows it.';
      canvasEl.hidden = true;
      return null;
    }
    const BpmnJS = await loadViewer();
    viewer = new BpmnJS({ container: canvasEl });
    const { warnings } = await viewer.importXML(xml);
    if (warnings && warnings.length) note.textContent = `${warnings.length} drawing warning(s) from bpmn-js.`;
    try { viewer.get('canvas').zoom('fit-viewport', 'auto'); } catch { /* an empty diagram */ }
    viewer.get('eventBus').on('element.click', (e) => {
      const id = e.element && (e.element.businessObject ? e.element.businessObject.id : e.element.id);
      if (id && onSelect) onSelect(id);
    });
    canvasEl.dataset.ready = 'true';
    return viewer;
  })();
  return {
    el,
    ready,
    destroy: () => { if (viewer) viewer.destroy(); },
    viewer: () => viewer,
  };
}

// overlayOf computes, from a process's tokens and its open work, what the
// diagram shows on each element.
export function overlayOf(tokens, work) {
  const elements = new Map();
  const at = (id) => {
    if (!elements.has(id)) elements.set(id, { active: 0, done: 0, tasks: [], jobs: [], incidents: [] });
    return elements.get(id);
  };
  for (const t of tokens.nodeTokens) {
    if (t.external) continue;
    const e = at(t.node);
    if (t.complete) e.done++;
    else e.active++;
  }
  const taken = new Set();
  for (const a of tokens.arcTokens) {
    if (a.complete && a.child && a.arc && a.arc.name) taken.add(a.arc.name);
  }
  for (const t of work.tasks) at(t.node).tasks.push(t);
  for (const j of work.jobs) at(j.node).jobs.push(j);
  for (const i of work.incidents) at(i.node).incidents.push(i);
  return { elements, taken };
}

// bpmnPanel is the process page's BPMN section: the diagram with its
// overlay and the open work (tasks, jobs, incidents) of the process.
export function bpmnPanel(def, processId, session, { onSelect, onChange } = {}) {
  const diagram = bpmnDiagram(def, { onSelect });
  const workBox = h('div.bpmn-work');
  const el = h('section.panel.bpmn-panel', { 'aria-labelledby': 'h-bpmn' },
    h('h2#h-bpmn', 'BPMN diagram'), diagram.el,
    h('div.bpmn-legend.small.muted',
      h('span.lg.lg-active', 'active tokens'), ' ', h('span.lg.lg-done', 'completed'), ' ',
      h('span.lg.lg-incident', 'incident'), ' ', h('span.lg.lg-work', 'task or job waiting')),
    h('h2', 'Open work'), workBox);
  let overlayIds = [];
  let marked = [];
  let last = { tokens: { nodeTokens: [], arcTokens: [] }, work: { tasks: [], jobs: [], incidents: [] } };

  async function loadWork() {
    const q = `process=${encodeURIComponent(processId)}`;
    const [tasks, jobs, incidents] = await Promise.all([
      request('GET', `/tasks?${q}&state=open,claimed&limit=1000`).then((p) => p.items || []).catch(() => []),
      request('GET', `/jobs?${q}&state=open,leased,failed&limit=1000`).then((p) => p.items || []).catch(() => []),
      request('GET', `/incidents?${q}&state=open&limit=1000`).then((p) => p.items || []).catch(() => []),
    ]);
    return { tasks, jobs, incidents };
  }

  function drawOverlay(viewer, ov) {
    const overlays = viewer.get('overlays');
    const canvas = viewer.get('canvas');
    const registry = viewer.get('elementRegistry');
    for (const id of overlayIds) overlays.remove(id);
    overlayIds = [];
    for (const [id, cls] of marked) canvas.removeMarker(id, cls);
    marked = [];
    const mark = (id, cls) => { canvas.addMarker(id, cls); marked.push([id, cls]); };
    for (const [id, e] of ov.elements) {
      if (!registry.get(id)) continue;
      if (e.done) mark(id, 'veena-done');
      if (e.active) {
        mark(id, 'veena-active');
        overlayIds.push(overlays.add(id, 'veena', {
          position: { bottom: 8, left: -8 },
          html: `<span class="veena-badge veena-badge-active" data-element="${id}" title="${e.active} active token(s)">${e.active}</span>`,
        }));
      }
      if (e.tasks.length || e.jobs.length) {
        mark(id, 'veena-work');
        const what = e.tasks.length ? `${e.tasks.length} task` : `${e.jobs.length} job`;
        overlayIds.push(overlays.add(id, 'veena', {
          position: { top: -10, right: 10 },
          html: `<span class="veena-badge veena-badge-work" data-work="${id}" title="${what}(s) waiting">${e.tasks.length ? 'task' : 'job'}</span>`,
        }));
      }
      if (e.incidents.length) {
        mark(id, 'veena-incident');
        const msg = e.incidents.map((i) => i.message).join('\n').replace(/"/g, '&quot;').replace(/</g, '&lt;');
        overlayIds.push(overlays.add(id, 'veena', {
          position: { top: -10, left: -10 },
          html: `<span class="veena-badge veena-badge-incident" data-incident="${id}" title="${msg}">!</span>`,
        }));
      }
    }
    for (const flow of ov.taken) if (registry.get(flow)) mark(flow, 'veena-taken');
  }

  function renderWork(work) {
    clear(workBox);
    const rows = [];
    for (const i of work.incidents) {
      rows.push(h('li.work-item.incident', { 'data-incident': i.id, 'data-node': i.node },
        h('strong', 'Incident '), h('code', i.kind), ' at ', h('strong', i.node), ': ', i.message,
        session.canAct ? [' ', h('button.small', { type: 'button', 'data-action': 'resolve', onclick: () => resolve(i) }, 'Resolve…')] : null));
    }
    for (const t of work.tasks) {
      const who = t.assignee ? `assigned to ${t.assignee}` : (t.candidateGroups || []).length ? `for ${t.candidateGroups.join(', ')}` : 'unassigned';
      rows.push(h('li.work-item.task', { 'data-task': t.id, 'data-node': t.node },
        h('strong', 'Task '), t.label || t.node, h('span.muted', ` · ${who} · ${t.state} · since ${fmtClock(t.createdAt)}`),
        session.canAct ? [' ', h('button.small.primary', { type: 'button', 'data-action': 'complete-task', 'data-node': t.node, onclick: () => completeTask(t) }, 'Complete task…')] : null));
    }
    for (const j of work.jobs) {
      rows.push(h('li.work-item.job', { 'data-job': j.id, 'data-node': j.node },
        h('strong', 'Job '), h('code', j.type), ' at ', j.node, h('span.muted', ` · ${j.state} · ${j.retries} retries left`)));
    }
    workBox.append(rows.length ? h('ul.work-list', rows) : h('p.muted', 'No task, job or incident is open.'));
  }

  async function completeTask(t) {
    const user = h('input', { id: 'task-user', value: session.name || 'console', 'aria-label': 'Completed by' });
    const outs = (def.arcs || []).filter((a) => a.from === t.node).map((a) => a.name).filter(Boolean);
    const outcome = h('select', { id: 'task-outcome', 'aria-label': 'Outcome' }, h('option', { value: '' }, 'the model decides'),
      outs.map((n) => h('option', { value: n }, n)));
    const data = attributeEditor('Data the task sets (optional)');
    const done = await modal('Complete the task',
      h('div', h('p', 'Complete ', h('strong', t.label || t.node), '.'),
        h('label', { for: 'task-user' }, 'Completed by '), user,
        outs.length > 1 ? [h('label', { for: 'task-outcome' }, ' Leave on '), outcome] : null,
        data.el),
      {
        submitLabel: 'Complete task',
        onSubmit: () => request('POST', `/tasks/${encodeURIComponent(t.id)}/complete`, {
          json: { user: user.value, data: data.value(), outcome: outcome.value || undefined },
        }),
      });
    if (done) {
      toast(`Completed the task ${t.label || t.node}.`, 'ok');
      if (onChange) onChange();
    }
  }

  async function resolve(i) {
    const done = await modal('Resolve the incident',
      h('p', 'Run the step at ', h('strong', i.node), ' again (after fixing the variables)?'),
      { submitLabel: 'Resolve', onSubmit: () => request('POST', `/incidents/${encodeURIComponent(i.id)}/resolve`, { json: { retries: 1 } }) });
    if (done) {
      toast('The incident was resolved.', 'ok');
      if (onChange) onChange();
    }
  }

  async function refresh(tokens) {
    try {
      const work = await loadWork();
      last = { tokens, work };
      renderWork(work);
      const viewer = await diagram.ready;
      if (viewer) drawOverlay(viewer, overlayOf(tokens, work));
      el.dataset.refreshed = String(Date.now());
    } catch (err) { errorToast(err); }
  }

  return { el, refresh, destroy: diagram.destroy, last: () => last, shortId };
}
