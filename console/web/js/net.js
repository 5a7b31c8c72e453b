// Petri nets in the console: a net drawn as places (circles holding their
// tokens), transitions (bars) and arcs (weights, inhibitor arcs ending in a
// small circle, result codes, generated VAR:x locks dashed); on a process
// page the live marking, the enabled transitions with a button to fire
// each, an event form, the running activities and what waits; on every
// definition page the analysis of its state space.

import cytoscape from '/vendor/cytoscape.esm.min.mjs';
import { api } from './api.js';
import { h, clear, envTable, idCode, toast, errorToast } from './ui.js';
import { loadElk } from './graph.js';

export function isNetDefinition(def) {
  return !!def && def.format === 'pnml' && !!def.net;
}

const placeId = (id) => `p:${id}`;
const transitionId = (id) => `t:${id}`;
const PLACE = 46;
const SCALE = 1.6; // PNML editors draw small; spread their positions a little

// tokenImage draws n tokens as black dots in a place (a number beyond 6).
function tokenImage(n) {
  const dots = {
    1: [[23, 23]], 2: [[16, 23], [30, 23]], 3: [[16, 17], [30, 17], [23, 30]],
    4: [[16, 16], [30, 16], [16, 30], [30, 30]], 5: [[14, 14], [32, 14], [23, 23], [14, 32], [32, 32]],
    6: [[15, 13], [31, 13], [15, 23], [31, 23], [15, 33], [31, 33]],
  }[n];
  let body;
  if (!n) body = '';
  else if (dots) body = dots.map(([x, y]) => `<circle cx="${x}" cy="${y}" r="4.2" fill="#1f2937"/>`).join('');
  else body = `<text x="23" y="28" font-family="sans-serif" font-size="15" font-weight="600" text-anchor="middle" fill="#1f2937">${n}</text>`;
  return `data:image/svg+xml;utf8,${encodeURIComponent(`<svg xmlns="http://www.w3.org/2000/svg" width="46" height="46">${body}</svg>`)}`;
}

function arcLabel(a) {
  const parts = [];
  if (a.weight > 1) parts.push(a.inhibitor ? `<${a.weight}` : String(a.weight));
  if (a.codes && a.codes.length) parts.push(`[${a.codes.join(', ')}]`);
  return parts.join(' ');
}

function transitionText(t) {
  const ann = [t.event, t.action ? `/${t.action}` : ''].filter(Boolean).join('');
  if (ann && ann !== `${t.label}()` && ann !== t.label) return `${t.id}\n${ann}`;
  return t.label && t.label !== t.id ? `${t.id}\n${t.label}` : t.id;
}

const netStyle = [
  { selector: 'node', style: { 'font-family': 'system-ui, sans-serif', 'font-size': 11, 'text-wrap': 'wrap', color: '#1f2937' } },
  {
    selector: 'node.place',
    style: {
      shape: 'ellipse', width: PLACE, height: PLACE, 'background-color': '#ffffff', 'border-width': 2, 'border-color': '#334155',
      label: 'data(label)', 'text-valign': 'bottom', 'text-margin-y': 4, 'background-image': 'data(image)', 'background-fit': 'none',
      'background-width': PLACE, 'background-height': PLACE,
    },
  },
  { selector: 'node.place.activity', style: { 'border-width': 3, 'border-color': '#2563eb', 'border-style': 'double' } },
  { selector: 'node.place.generated', style: { 'border-style': 'dashed', 'border-color': '#64748b', color: '#64748b' } },
  { selector: 'node.place.busy', style: { 'background-color': '#fde68a', 'border-color': '#b45309' } },
  {
    selector: 'node.transition',
    style: {
      shape: 'rectangle', width: 14, height: 40, 'background-color': '#334155', label: 'data(label)',
      'text-valign': 'bottom', 'text-margin-y': 4, 'border-width': 2, 'border-color': '#334155',
    },
  },
  { selector: 'node.transition.autonomous', style: { 'background-color': '#475569' } },
  { selector: 'node.transition.evented', style: { 'background-color': '#ffffff' } },
  { selector: 'node.transition.enabled', style: { 'background-color': '#16a34a', 'border-color': '#14532d' } },
  { selector: 'node.transition.deferred', style: { 'background-color': '#facc15', 'border-color': '#854d0e' } },
  { selector: 'node.transition.blocked', style: { 'background-color': '#dc2626', 'border-color': '#7f1d1d' } },
  { selector: 'node:selected', style: { 'overlay-color': '#2563eb', 'overlay-opacity': 0.18, 'overlay-padding': 6 } },
  {
    selector: 'edge',
    style: {
      width: 1.6, 'line-color': '#475569', 'target-arrow-color': '#475569', 'target-arrow-shape': 'triangle',
      'curve-style': 'bezier', label: 'data(label)', 'font-size': 10, 'text-background-color': '#ffffff',
      'text-background-opacity': 0.85, 'text-background-padding': 2, color: '#1e293b',
    },
  },
  { selector: 'edge.bent', style: { 'curve-style': 'segments', 'segment-weights': 'data(weights)', 'segment-distances': 'data(distances)', 'edge-distances': 'node-position' } },
  { selector: 'edge.inhibitor', style: { 'target-arrow-shape': 'circle', 'target-arrow-fill': 'hollow', 'line-color': '#b91c1c', 'target-arrow-color': '#b91c1c' } },
  { selector: 'edge.generated', style: { 'line-style': 'dashed', 'line-color': '#94a3b8', 'target-arrow-color': '#94a3b8' } },
];

