// Definitions: the list, loading a file, a definition page with its graph,
// versions and source, and starting a process.

import { api } from './api.js';
import { h, clear, fmtTime, modal, attributeEditor, navigate, routeHref, toast, errorToast } from './ui.js';
import { isBPMNDefinition, bpmnDiagram } from './bpmn.js';
import { createGraphView, legend, joinWords, nodeKey, isStartNode, isSchemaNode, schemaActionLines } from './graph.js';
import { isNetDefinition, createNetView, netLegend, netNodesTable, analysisPanel } from './net.js';

export async function definitionsView(el, query, session) {
  const head = h('div.page-head', h('h1', 'Definitions'));
  if (session.canAct) {
    head.append(h('div.actions', h('button.primary', { type: 'button', 'data-action': 'load-definition', onclick: loadDefinitionDialog }, 'Load a definition…')));
  }
  el.append(head);
  const defs = await api.definitions();
  defs.sort((a, b) => String(a.name).localeCompare(String(b.name)));
  if (!defs.length) {
    el.append(h('p.empty', 'No definitions are loaded yet.', session.canAct ? ' Use “Load a definition…” to load a Sarasvati, BPMN, PNML or schema file.' : ''));
    return;
  }
  el.append(h('div.table-wrap', h('table.list',
    h('caption.visually-hidden', 'Loaded definitions, latest version of each'),
    h('thead', h('tr', ['name', 'latest version', 'format', 'nodes', 'loaded', ''].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', defs.map((d) => h('tr',
      h('td', h('a', { href: routeHref('definitions', d.name), 'data-definition': d.name }, d.name)),
      h('td.num', `v${d.version}`),
      h('td', d.format || ''),
      h('td.num', (d.nodes || []).length),
      h('td', fmtTime(d.createdAt)),
      h('td.row-actions',
        h('a', { href: `#/processes?definition=${encodeURIComponent(d.name)}` }, 'processes'),
        session.canAct ? h('button.small', { type: 'button', 'data-action': 'start-process', onclick: () => startProcessDialog(d) }, 'Start…') : null)))))));
}

export async function loadDefinitionDialog() {
  const file = h('input#def-file', { type: 'file', accept: '.xml,.wf.xml,.bpmn,.pnml,.json,.yaml,.yml' });
  const text = h('textarea#def-text', { rows: 12, spellcheck: 'false', placeholder: '<process-definition name="…">…</process-definition>' });
  const format = h('select#def-format',
    h('option', { value: '' }, 'detect from the content'),
    ['sarasvati', 'bpmn', 'pnml', 'schema'].map((f) => h('option', { value: f }, f)));
  file.addEventListener('change', async () => {
    if (file.files && file.files[0]) text.value = await file.files[0].text();
  });
  const body = h('div.form-grid',
    h('label', { for: 'def-file' }, 'Definition file'), file,
    h('label', { for: 'def-text' }, 'or paste its content'), text,
    h('label', { for: 'def-format' }, 'Format'), format);
  const def = await modal('Load a definition', body, {
    submitLabel: 'Load',
    onSubmit: async () => {
      if (!text.value.trim()) throw new Error('Choose a file or paste a definition first.');
      return api.loadDefinition(text.value, format.value);
    },
  });
  if (def && def.name) {
    toast(`Loaded ${def.name} version ${def.version}.`, 'ok');
    navigate(routeHref('definitions', def.name, 'versions', def.version));
  }
}

export async function startProcessDialog(def, version) {
  const attrs = attributeEditor('Process attributes (optional)');
  const context = attributeEditor('Context pairs (optional): events and searches find the process by them', { pairs: true });
  const versionIn = h('input#start-version', { type: 'number', min: 1, value: version || '', placeholder: `latest (v${def.version})` });
  const body = h('div',
    h('p', 'Start a process of ', h('strong', def.name), '. It runs until every token waits, then its page opens.'),
    h('div.form-grid', h('label', { for: 'start-version' }, 'Version'), versionIn),
    attrs.el, context.el);
  const proc = await modal(`Start a process`, body, {
    submitLabel: 'Start process',
    onSubmit: () => {
      const req = { definition: def.name };
      if (versionIn.value) req.version = Number(versionIn.value);
      const env = attrs.value();
      if (Object.keys(env).length) req.env = env;
      const ctx = context.value();
      if (Object.keys(ctx).length) req.context = ctx;
      return api.startProcessWith(req);
    },
  });
  if (proc && proc.id) navigate(routeHref('processes', proc.id));
}

