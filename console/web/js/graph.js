// Draws a Veena definition as a graph: ELK (elkjs) computes a layered layout,
// with one compound box per external instance, and Cytoscape draws it with
// zoom and pan. A process page lays the token state over the same drawing.

import cytoscape from '/vendor/cytoscape.esm.min.mjs';
import { h } from './ui.js';

const FONT_FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "DejaVu Sans", Arial, sans-serif';
const FONT_SIZE = 12;
const LINE_HEIGHT = 16;

let elkPromise = null;
let graphSeq = 0;
// loadElk loads the layout library once (also for the net view).
export function loadElk() {
  if (!elkPromise) {
    elkPromise = new Promise((resolve, reject) => {
      if (window.ELK) { resolve(new window.ELK()); return; }
      const s = document.createElement('script');
      s.src = '/vendor/elk.bundled.js';
      s.onload = () => resolve(new window.ELK());
      s.onerror = () => reject(new Error('The graph layout library could not be loaded. Was the console built with `make console`?'));
      document.head.appendChild(s);
    });
  }
  return elkPromise;
}

let measureCtx = null;
function textWidth(text, bold) {
  if (!measureCtx) measureCtx = document.createElement('canvas').getContext('2d');
  measureCtx.font = `${bold ? '600 ' : ''}${FONT_SIZE}px ${FONT_FAMILY}`;
  return measureCtx.measureText(text).width;
}

// The key of a node: its name, after its external instance's name and a
// slash for an imported node.
export function nodeKey(name, external) {
  return external ? `${external}/${name}` : name;
}
const nodeId = (key) => `n:${key}`;
const externalId = (ext) => `x:${ext}`;

// A process starts at the start nodes of its own definition; a node imported
// through an external instance keeps the start flag of its own file, but the
// process never starts there.
export function isStartNode(node) {
  return !!node.start && !node.external;
}

export const BUILTIN_TYPES = ['node', 'wait', 'script', 'nested'];

const JOIN_WORDS = {
  or: 'or-join', and: 'and-join', labelAnd: 'label-and join', first: 'first-join',
  tokenSet: 'token-set join', tokenSetOr: 'token-set-or join', class: 'class join', joinlang: 'JoinLang join',
};

export function joinWords(node) {
  const w = JOIN_WORDS[node.join || 'or'] || `${node.join} join`;
  return node.joinParam ? `${w} (${node.joinParam})` : w;
}

// The kinds of schema nodes (the fourth format), with the sign each is
// drawn with.
const SCHEMA_KINDS = { root: '▶', execution: '⚙', event: '✉', timer: '◷', terminator: '■' };

export function isSchemaNode(node) {
  return !!node && !!node.detail && Object.hasOwn(SCHEMA_KINDS, node.kind || '') && String(node.type || '').startsWith('schema.');
}

// One line per action of a schema node, in order.
export function schemaActionLines(node) {
  return ((node.detail && node.detail.actions) || []).map((a, i) =>
    `${i + 1}. ${a.id}: ${a.job ? `job ${a.job}` : a.do}${a.result ? ` → ${a.result}` : ''}`);
}

// What a schema node waits for, in words.
function schemaWait(node) {
  const d = node.detail || {};
  if (d.event) return `waits for ${d.event.name}${d.event.when ? ' (filtered)' : ''}`;
  if (d.timer) return d.timer.at ? `waits until ${d.timer.at}` : `waits ${d.timer.after}`;
  return '';
}

// The label of an arc leaving a schema node: its connection's label, or
// its condition, or "otherwise".
function schemaArcLabel(from, arc) {
  const next = ((from && from.detail && from.detail.next) || []).filter((x) => x.arc === arc.name);
  if (!next.length) return arc.name || '';
  return next.map((x) => x.label ? (x.when ? `${x.label}: ${x.when}` : x.label) : (x.when ? `if ${x.when}` : 'otherwise')).join(' | ');
}

// describes how a node looks and reads, before any token state.
function describeNode(node, inDegree) {
  if (isSchemaNode(node)) {
    const wait = schemaWait(node);
    return {
      title: `${SCHEMA_KINDS[node.kind]} ${node.name}`,
      sub: [node.kind, wait].filter(Boolean).join(' · '),
      extra: schemaActionLines(node),
      typeClass: `t-schema k-${node.kind}`,
    };
  }
  const type = node.type || 'node';
  const typeClass = BUILTIN_TYPES.includes(type) ? `t-${type}` : 't-custom';
  const title = `${isStartNode(node) ? '▶ ' : ''}${node.name}`;
  const parts = [type];
  const join = node.join || 'or';
  if (join !== 'or' || inDegree > 1) parts.push(`⋈ ${JOIN_WORDS[join] || join}`);
  if (node.guard && node.guard.trim()) parts.push('guard');
  return { title, sub: parts.join(' · '), typeClass };
}