// createNetView draws a net; setMarking() lays a marking over it.
export function createNetView(def, { onSelect } = {}) {
  const net = def.net;
  const host = h('div.graph-host.net-host');
  const canvas = h('div.graph-canvas', { tabindex: '0', role: 'application', 'aria-label': `Petri net ${def.name}. Keys: plus and minus zoom, 0 fits.` });
  const status = h('div.graph-status', { 'aria-live': 'polite' }, 'Laying out the net…');
  const fitBtn = h('button.small', { type: 'button', title: 'Fit the whole net', 'aria-label': 'Fit the net' }, 'Fit');
  host.append(h('div.graph-tools', fitBtn), canvas, status);

  const elements = [];
  for (const p of net.places) {
    const classes = ['place', p.activity ? 'activity' : '', p.generated ? 'generated' : ''].filter(Boolean).join(' ');
    const name = p.label && p.label !== p.id ? `${p.id}\n${p.label}` : p.id;
    elements.push({ group: 'nodes', data: { id: placeId(p.id), kind: 'place', ref: p.id, label: name, image: tokenImage(p.initial), tokens: p.initial }, classes });
  }
  for (const t of net.transitions) {
    const classes = ['transition', t.autonomous ? 'autonomous' : '', t.event ? 'evented' : ''].filter(Boolean).join(' ');
    elements.push({ group: 'nodes', data: { id: transitionId(t.id), kind: 'transition', ref: t.id, label: transitionText(t) }, classes });
  }
  const isPlace = new Set(net.places.map((p) => p.id));
  net.arcs.forEach((a, i) => {
    const source = isPlace.has(a.from) ? placeId(a.from) : transitionId(a.from);
    const target = isPlace.has(a.to) ? placeId(a.to) : transitionId(a.to);
    elements.push({
      group: 'edges',
      data: { id: `a${i}`, source, target, label: arcLabel(a) },
      classes: [a.inhibitor ? 'inhibitor' : '', a.generated ? 'generated' : ''].filter(Boolean).join(' '),
    });
  });
  // Bend points of arcs drawn by the net's editor: segments relative to
  // the line between the arc's ends (points on the ends themselves, as
  // PIPE writes them, are dropped).
  const at = new Map([...net.places.map((p) => [placeId(p.id), p]), ...net.transitions.map((t) => [transitionId(t.id), t])]);
  net.arcs.forEach((a, i) => {
    if (!a.points || !a.points.length) return;
    const e = elements.find((x) => x.data.id === `a${i}`);
    const s = at.get(e.data.source);
    const t = at.get(e.data.target);
    const dx = t.x - s.x;
    const dy = t.y - s.y;
    const len2 = dx * dx + dy * dy;
    if (!len2) return;
    const near = (p, n) => Math.hypot(p[0] - n.x, p[1] - n.y) < 12;
    const pts = a.points.filter((p) => !near(p, s) && !near(p, t));
    if (!pts.length) return;
    e.data.weights = pts.map((p) => ((p[0] - s.x) * dx + (p[1] - s.y) * dy) / len2).join(' ');
    e.data.distances = pts.map((p) => (((p[1] - s.y) * dx - (p[0] - s.x) * dy) / Math.sqrt(len2)) * SCALE).join(' ');
    e.classes = `${e.classes} bent`;
  });
  const cy = cytoscape({ container: canvas, elements, style: netStyle, layout: { name: 'preset' }, minZoom: 0.08, maxZoom: 3, boxSelectionEnabled: false, autoungrabify: true });
  host.netLabels = () => cy.elements().map((x) => x.data('label') || '');
  host.netState = () => Object.fromEntries(cy.nodes().map((n) => [n.data('ref'), { tokens: n.data('tokens'), classes: n.classes().join(' ') }]));
  cy.on('tap', 'node', (e) => { if (onSelect) onSelect(e.target.data('kind'), e.target.data('ref')); });
  const fit = () => { cy.fit(undefined, 24); if (cy.zoom() > 1.6) { cy.zoom(1.6); cy.center(); } };
  fitBtn.addEventListener('click', fit);
  canvas.addEventListener('keydown', (e) => {
    if (e.key === '0') fit();
    else if (e.key === '+' || e.key === '=') cy.zoom(cy.zoom() * 1.25);
    else if (e.key === '-') cy.zoom(cy.zoom() * 0.8);
  });

  const positioned = [...net.places.filter((p) => !p.generated), ...net.transitions].some((n) => n.x || n.y);
  const ready = (async () => {
    await new Promise((r) => requestAnimationFrame(r));
    if (positioned) {
      cy.batch(() => {
        for (const p of net.places) cy.getElementById(placeId(p.id)).position({ x: p.x * SCALE, y: p.y * SCALE });
        for (const t of net.transitions) cy.getElementById(transitionId(t.id)).position({ x: t.x * SCALE, y: t.y * SCALE });
      });
    } else {
      const elk = await loadElk();
      const graph = {
        id: 'root',
        layoutOptions: {
          'elk.algorithm': 'layered', 'elk.direction': 'RIGHT', 'elk.spacing.nodeNode': '36',
          'elk.layered.spacing.nodeNodeBetweenLayers': '48', 'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
        },
        children: cy.nodes().map((n) => ({ id: n.id(), width: n.data('kind') === 'place' ? PLACE + 40 : 60, height: 70 })),
        edges: cy.edges().map((e) => ({ id: e.id(), sources: [e.data('source')], targets: [e.data('target')] })),
      };
      const out = await elk.layout(graph);
      cy.batch(() => {
        for (const c of out.children) cy.getElementById(c.id).position({ x: c.x + c.width / 2, y: c.y + c.height / 2 });
      });
    }
    cy.resize();
    fit();
    status.textContent = `${net.places.length} places, ${net.transitions.length} transitions, ${net.arcs.length} arcs`;
    host.classList.add('laid-out');
  })().catch((err) => { status.textContent = err.message; status.classList.add('error'); throw err; });

  return {
    el: host,
    cy,
    ready,
    setOverlay() {},
    // setMarking shows a process's marking: tokens in places, places whose
    // activity runs, and enabled, deferred and blocked transitions.
    setMarking(m) {
      const busy = new Set((m.activities || []).map((a) => a.place));
      const enabled = new Set(m.enabled || []);
      cy.batch(() => {
        for (const p of net.places) {
          const n = cy.getElementById(placeId(p.id));
          const c = (m.places || {})[p.id] || 0;
          n.data('tokens', c);
          n.data('image', tokenImage(c));
          n.toggleClass('busy', busy.has(p.id));
        }
        for (const t of net.transitions) {
          const n = cy.getElementById(transitionId(t.id));
          n.toggleClass('enabled', enabled.has(t.id) && !(m.blocked || {})[t.id] && !(m.deferred || {})[t.id]);
          n.toggleClass('deferred', !!(m.deferred || {})[t.id]);
          n.toggleClass('blocked', !!(m.blocked || {})[t.id]);
        }
      });
    },
    select(ref) {
      cy.elements().unselect();
      const n = cy.getElementById(placeId(ref)).nonempty() ? cy.getElementById(placeId(ref)) : cy.getElementById(transitionId(ref));
      if (n.nonempty()) { n.select(); cy.animate({ center: { eles: n } }, { duration: 200 }); }
    },
    destroy() { cy.destroy(); },
  };
}