export async function definitionView(el, name, version, session) {
  const latest = await api.definition(name);
  const def = version && String(version) !== String(latest.version) ? await api.definition(name, version) : latest;
  const v = def.version;

  const head = h('div.page-head',
    h('div',
      h('p.crumbs', h('a', { href: '#/definitions' }, 'Definitions'), ' / '),
      h('h1', def.name, ' ', h('span.version', `v${v}`))),
    h('div.actions',
      h('a.button', { href: `#/processes?definition=${encodeURIComponent(def.name)}` }, 'Processes'),
      session.canAct ? h('button.primary', { type: 'button', 'data-action': 'start-process', onclick: () => startProcessDialog(def, v) }, 'Start process…') : null));

  const versions = h('nav.versions', { 'aria-label': 'Versions' }, h('span.muted', 'Versions: '),
    Array.from({ length: Number(latest.version) || 1 }, (_, i) => i + 1).reverse().map((n) =>
      h('a', { href: routeHref('definitions', def.name, 'versions', n), 'aria-current': n === Number(v) ? 'page' : null }, `v${n}`)));

  const meta = h('dl.meta',
    h('dt', 'format'), h('dd', def.format || ''),
    h('dt', 'loaded'), h('dd', fmtTime(def.createdAt)),
    h('dt', 'hash'), h('dd', h('code', String(def.hash || '').slice(0, 16))),
    h('dt', 'size'), h('dd', `${(def.nodes || []).length} nodes, ${(def.arcs || []).length} arcs`));

  const isNet = isNetDefinition(def);
  const graph = isNet ? createNetView(def, {
    onSelect: (kind, ref) => {
      const row = nodesTable.querySelector(`[data-key="${CSS.escape(ref)}"]`);
      for (const r of nodesTable.querySelectorAll('tr.selected')) r.classList.remove('selected');
      if (row) { row.classList.add('selected'); row.scrollIntoView({ block: 'nearest' }); }
    },
  }) : createGraphView(def, {
    onSelectNode: (n, key) => {
      const row = nodesTable.querySelector(`[data-key="${CSS.escape(key)}"]`);
      for (const r of nodesTable.querySelectorAll('tr.selected')) r.classList.remove('selected');
      if (row) { row.classList.add('selected'); row.scrollIntoView({ block: 'nearest' }); }
    },
  });

  const schema = (def.nodes || []).some(isSchemaNode);
  const nodesTable = isNet ? netNodesTable(def, (ref) => graph.select(ref)) : schema ? schemaNodesTable(def, (key) => graph.select(key)) : h('table.list.nodes',
    h('caption', 'Nodes'),
    h('thead', h('tr', ['node', 'type', 'join', 'guard'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', (def.nodes || []).map((n) => {
      const key = nodeKey(n.name, n.external);
      return h('tr', { 'data-key': key },
        h('td', h('button.link', { type: 'button', onclick: () => graph.select(key), title: 'Show in the graph' },
          isStartNode(n) ? '▶ ' : '', n.external ? `${n.external} / ` : '', n.name)),
        h('td', n.type || 'node'),
        h('td', joinWords(n)),
        h('td', n.guard ? h('code', n.guard) : h('span.muted', '—')));
    })));

  const sourceBox = h('pre.source', { tabindex: '0' }, 'Loading…');
  const download = h('a.button', { href: '#', download: `${def.name}.v${v}` }, 'Download');
  download.addEventListener('click', async (e) => {
    if (download.dataset.ready) return;
    e.preventDefault();
    try {
      const text = await api.definitionSource(def.name, v);
      download.href = URL.createObjectURL(new Blob([text], { type: 'application/octet-stream' }));
      download.dataset.ready = '1';
      download.click();
    } catch (err) { errorToast(err); }
  });
  const source = h('details.source-panel',
    h('summary', 'Source file'),
    h('div.buttons', download), sourceBox);
  source.addEventListener('toggle', async () => {
    if (!source.open || sourceBox.dataset.loaded) return;
    try {
      sourceBox.textContent = await api.definitionSource(def.name, v);
      sourceBox.dataset.loaded = '1';
    } catch (err) { sourceBox.textContent = err.message; }
  });

  const schemaMeta = schema && def.detail ? h('dl.meta',
    h('dt', 'routing keys'), h('dd', (def.detail.routingKeys || []).join(', ') || '—'),
    h('dt', 'trigger'), h('dd', def.detail.trigger ? `${def.detail.trigger.event}${def.detail.trigger.from ? ' from the parent' : ''}${def.detail.trigger.when ? ` when ${def.detail.trigger.when}` : ''}` : 'none (started by hand)'),
    h('dt', 'almanac'), h('dd', h('code', JSON.stringify(def.detail.almanac || {}))),
    def.detail.parent ? [h('dt', 'parent'), h('dd', h('a', { href: routeHref('definitions', def.detail.parent) }, def.detail.parent))] : null,
    (def.detail.children || []).length ? [h('dt', 'children'), h('dd', def.detail.children.map((c, i) => [i ? ', ' : '', h('a', { href: routeHref('definitions', c) }, c)]))] : null) : null;

  el.append(head, versions, h('div.split',
    h('section.panel.graph-panel', { 'aria-label': 'Graph' }, graph.el, isNet ? netLegend(false) : legend(false, def)),
    h('aside.panel.side', meta, schemaMeta, analysisPanel(def), h('div.table-wrap.nodes-wrap', { tabindex: '0', 'aria-label': 'Nodes' }, nodesTable), source)));
  graph.ready.catch(() => {});
  // A BPMN definition is drawn from its file's own diagram, above the graph.
  const diagram = isBPMNDefinition(def) ? bpmnDiagram(def, { onSelect: (id) => graph.select(nodeKey(id, '')) }) : null;
  if (diagram) {
    const warnings = (def.warnings || []).length
      ? h('ul.bpmn-warnings', def.warnings.map((w) => h('li.warning', { 'data-warning': '' }, `line ${w.line}: ${w.message}`)))
      : null;
    el.insertBefore(h('section.panel.bpmn-panel', { 'aria-label': 'BPMN diagram' }, h('h2', 'BPMN diagram'), diagram.el, warnings), el.children[2] || null);
    diagram.ready.catch((err) => errorToast(err));
  }
  return () => { graph.destroy(); if (diagram) diagram.destroy(); };
}

// The nodes of a schema: kind, what it waits for, its actions in order and
// its connections.
function schemaNodesTable(def, select) {
  return h('table.list.nodes',
    h('caption', 'Nodes'),
    h('thead', h('tr', ['node', 'kind', 'actions', 'next'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', (def.nodes || []).map((n) => {
      const key = nodeKey(n.name, n.external);
      const d = n.detail || {};
      return h('tr', { 'data-key': key },
        h('td', h('button.link', { type: 'button', onclick: () => select(key), title: 'Show in the graph' }, n.name)),
        h('td', n.kind, d.event ? h('div.muted', `event ${d.event.name}`) : null, d.timer ? h('div.muted', d.timer.at ? `until ${d.timer.at}` : `after ${d.timer.after}`) : null),
        h('td', (d.actions || []).length ? h('ol.schema-actions', schemaActionLines(n).map((l) => h('li', l.replace(/^\d+\. /, '')))) : h('span.muted', '—')),
        h('td', (d.next || []).map((x) => h('div', `→ ${x.to}`, x.label ? ` “${x.label}”` : '', x.when ? h('code', ` if ${x.when}`) : h('span.muted', ' otherwise')))));
    })));
}