// Lays out and draws a definition. Returns a view with setOverlay() for the
// process page, select(), fit() and destroy().
export function createGraphView(definition, { stateLines = false, onSelectNode, onSelectArc } = {}) {
  const host = h('div.graph-host');
  const canvas = h('div.graph-canvas', {
    tabindex: '0', role: 'application',
    'aria-label': `Graph of ${definition.name}. Keys: plus and minus zoom, 0 fits, arrow keys pan.`,
  });
  const tip = h('div.graph-tip', { role: 'tooltip', hidden: true });
  const status = h('div.graph-status', { 'aria-live': 'polite' }, 'Laying out the graph…');
  const zoomIn = h('button.small', { type: 'button', title: 'Zoom in (+)', 'aria-label': 'Zoom in' }, '+');
  const zoomOut = h('button.small', { type: 'button', title: 'Zoom out (−)', 'aria-label': 'Zoom out' }, '−');
  const fitBtn = h('button.small', { type: 'button', title: 'Fit the whole graph (0)', 'aria-label': 'Fit the graph' }, 'Fit');
  const listId = `graph-nodes-${++graphSeq}`;
  const search = h('input.graph-search', {
    type: 'search', placeholder: 'Find a node', list: listId, autocomplete: 'off', 'aria-label': 'Find a node in the graph', 'data-graph-search': '',
  });
  const searchList = h('datalist', { id: listId });
  const tools = h('div.graph-tools', h('form.graph-find', { role: 'search', onsubmit: (e) => { e.preventDefault(); findNode(search.value, true); } }, search, searchList),
    zoomIn, zoomOut, fitBtn);
  const mini = h('canvas.graph-minimap', { width: 180, height: 120, 'aria-label': 'Overview of the whole graph: click to move there', role: 'img' });
  host.append(tools, canvas, mini, tip, status);
  // The arcs drawn across a node other than their ends, as "from->to over
  // node": for tests and tools.
  host.edgeCrossings = () => edgeCrossings(cy);
  // The text drawn on the nodes and arcs: for tests and tools.
  host.graphLabels = () => cy.elements().map((x) => x.data('label') || '');
  // Where a node is drawn, in page coordinates: for tests and tools.
  host.nodeScreenPosition = (key) => {
    const el = cy.getElementById(nodeId(key));
    if (el.empty()) return null;
    const p = el.renderedPosition();
    const r = canvas.getBoundingClientRect();
    return { x: r.left + p.x, y: r.top + p.y };
  };

  const nodes = definition.nodes || [];
  const arcs = definition.arcs || [];
  const inDegree = new Map();
  for (const a of arcs) {
    const k = nodeKey(a.to, a.toExternal);
    inDegree.set(k, (inDegree.get(k) || 0) + 1);
  }
  const byKey = new Map();
  const externals = [];
  for (const n of nodes) {
    byKey.set(nodeKey(n.name, n.external), n);
    if (n.external && !externals.includes(n.external)) externals.push(n.external);
  }

  // Node sizes come from their labels, so ELK leaves room for the text.
  const lines = stateLines ? 3 : 2;
  const elements = [];
  const sizes = new Map();
  for (const ext of externals) {
    elements.push({ group: 'nodes', data: { id: externalId(ext), label: `external instance ${ext}` }, classes: 'external' });
  }
  for (const n of nodes) {
    const key = nodeKey(n.name, n.external);
    const d = describeNode(n, inDegree.get(key) || 0);
    const custom = d.typeClass === 't-custom';
    const extra = d.extra || [];
    const w = Math.ceil(Math.max(textWidth(d.title, true), textWidth(d.sub), ...extra.map((x) => textWidth(x)), stateLines ? 120 : 0) + (custom ? 44 : 28));
    const hgt = (lines + extra.length) * LINE_HEIGHT + 14;
    const text = [d.title, d.sub, ...extra].join('\n');
    sizes.set(key, { w: Math.max(w, 80), h: hgt });
    elements.push({
      group: 'nodes',
      data: {
        id: nodeId(key), key, label: text, base: text,
        w: Math.max(w, 80), h: hgt, parent: n.external ? externalId(n.external) : undefined,
      },
      classes: [d.typeClass, isStartNode(n) ? 'start' : '', n.guard ? 'guarded' : ''].filter(Boolean).join(' '),
    });
  }
  const arcLabels = [];
  arcs.forEach((a, i) => {
    const s = nodeKey(a.from, a.fromExternal);
    const t = nodeKey(a.to, a.toExternal);
    if (!byKey.has(s) || !byKey.has(t)) return;
    const from = byKey.get(s);
    const label = isSchemaNode(from) ? schemaArcLabel(from, a) : (a.name || '');
    arcLabels[i] = label;
    elements.push({
      group: 'edges',
      data: { id: `e${i}`, index: i, source: nodeId(s), target: nodeId(t), label, base: label },
      classes: label ? 'named' : 'default-arc',
    });
  });

  const cy = cytoscape({
    container: canvas,
    elements,
    style: graphStyle(stateLines),
    layout: { name: 'preset' },
    minZoom: 0.08,
    maxZoom: 3,
    boxSelectionEnabled: false,
    autoungrabify: true,
  });

  // Node search: the names in a list to pick from; typing marks the nodes
  // whose name holds the text, Enter (or picking one) goes to the first.
  for (const n of nodes) searchList.append(h('option', { value: n.external ? `${n.external} / ${n.name}` : n.name }));
  function findNode(text, go) {
    const q = String(text || '').trim().toLowerCase();
    cy.nodes().removeClass('found');
    if (!q) { host.dataset.found = ''; return; }
    const exact = nodes.find((n) => (n.external ? `${n.external} / ${n.name}` : n.name).toLowerCase() === q);
    const hits = exact ? [exact] : nodes.filter((n) => n.name.toLowerCase().includes(q));
    const els = hits.map((n) => cy.getElementById(nodeId(nodeKey(n.name, n.external)))).filter((x) => x.nonempty());
    for (const el of els) el.addClass('found');
    host.dataset.found = hits.map((n) => nodeKey(n.name, n.external)).join(' ');
    if (go && els.length) {
      const first = els[0];
      cy.animate({ center: { eles: first }, zoom: Math.max(cy.zoom(), 0.9) }, { duration: 200 });
      first.select();
      if (onSelectNode) onSelectNode(byKey.get(first.data('key')), first.data('key'));
    }
  }
  search.addEventListener('input', () => findNode(search.value, false));
  search.addEventListener('change', () => findNode(search.value, true));

  // The minimap: every node as a box, and the part of the graph in view;
  // a click there moves the view.
  let miniBox = null;
  let miniQueued = false;
  function drawMini() {
    miniQueued = false;
    const ctx = mini.getContext('2d');
    if (!ctx || cy.destroyed()) return;
    const bb = cy.nodes().boundingBox();
    if (!bb || !Number.isFinite(bb.w) || bb.w <= 0) return;
    // The minimap takes the graph's shape, within 180 by 120.
    const aspect = bb.h / bb.w;
    const W = aspect > 120 / 180 ? Math.max(60, Math.round(120 / aspect)) : 180;
    const H = aspect > 120 / 180 ? 120 : Math.max(40, Math.round(180 * aspect));
    if (mini.width !== W || mini.height !== H) {
      mini.width = W;
      mini.height = H;
      mini.style.width = `${W}px`;
      mini.style.height = `${H}px`;
    }
    ctx.clearRect(0, 0, W, H);
    const scale = Math.min((W - 8) / bb.w, (H - 8) / bb.h);
    const ox = (W - bb.w * scale) / 2 - bb.x1 * scale;
    const oy = (H - bb.h * scale) / 2 - bb.y1 * scale;
    miniBox = { scale, ox, oy };
    ctx.fillStyle = '#94a3b8';
    cy.nodes().forEach((n) => {
      if (n.isParent()) return;
      const b = n.boundingBox({ includeLabels: false });
      const cls = n.classes();
      ctx.fillStyle = cls.includes('s-active') ? '#1d4ed8' : cls.includes('s-waiting') ? '#d97706'
        : cls.includes('s-delayed') ? '#7c3aed' : cls.includes('s-stopped') ? '#b42318'
          : cls.includes('s-completed') ? '#2f9e44' : cls.includes('found') ? '#f59e0b' : '#94a3b8';
      ctx.fillRect(ox + b.x1 * scale, oy + b.y1 * scale, Math.max(2, b.w * scale), Math.max(2, b.h * scale));
    });
    const ext = cy.extent();
    ctx.strokeStyle = '#0f1b33';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(ox + ext.x1 * scale, oy + ext.y1 * scale, ext.w * scale, ext.h * scale);
  }
  const queueMini = () => { if (!miniQueued) { miniQueued = true; requestAnimationFrame(drawMini); } };
  cy.on('pan zoom resize', queueMini);
  mini.addEventListener('click', (e) => {
    if (!miniBox) return;
    const r = mini.getBoundingClientRect();
    const x = ((e.clientX - r.left) * (mini.width / r.width) - miniBox.ox) / miniBox.scale;
    const y = ((e.clientY - r.top) * (mini.height / r.height) - miniBox.oy) / miniBox.scale;
    cy.pan({ x: cy.width() / 2 - x * cy.zoom(), y: cy.height() / 2 - y * cy.zoom() });
  });

  // Hover: a tooltip with the type, join and guard (and tokens on a process page).
  let tokenInfo = new Map();
  function showTip(html, pos) {
    tip.replaceChildren(...html);
    tip.hidden = false;
    const box = canvas.getBoundingClientRect();
    const x = Math.min(pos.x + 14, box.width - tip.offsetWidth - 4);
    const y = Math.min(pos.y + 14, box.height - tip.offsetHeight - 4);
    tip.style.left = `${Math.max(4, x)}px`;
    tip.style.top = `${Math.max(4, y) + canvas.offsetTop}px`;
  }
  cy.on('mouseover', 'node', (e) => {
    const key = e.target.data('key');
    if (!key) return;
    const n = byKey.get(key);
    showTip(nodeTipContent(n, tokenInfo.get(key)), e.renderedPosition);
  });
  cy.on('mouseover', 'edge', (e) => {
    const a = arcs[e.target.data('index')];
    const from = a.fromExternal ? `${a.fromExternal} / ${a.from}` : a.from;
    const to = a.toExternal ? `${a.toExternal} / ${a.to}` : a.to;
    showTip([h('strong', a.name ? `arc “${a.name}”` : 'default arc'), h('div', `${from} → ${to}`)], e.renderedPosition);
  });
  cy.on('mouseout', () => { tip.hidden = true; });
  cy.on('pan zoom', () => { tip.hidden = true; });
  cy.on('tap', 'node', (e) => {
    const key = e.target.data('key');
    if (key && onSelectNode) onSelectNode(byKey.get(key), key);
  });
  cy.on('tap', 'edge', (e) => {
    if (onSelectArc) onSelectArc(arcs[e.target.data('index')]);
  });

  const zoomBy = (f) => {
    const c = { x: canvas.clientWidth / 2, y: canvas.clientHeight / 2 };
    cy.zoom({ level: cy.zoom() * f, renderedPosition: c });
  };
  zoomIn.addEventListener('click', () => zoomBy(1.25));
  zoomOut.addEventListener('click', () => zoomBy(0.8));
  fitBtn.addEventListener('click', () => fitAll(cy));
  canvas.addEventListener('keydown', (e) => {
    const step = 60;
    const keys = {
      '+': () => zoomBy(1.25), '=': () => zoomBy(1.25), '-': () => zoomBy(0.8), _: () => zoomBy(0.8),
      0: () => fitAll(cy),
      ArrowLeft: () => cy.panBy({ x: step, y: 0 }), ArrowRight: () => cy.panBy({ x: -step, y: 0 }),
      ArrowUp: () => cy.panBy({ x: 0, y: step }), ArrowDown: () => cy.panBy({ x: 0, y: -step }),
    };
    const f = keys[e.key];
    if (f) { f(); e.preventDefault(); }
  });

  // The layout runs once the host is in the page, so the direction can follow
  // the width: left to right on a wide screen, top to bottom on a narrow one.
  const ready = (async () => {
    await new Promise((r) => requestAnimationFrame(r));
    const elk = await loadElk();
    const narrow = canvas.clientWidth > 0 && canvas.clientWidth < 640;
    const { positions, routes } = await layout(elk, nodes, arcs, externals, sizes, narrow ? 'DOWN' : 'RIGHT', arcLabels);
    cy.batch(() => {
      for (const [key, p] of positions) {
        const el = cy.getElementById(nodeId(key));
        if (el.nonempty()) el.position(p);
      }
      applyRoutes(cy, routes);
    });
    cy.resize();
    fitReadable(cy);
    // A short graph gets a shorter canvas, so the page has no empty box.
    const bb = cy.elements().renderedBoundingBox();
    const want = Math.max(300, Math.ceil(bb.h) + 64);
    if (want < canvas.clientHeight - 40) {
      canvas.style.height = `${want}px`;
      cy.resize();
      fitReadable(cy);
    }
    status.textContent = `${nodes.length} nodes, ${arcs.length} arcs`;
    // The minimap is for graphs larger than their box.
    mini.hidden = cy.zoom() >= 0.7 && nodes.length < 30;
    drawMini();
    host.classList.add('laid-out');
  })().catch((err) => {
    status.textContent = err.message;
    status.classList.add('error');
    throw err;
  });

  return {
    el: host,
    cy,
    ready,
    setOverlay(overlay) {
      tokenInfo = overlay.nodes;
      applyOverlay(cy, overlay);
      queueMini();
      // A plain-text summary of the drawn state, for assistive tools and tests.
      host.dataset.tokenState = [...overlay.nodes]
        .filter(([, s]) => s.primary)
        .map(([k, s]) => `${k}=${s.primary}`).sort().join(' ');
      host.dataset.waitingArcs = [...overlay.edges]
        .filter(([, e]) => e.waiting)
        .map(([i]) => { const a = arcs[i]; return `${a.from}->${a.to}`; }).sort().join(' ');
    },
    select(key) {
      cy.$(':selected').unselect();
      const el = cy.getElementById(nodeId(key));
      if (el.nonempty()) {
        el.select();
        if (!el.renderedBoundingBox) return;
        const bb = el.renderedBoundingBox();
        if (bb.x2 < 0 || bb.y2 < 0 || bb.x1 > canvas.clientWidth || bb.y1 > canvas.clientHeight) cy.center(el);
      }
    },
    fit() { cy.resize(); fitAll(cy); },
    // focus shows the nodes of keys (where a process waits) when the whole
    // graph is too large to read at once: the view opens on them.
    focus(keys) {
      const els = cy.collection();
      for (const k of keys || []) els.merge(cy.getElementById(nodeId(k)));
      const bb = cy.elements().boundingBox();
      const fitZoom = Math.min((cy.width() - 48) / bb.w, (cy.height() - 48) / bb.h);
      if (els.empty() || fitZoom >= 0.45) return;
      cy.fit(els, 60);
      cy.zoom({ level: Math.min(Math.max(cy.zoom(), 0.6), 1), renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
      cy.center(els);
      host.dataset.focused = keys.join(' ');
      queueMini();
    },
    find(text) { findNode(text, true); },
    destroy() { cy.destroy(); },
  };
}

const MAX_FIT_ZOOM = 1.25;

// Fits the whole graph, without blowing a small one up beyond a comfortable
// reading size.
function fitAll(cy) {
  cy.fit(undefined, 24);
  if (cy.zoom() > MAX_FIT_ZOOM) {
    cy.zoom(MAX_FIT_ZOOM);
    cy.center();
  }
}

// Fits the whole graph; a very large one is shown from its start instead, at
// a zoom where the names can still be read.
function fitReadable(cy) {
  fitAll(cy);
  if (cy.zoom() >= 0.45) return;
  const level = 0.75;
  const starts = cy.nodes('.start');
  const target = starts.nonempty() ? starts : cy.nodes().first();
  cy.zoom(level);
  const bb = target.boundingBox();
  if (cy.width() < 640) cy.pan({ x: cy.width() / 2 - ((bb.x1 + bb.x2) / 2) * level, y: -bb.y1 * level + 24 });
  else cy.pan({ x: -bb.x1 * level + 24, y: cy.height() / 2 - ((bb.y1 + bb.y2) / 2) * level });
}

async function layout(elk, nodes, arcs, externals, sizes, direction, arcLabels) {
  const child = (key) => ({ id: key, width: sizes.get(key).w, height: sizes.get(key).h });
  const groups = new Map(externals.map((x) => [x, {
    id: externalId(x), children: [],
    layoutOptions: { 'elk.padding': '[top=40,left=20,bottom=20,right=20]' },
  }]));
  const top = [];
  for (const n of nodes) {
    const key = nodeKey(n.name, n.external);
    if (n.external) groups.get(n.external).children.push(child(key));
    else top.push(child(key));
  }
  const edges = [];
  arcs.forEach((a, i) => {
    const s = nodeKey(a.from, a.fromExternal);
    const t = nodeKey(a.to, a.toExternal);
    if (!sizes.has(s) || !sizes.has(t)) return;
    const e = { id: `e${i}`, sources: [s], targets: [t] };
    const text = arcLabels ? arcLabels[i] : a.name;
    if (text) e.labels = [{ text, width: textWidth(text) + 10, height: 16 }];
    edges.push(e);
  });
  const graph = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': direction,
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.edgeRouting': 'ORTHOGONAL',
      // Arcs that go back (cycles) are routed around the nodes, not through them.
      'elk.layered.feedbackEdges': 'true',
      'elk.layered.unnecessaryBendpoints': 'false',
      'elk.spacing.nodeNode': '28',
      'elk.spacing.edgeNode': '18',
      'elk.spacing.edgeLabel': '4',
      'elk.layered.spacing.nodeNodeBetweenLayers': '56',
      'elk.layered.spacing.edgeNodeBetweenLayers': '20',
      'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
      'elk.layered.cycleBreaking.strategy': 'DEPTH_FIRST',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
    },
    children: [...top, ...groups.values()],
    edges,
  };
  const out = await elk.layout(graph);
  const positions = new Map();
  const offsets = new Map([['root', { x: 0, y: 0 }]]);
  const walk = (n, ox, oy) => {
    for (const c of n.children || []) {
      const x = ox + (c.x || 0);
      const y = oy + (c.y || 0);
      offsets.set(c.id, { x, y });
      if (c.children && c.children.length) walk(c, x, y);
      else if (sizes.has(c.id)) positions.set(c.id, { x: x + c.width / 2, y: y + c.height / 2 });
    }
  };
  walk(out, 0, 0);
  // Each arc's route: the bend points ELK chose, in the graph's coordinates
  // (a route is given relative to the node that contains the arc).
  const routes = new Map();
  const edgesOf = (n) => {
    for (const e of n.edges || []) {
      const sec = e.sections && e.sections[0];
      if (!sec) continue;
      const off = offsets.get(e.container || n.id) || offsets.get(n.id) || { x: 0, y: 0 };
      // Its ends too, a little outside the nodes' borders where ELK puts
      // them (a point on or inside a node confuses Cytoscape), so that the
      // first and last segments leave and reach the nodes straight.
      const bends = sec.bendPoints || [];
      const pts = bends.length
        ? [nudge(sec.startPoint, bends[0]), ...bends, nudge(sec.endPoint, bends[bends.length - 1])]
        : [nudge(sec.startPoint, sec.endPoint), nudge(sec.endPoint, sec.startPoint)];
      routes.set(e.id, pts.map((b) => ({ x: b.x + off.x, y: b.y + off.y })));
    }
    for (const c of n.children || []) edgesOf(c);
  };
  edgesOf(out);
  return { positions, routes };
}