export function netLegend(processMode) {
  const item = (cls, text) => h('li', h('span', { class: `swatch ${cls}`, 'aria-hidden': 'true' }), text);
  const kinds = h('ul.legend-list', { 'aria-label': 'net elements' },
    item('sw-net-place', 'place, with its tokens'), item('sw-net-activity', 'place with an activity (its tokens start jobs)'),
    item('sw-net-generated', 'generated VAR:x lock place'), item('sw-net-transition', 'transition that fires by itself'),
    item('sw-net-event', 'transition that waits for an event (or a fire command)'),
    item('sw-net-inhibitor', 'inhibitor arc (the transition needs fewer tokens there)'));
  if (!processMode) return h('div.legend', kinds, h('p.muted', 'Arcs carry their weight when above 1, and the result codes of the activity they take.'));
  const states = h('ul.legend-list', { 'aria-label': 'marking' },
    item('sw-net-enabled', 'enabled transition'), item('sw-net-busy', 'an activity runs here'),
    item('sw-net-deferred', 'action deferred (a timer tries again)'), item('sw-net-blocked', 'action failed (an incident is open)'));
  return h('div.legend', states, kinds);
}

// netNodesTable lists the places and transitions of a net.
export function netNodesTable(def, select) {
  const net = def.net;
  return h('div',
    h('table.list.nodes.net-places',
      h('caption', 'Places'),
      h('thead', h('tr', ['place', 'initial', 'activity'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', net.places.map((p) => h('tr', { 'data-key': p.id },
        h('td', h('button.link', { type: 'button', onclick: () => select(p.id) }, p.id), p.label && p.label !== p.id ? h('div.muted', p.label) : null, p.generated ? h('div.muted', 'generated lock') : null),
        h('td.num', String(p.initial)),
        h('td', p.activity ? h('code', p.activity) : h('span.muted', '—')))))),
    h('table.list.nodes.net-transitions',
      h('caption', 'Transitions'),
      h('thead', h('tr', ['transition', 'event', 'action', 'fires'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', net.transitions.map((t) => h('tr', { 'data-key': t.id },
        h('td', h('button.link', { type: 'button', onclick: () => select(t.id) }, t.id)),
        h('td', t.event ? h('code', t.event) : h('span.muted', '—')),
        h('td', t.action ? h('code', t.action) : h('span.muted', '—')),
        h('td', t.autonomous ? 'by itself' : 'on an event or command'))))));
}