// edgeCrossings lists the arcs whose drawn line passes over a node other
// than their own ends.
function edgeCrossings(cy) {
  const boxes = cy.nodes().filter((n) => !n.isParent()).map((n) => ({ id: n.id(), b: n.boundingBox({ includeLabels: false }) }));
  const out = [];
  cy.edges().forEach((e) => {
    if (e.isLoop()) return;
    const pts = [e.sourceEndpoint(), ...(e.segmentPoints() || []), e.targetEndpoint()];
    if (pts.some((p) => !p || !Number.isFinite(p.x) || !Number.isFinite(p.y))) {
      out.push(`${e.source().data('key')}->${e.target().data('key')} has no drawn route`);
      return;
    }
    for (const { id, b } of boxes) {
      if (id === e.source().id() || id === e.target().id()) continue;
      const inner = { x1: b.x1 + 3, y1: b.y1 + 3, x2: b.x2 - 3, y2: b.y2 - 3 };
      for (let i = 1; i < pts.length; i++) {
        if (segmentHitsBox(pts[i - 1], pts[i], inner)) {
          out.push(`${e.source().data('key')}->${e.target().data('key')} over ${cy.getElementById(id).data('key')}`);
          break;
        }
      }
    }
  });
  return out;
}

// segmentHitsBox tells whether the segment a-b meets the box (Liang-Barsky).
function segmentHitsBox(a, b, box) {
  let t0 = 0;
  let t1 = 1;
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  for (const [p, q] of [[-dx, a.x - box.x1], [dx, box.x2 - a.x], [-dy, a.y - box.y1], [dy, box.y2 - a.y]]) {
    if (p === 0) { if (q < 0) return false; continue; }
    const r = q / p;
    if (p < 0) { if (r > t1) return false; if (r > t0) t0 = r; } else { if (r < t0) return false; if (r < t1) t1 = r; }
  }
  return t0 <= t1;
}

// nudge moves p 4 units towards q (off a node's border, along the route).
function nudge(p, q) {
  const dx = q.x - p.x;
  const dy = q.y - p.y;
  const d = Math.hypot(dx, dy);
  if (d < 8) return p;
  return { x: p.x + (dx / d) * 4, y: p.y + (dy / d) * 4 };
}

// applyRoutes draws each arc along the route ELK laid out for it (as
// straight segments through its bend points, relative to the line between
// its ends, which is how Cytoscape places segment points), so that arcs go
// around the nodes ELK kept them off.
function applyRoutes(cy, routes) {
  cy.edges().forEach((e) => {
    const pts = routes.get(e.id());
    if (!pts || !pts.length || e.isLoop()) return;
    const s = e.source().position();
    const t = e.target().position();
    const dx = t.x - s.x;
    const dy = t.y - s.y;
    const len2 = dx * dx + dy * dy;
    if (len2 < 1) return;
    const len = Math.sqrt(len2);
    const weights = [];
    const distances = [];
    for (const p of pts) {
      const px = p.x - s.x;
      const py = p.y - s.y;
      weights.push((px * dx + py * dy) / len2);
      distances.push((px * dy - py * dx) / -len);
    }
    e.style({
      'curve-style': 'segments',
      'segment-weights': weights.map((w) => w.toFixed(4)).join(' '),
      'segment-distances': distances.map((d) => d.toFixed(2)).join(' '),
      'edge-distances': 'node-position',
    });
    e.data('routed', pts.length);
  });
}