// netPanel is the net part of a process page: the marking, a button to
// fire each enabled transition, an event form, the running activities, the
// deferred and blocked transitions and the variables.
export function netPanel(id, def, session, onChange) {
  const enabledBox = h('div.net-enabled');
  const activities = h('div.net-activities');
  const waits = h('div.net-waits');
  const vars = h('div.net-vars');
  const evName = h('input#net-event-name', { type: 'text', placeholder: 'dawn', autocomplete: 'off', spellcheck: 'false' });
  const evArgs = h('textarea#net-event-args', { rows: 2, spellcheck: 'false', placeholder: '{"customer": "acme"}' });
  const evResult = h('p.muted.net-event-result', { 'aria-live': 'polite' });
  const events = (def.net.transitions || []).filter((t) => t.event).map((t) => t.event);
  const form = h('form.net-event-form', {
    onsubmit: async (e) => {
      e.preventDefault();
      let args = {};
      try { args = evArgs.value.trim() ? JSON.parse(evArgs.value) : {}; } catch { errorToast(new Error('The arguments are not a JSON object.')); return; }
      try {
        const r = await api.transitionEvent(id, evName.value.trim(), args);
        evResult.textContent = r.fired.length ? `Fired ${r.fired.join(', ')}.` : 'No transition took the event: it was ignored.';
        onChange();
      } catch (err) { errorToast(err); }
    },
  },
  h('label', { for: 'net-event-name' }, 'Event'), evName,
  h('label', { for: 'net-event-args' }, 'Arguments (JSON)'), evArgs,
  h('div.buttons', h('button.primary', { type: 'submit', 'data-action': 'send-event' }, 'Send event')),
  events.length ? h('p.muted', 'This net answers: ', events.join(', ')) : null,
  evResult);
  const el = h('section.panel.net-panel', { 'aria-labelledby': 'h-net' },
    h('h2#h-net', 'Petri net'),
    h('div.split.net-split',
      h('div', h('h3', 'Enabled transitions'), enabledBox, h('h3', 'Running activities'), activities, waits),
      h('aside', session.canAct ? [h('h3', 'Send an event'), form] : null, h('h3', 'Variables'), vars)));
  let current = null;

  function render(m) {
    current = m;
    const live = m.state === 'executing';
    clear(enabledBox).append(m.enabled.length
      ? h('ul.net-fire-list', m.enabled.map((t) => h('li', { 'data-transition': t },
        h('code', t), ' ',
        session.canAct && live ? h('button.small.primary', {
          type: 'button', 'data-action': 'fire', 'data-transition': t,
          onclick: async () => {
            try { await api.fire(id, t); toast(`Fired ${t}.`, 'ok'); onChange(); } catch (err) { errorToast(err); }
          },
        }, 'Fire') : null)))
      : h('p.muted', live ? 'No transition is enabled.' : `The process is ${m.state}.`));
    clear(activities).append(m.activities.length
      ? h('table.list', h('thead', h('tr', ['place', 'job', 'state'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', m.activities.map((a) => h('tr', { 'data-activity': a.place },
          h('td', a.place), h('td', idCode(a.job)), h('td', a.state)))))
      : h('p.muted', 'No activity runs.'));
    const deferred = Object.entries(m.deferred || {});
    const blocked = Object.entries(m.blocked || {});
    clear(waits).append(...[
      deferred.length ? [h('h3', 'Deferred actions'), h('ul', deferred.map(([t, at]) => h('li', h('code', t), ` tried again at ${at}`)))] : [],
      blocked.length ? [h('h3', 'Failed actions'), h('ul', blocked.map(([t, why]) => h('li', { 'data-blocked': t }, h('code', t), ` ${why}`)))] : [],
    ].flat());
    clear(vars).append(envTable(m.variables || {}));
  }

  async function refresh() {
    try {
      const m = await api.marking(id);
      render(m);
      return m;
    } catch (err) { errorToast(err); return null; }
  }
  return { el, refresh, get marking() { return current; } };
}