function nodeTipContent(n, info) {
  if (!n) return [];
  const out = [h('strong', n.name)];
  if (n.external) out.push(h('div', `imported through external instance ${n.external}`));
  out.push(h('div', `type: ${n.type || 'node'}${isStartNode(n) ? ' · start node' : ''}`));
  out.push(h('div', joinWords(n)));
  out.push(n.guard && n.guard.trim()
    ? h('div', 'guard: ', h('code', n.guard))
    : h('div.muted', 'no guard (always accept)'));
  if (info && info.tokens.length) out.push(h('div.tip-tokens', info.summary));
  return out;
}

// ---- token state ---------------------------------------------------------

const BACKTRACKED = new Set(['backtracked', 'forward_backtracked', 'uturn_backtracked']);

function arcKey(a) {
  return [a.from, a.fromExternal || '', a.to, a.toExternal || '', a.name || ''].join('\u0000');
}

// Summarises a token history per node and per arc of the definition.
// With stopped (a canceled process), tokens left active are shown as
// stopped, not as waiting for anything; waits (the process's waitingAt)
// give a waiting join's progress, which its label then shows.
export function computeOverlay(definition, tokens, { stopped = false, waits = [] } = {}) {
  const nodes = new Map();
  const arcIndex = new Map();
  (definition.arcs || []).forEach((a, i) => {
    const k = arcKey(a);
    if (!arcIndex.has(k)) arcIndex.set(k, []);
    arcIndex.get(k).push(i);
  });
  const info = (key) => {
    if (!nodes.has(key)) {
      nodes.set(key, { tokens: [], active: 0, delayed: 0, stopped: 0, completed: 0, discarded: 0, skipped: 0, backtracked: 0, runs: 0, waiting: 0, primary: '', summary: '' });
    }
    return nodes.get(key);
  };
  const nestedKeys = new Set((definition.nodes || []).filter((n) => n.type === 'nested').map((n) => nodeKey(n.name, n.external)));
  for (const t of tokens.nodeTokens || []) {
    const s = info(nodeKey(t.node, t.external));
    s.nested = nestedKeys.has(nodeKey(t.node, t.external));
    s.tokens.push(t);
    let state = tokenState(t);
    if (stopped && (state === 'active' || state === 'delayed')) state = 'stopped';
    s[state]++;
    if (!BACKTRACKED.has(t.executionType)) s.runs++;
  }
  const edges = new Map();
  for (const a of tokens.arcTokens || []) {
    const idx = (arcIndex.get(arcKey(a.arc || {})) || [])[0];
    if (idx === undefined) continue;
    if (!edges.has(idx)) edges.set(idx, { waiting: 0, done: 0, backtracked: 0, active: 0 });
    const e = edges.get(idx);
    if (arcWaitsAtJoin(a)) {
      e.waiting++;
      info(nodeKey(a.arc.to, a.arc.toExternal)).waiting++;
    } else if (BACKTRACKED.has(a.executionType)) e.backtracked++;
    else if (a.complete) e.done++;
    else e.active++;
  }
  for (const w of waits) {
    const s = w.kind === 'join' && (w.progress || []).length === 1 && nodes.get(nodeKey(w.node, w.external));
    if (s) s.progress = `${w.progress[0].arrived} of ${w.progress[0].needs} arrived`;
  }
  for (const s of nodes.values()) {
    s.primary = ['active', 'delayed', 'waiting', 'stopped', 'completed', 'backtracked', 'discarded', 'skipped'].find((k) => s[k] > 0) || '';
    const words = [];
    if (s.active) words.push(s.active > 1 ? `● ${s.active} active` : '● active');
    if (s.delayed) words.push(`◔ ${s.delayed} delayed`);
    if (s.stopped) words.push(`■ ${s.stopped} stopped by the cancel`);
    if (s.waiting) words.push(`◷ ${s.waiting} arc${s.waiting > 1 ? 's' : ''} waiting`);
    if (s.completed) words.push(s.completed > 1 ? `✓ ${s.completed}× done` : '✓ done');
    if (s.backtracked) words.push(`↺ ${s.backtracked} backtracked`);
    if (s.discarded) words.push(`✕ ${s.discarded} discarded`);
    if (s.skipped) words.push(`» ${s.skipped} skipped`);
    s.summary = words.join(' · ');
  }
  return { nodes, edges };
}

// An arc token is pending until the engine processes it; processed but not
// complete, it waits at a join for the join's other arcs.
export function arcWaitsAtJoin(a) {
  return !a.complete && !a.pending && !BACKTRACKED.has(a.executionType);
}

export function tokenState(t) {
  if (BACKTRACKED.has(t.executionType)) return 'backtracked';
  if (t.guardAction === 'discard') return 'discarded';
  if (t.guardAction === 'skip') return 'skipped';
  if (t.guardAction === 'delay' && !t.complete) return 'delayed';
  if (!t.complete) return 'active';
  return 'completed';
}

const NODE_STATES = ['s-active', 's-delayed', 's-waiting', 's-stopped', 's-completed', 's-backtracked', 's-discarded', 's-skipped', 's-multi'];
const EDGE_STATES = ['s-waiting', 's-done', 's-backtracked', 's-active'];

function applyOverlay(cy, overlay) {
  cy.batch(() => {
    cy.nodes().forEach((el) => {
      const key = el.data('key');
      if (!key) return;
      el.removeClass(NODE_STATES.join(' '));
      const s = overlay.nodes.get(key);
      if (!s || !s.primary) {
        el.data('label', el.data('base'));
        return;
      }
      el.addClass(`s-${s.primary}`);
      if (s.runs > 1) el.addClass('s-multi');
      el.data('label', `${el.data('base')}\n${compactState(s)}`);
    });
    cy.edges().forEach((el) => {
      el.removeClass(EDGE_STATES.join(' '));
      const e = overlay.edges.get(el.data('index'));
      let label = el.data('base');
      if (e) {
        if (e.waiting) { el.addClass('s-waiting'); label = label ? `${label} · waiting` : 'waiting'; }
        else if (e.active) el.addClass('s-active');
        else if (e.done) el.addClass('s-done');
        else if (e.backtracked) el.addClass('s-backtracked');
        if (e.done > 1 && !e.waiting) label = label ? `${label} ×${e.done}` : `×${e.done}`;
      }
      el.data('label', label);
    });
  });
}