const yes = (v) => (v === null || v === undefined ? 'unknown' : v ? 'yes' : 'no');

// analysisPanel offers the analysis of a definition's state space.
export function analysisPanel(def) {
  const out = h('div.analysis-result', { 'aria-live': 'polite' });
  const btn = h('button', {
    type: 'button', 'data-read': 'analyse', // a read: offered to viewers too
    onclick: async () => {
      btn.disabled = true;
      clear(out).append(h('p.muted', 'Exploring the state space…'));
      try { renderAnalysis(out, await api.analysis(def.name, def.version)); } catch (err) { clear(out); errorToast(err); } finally { btn.disabled = false; }
    },
  }, 'Analyse the state space');
  const intro = isNetDefinition(def)
    ? 'Explores every marking the net can reach: boundedness, deadlocks, dead transitions, liveness, reversibility, soundness.'
    : 'Translates the process into a Petri net and explores it: whether an AND join can wait for ever, whether every run can finish.';
  return h('section.analysis-panel', { 'aria-labelledby': 'h-analysis' }, h('h2#h-analysis', 'Analysis'), h('p.muted', intro), btn, out);
}

function renderAnalysis(out, a) {
  const seq = (s) => (s.length ? s.join(' → ') : '(at the start)');
  const rows = [
    ['explored', a.complete ? (a.states !== null ? `${a.states.toLocaleString()} states, ${a.edges.toLocaleString()} edges` : 'the coverability graph') : 'incomplete'],
    ['bounded', a.bounded === null ? 'unknown' : a.bounded ? `yes (at most ${a.bound} token${a.bound === 1 ? '' : 's'} in a place)` : `no${(a.unboundedPlaces || []).length ? `: ${a.unboundedPlaces.join(', ')} grow` : ''}`],
    ['safe', yes(a.safe)], ['deadlock-free', yes(a.deadlockFree)], ['quasi-live', yes(a.quasiLive)],
    ['live', yes(a.live)], ['reversible', yes(a.reversible)],
  ];
  if (a.workflowNet) rows.push(['sound', yes(a.sound)]);
  if (a.net && a.net.translated) rows.push(['every run can finish', yes(a.completes)]);
  const parts = [
    a.reason ? h('p.muted', a.reason) : null,
    h('dl.meta.analysis', rows.map(([k, v]) => [h('dt', k), h('dd', { 'data-analysis': k }, v)])),
    (a.stuckJoins || []).length ? [h('h3', 'Joins that can wait for ever'), h('ul.stuck-joins', a.stuckJoins.map((s) =>
      h('li', { 'data-stuck': s.node }, h('strong', `${s.join} join of ${s.node}`), ` waits on ${s.arc} after `, h('code', seq(s.sequence)))))] : null,
    (a.deadlocks || []).length ? [h('h3', 'Dead markings (shortest firing sequences)'), h('ol.deadlocks', a.deadlocks.map((d, i) =>
      h('li', h('code', seq(d)), a.deadlockMarkings && a.deadlockMarkings[i] ? h('span.muted', ` → ${JSON.stringify(a.deadlockMarkings[i])}`) : null)))] : null,
    (a.deadTransitions || []).length ? h('p', 'Dead transitions: ', h('code', a.deadTransitions.join(', '))) : null,
    a.soundness && a.soundness.counterexample && a.soundness.counterexample.length ? h('p', 'Soundness counterexample: ', h('code', seq(a.soundness.counterexample))) : null,
    (a.approximations || []).length ? h('p.muted', 'Approximated: ', a.approximations.join('; ')) : null,
    a.net ? h('p.muted', `Analysed ${a.net.translated ? 'translation' : 'net'}: ${a.net.places} places, ${a.net.transitions} transitions.`) : null];
  clear(out).append(...parts.flat().filter(Boolean));
}