function compactState(s) {
  const lead = {
    active: s.nested ? '● nested process runs' : s.active > 1 ? `● ${s.active} active` : '● active',
    delayed: '◔ delayed',
    stopped: '■ stopped (canceled)',
    waiting: `◷ join: ${s.progress || `${s.waiting} waiting`}`,
    completed: '✓ completed',
    backtracked: '↺ backtracked',
    discarded: '✕ discarded',
    skipped: '» skipped',
  }[s.primary];
  const extra = [];
  if (s.runs > 1) extra.push(`ran ${s.runs}×`);
  if (s.backtracked && s.primary !== 'backtracked') extra.push(`↺${s.backtracked}`);
  return extra.length ? `${lead} · ${extra.join(' ')}` : lead;
}

// ---- style ---------------------------------------------------------------

function graphStyle(processMode) {
  const neutral = processMode;
  const typeStyle = (color, fill, extra = {}) => ({
    'border-color': color,
    'background-color': neutral ? '#ffffff' : fill,
    ...extra,
  });
  return [
    {
      selector: 'node',
      style: {
        shape: 'round-rectangle',
        label: 'data(label)',
        'text-wrap': 'wrap',
        'text-valign': 'center',
        'text-halign': 'center',
        'line-height': LINE_HEIGHT / FONT_SIZE,
        'font-family': FONT_FAMILY,
        'font-size': FONT_SIZE,
        color: '#17202e',
        'background-color': '#eef2f7',
        'border-width': 1.5,
        'border-color': '#64748b',
        'min-zoomed-font-size': 5,
      },
    },
    { selector: 'node[w]', style: { width: 'data(w)', height: 'data(h)' } },
    { selector: 'node.t-node', style: typeStyle('#64748b', '#eef2f7') },
    { selector: 'node.t-wait', style: typeStyle('#b45309', '#fff3d6', { 'border-style': 'double', 'border-width': 4 }) },
    { selector: 'node.t-script', style: typeStyle('#7c3aed', '#f1e8ff', { shape: 'cut-rectangle' }) },
    { selector: 'node.t-nested', style: typeStyle('#0369a1', '#dff1fd', { shape: 'barrel', 'border-width': 3 }) },
    { selector: 'node.t-custom', style: typeStyle('#0f766e', '#dcf7f2', { shape: 'round-hexagon' }) },
    { selector: 'node.t-schema', style: { 'text-justification': 'left' } },
    { selector: 'node.k-root', style: typeStyle('#15803d', '#e3f7e8', { 'border-width': 3 }) },
    { selector: 'node.k-execution', style: typeStyle('#475569', '#eef2f7') },
    { selector: 'node.k-event', style: typeStyle('#1d4ed8', '#e3edff', { 'border-style': 'double', 'border-width': 4 }) },
    { selector: 'node.k-timer', style: typeStyle('#b45309', '#fff3d6', { 'border-style': 'double', 'border-width': 4 }) },
    { selector: 'node.k-terminator', style: typeStyle('#111827', '#e5e7eb', { 'border-width': 4 }) },
    { selector: 'node.start', style: { 'border-color': '#15803d', 'border-width': 3 } },
    { selector: 'node.t-wait.start', style: { 'border-width': 5 } },
    {
      selector: 'node.external',
      style: {
        shape: 'round-rectangle',
        label: 'data(label)',
        'text-valign': 'top',
        'text-halign': 'center',
        'text-margin-y': -3,
        'font-size': 11,
        'font-weight': 600,
        color: '#475569',
        'background-color': '#f1f5f9',
        'background-opacity': 0.7,
        'border-style': 'dashed',
        'border-width': 1.5,
        'border-color': '#94a3b8',
        padding: 16,
      },
    },
    // Token state on a process page: the fill tells the state.
    { selector: 'node.s-completed', style: { 'background-color': '#d3f5dc' } },
    { selector: 'node.s-active', style: { 'background-color': '#d6e6ff', 'border-color': '#1d4ed8', 'border-width': 4, 'border-style': 'solid', 'underlay-color': '#3b82f6', 'underlay-padding': 6, 'underlay-opacity': 0.25, 'underlay-shape': 'round-rectangle' } },
    { selector: 'node.s-delayed', style: { 'background-color': '#efe3ff', 'border-color': '#7c3aed', 'border-width': 3 } },
    { selector: 'node.s-stopped', style: { 'background-color': '#f3f4f6', 'border-color': '#b42318', 'border-width': 3, 'border-style': 'dashed' } },
    { selector: 'node.found', style: { 'underlay-color': '#f59e0b', 'underlay-padding': 9, 'underlay-opacity': 0.55, 'underlay-shape': 'round-rectangle' } },
    { selector: 'node.s-waiting', style: { 'background-color': '#fff1c7', 'border-color': '#d97706', 'border-width': 3, 'border-style': 'dashed' } },
    { selector: 'node.s-backtracked', style: { 'background-color': '#ffe4d5', 'border-color': '#c2410c', 'border-style': 'dotted', 'border-width': 3 } },
    { selector: 'node.s-discarded', style: { 'background-color': '#e5e7eb', color: '#4b5563', 'border-color': '#6b7280', 'border-style': 'dashed' } },
    { selector: 'node.s-skipped', style: { 'background-color': '#f3f4f6', color: '#4b5563', 'border-color': '#9ca3af', 'border-style': 'dotted' } },
    { selector: 'node:selected', style: { 'overlay-color': '#1d4ed8', 'overlay-opacity': 0.12, 'overlay-padding': 6 } },
    {
      selector: 'edge',
      style: {
        'curve-style': 'bezier',
        width: 1.6,
        'line-color': '#8391a7',
        'target-arrow-color': '#8391a7',
        'target-arrow-shape': 'triangle',
        'arrow-scale': 1.1,
        label: 'data(label)',
        'font-family': FONT_FAMILY,
        'font-size': 11,
        color: '#334155',
        'text-background-color': '#ffffff',
        'text-background-opacity': 0.92,
        'text-background-padding': 2,
        'text-background-shape': 'round-rectangle',
        'text-border-color': '#cbd5e1',
        'text-border-width': 1,
        'text-border-opacity': 1,
        'min-zoomed-font-size': 5,
      },
    },
    // A connection back to its own node (a schema's event node waiting
    // again) is drawn as a loop beside the node.
    { selector: 'edge:loop', style: { 'curve-style': 'bezier', 'loop-direction': '0deg', 'loop-sweep': '-60deg', 'control-point-step-size': 70 } },
    { selector: 'edge.default-arc', style: { 'text-border-opacity': 0, 'text-background-opacity': 0 } },
    { selector: 'edge.s-done', style: { 'line-color': '#2f9e44', 'target-arrow-color': '#2f9e44', width: 3 } },
    { selector: 'edge.s-active', style: { 'line-color': '#1d4ed8', 'target-arrow-color': '#1d4ed8', width: 3 } },
    { selector: 'edge.s-waiting', style: { 'line-color': '#d97706', 'target-arrow-color': '#d97706', width: 3.5, 'line-style': 'dashed', color: '#92400e', 'text-background-opacity': 0.95, 'text-border-opacity': 1, 'text-border-color': '#d97706' } },
    { selector: 'edge.s-backtracked', style: { 'line-color': '#c2410c', 'target-arrow-color': '#c2410c', width: 2.5, 'line-style': 'dotted' } },
    { selector: 'edge:selected', style: { 'overlay-color': '#1d4ed8', 'overlay-opacity': 0.12 } },
  ];
}

// The legend for the graph: node types, or node types and token states.
export function legend(processMode, definition) {
  const item = (cls, text) => h('li', h('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }), text);
  if (definition && (definition.nodes || []).some(isSchemaNode)) {
    const kinds = h('ul.legend-list', { 'aria-label': 'schema node kinds' },
      item('sw-k-root', '▶ root (the instance starts here)'), item('sw-k-execution', '⚙ execution: runs its actions'),
      item('sw-k-event', '✉ event: waits for an event, then runs its actions'),
      item('sw-k-timer', '◷ timer: waits for a time, then runs its actions'),
      item('sw-k-terminator', '■ terminator: ends the instance'));
    if (processMode) {
      return h('div.legend', h('ul.legend-list', { 'aria-label': 'token states' },
        item('sw-active', 'the node the instance is at'), item('sw-completed', 'visited')), kinds);
    }
    return h('div.legend', kinds, h('p.muted', 'Each node lists its actions in the order they run. An arc carries its label or condition; the first that holds is taken. Arcs back to an earlier node are the schema\'s cycles.'));
  }
  const types = h('ul.legend-list', { 'aria-label': 'node types' },
    item('sw-start', 'start node (green border, ▶)'),
    item('sw-node', 'node'), item('sw-wait', 'wait'), item('sw-script', 'script'),
    item('sw-nested', 'nested process'), item('sw-custom', 'custom type'),
    item('sw-external', 'external instance'));
  if (!processMode) return h('div.legend', types, h('p.muted', '⋈ marks a join and its kind. Hover a node for its guard; named arcs carry their name.'));
  const states = h('ul.legend-list', { 'aria-label': 'token states' },
    item('sw-active', 'active token'), item('sw-waiting', 'arc tokens waiting at a join'),
    item('sw-completed', 'completed'), item('sw-backtracked', 'backtracked'),
    item('sw-discarded', 'discarded by guard'), item('sw-skipped', 'skipped by guard'),
    item('sw-delayed', 'delayed by guard'), item('sw-stopped', 'stopped by a cancel'));
  return h('div.legend', states, types);
}
