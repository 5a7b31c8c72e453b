// Processes: the filtered, paged list, and the process page with the live
// token state over the graph, the event timeline, environments, nested links
// and the token actions (complete, backtrack, cancel).

import { isSchemaDefinition, schemaPanel } from './schema.js';
import { isBPMNDefinition, bpmnPanel } from './bpmn.js';
import { isNetDefinition, createNetView, netLegend, netPanel } from './net.js';
import { recordPanel, workApi } from './work.js';
import { api, followEvents } from './api.js';
import {
  h, clear, fmtTime, fmtClock, fmtValue, shortId, idCode, envTable, modal, attributeEditor, navigate, routeHref,
  toast, errorToast, stateBadge, idWithCopy, contextChips, parseValue, joinProgressWords,
} from './ui.js';
import { createGraphView, computeOverlay, tokenState, arcWaitsAtJoin, legend, nodeKey } from './graph.js';
import { editEnvDialog } from './actions.js';

async function openParent(tokenId) {
  try {
    const t = await api.nodeToken(tokenId);
    navigate(routeHref('processes', t.process));
  } catch (err) { errorToast(err); }
}

const TERMINAL = new Set(['completed', 'canceled']);

// The token sets of a process, read only when one of its tokens is in one.
async function loadTokenSets(id, tokens) {
  const any = (tokens.nodeTokens || []).some((t) => (t.tokenSets || []).length);
  return any ? api.tokenSets(id) : [];
}

const EVENT_WORDS = {
  PROCESS_CREATED: 'process created',
  PROCESS_STARTED: 'process started',
  PROCESS_PENDING_COMPLETE: 'process completing',
  PROCESS_COMPLETED: 'process completed',
  PROCESS_PENDING_CANCEL: 'process canceling',
  PROCESS_CANCELED: 'process canceled',
  NODE_TOKEN_CREATED: 'token created',
  NODE_TOKEN_ACCEPTED: 'guard accepted',
  NODE_TOKEN_EXECUTED: 'executed',
  NODE_TOKEN_DISCARDED: 'guard discarded the token',
  NODE_TOKEN_SKIPPED: 'guard skipped the node',
  NODE_TOKEN_COMPLETED: 'token completed',
  NODE_TOKEN_BACKTRACKED: 'token backtracked',
  NODE_TOKEN_DELAYED: 'guard delayed the token',
  ARC_TOKEN_CREATED: 'arc token created',
  ARC_TOKEN_PROCESSED: 'arc token processed',
  ARC_TOKEN_COMPLETED: 'arc token completed',
  ARC_TOKEN_BACKTRACKED: 'arc token backtracked',
  ARC_TOKEN_MERGED: 'arc token merged at join',
  ARC_TOKEN_INCOMPLETE_JOIN: 'arc token waits at join',
  ENV_CHANGED: 'environment changed',
  INCIDENT_OPENED: 'incident opened',
  INCIDENT_RESOLVED: 'incident resolved',
  TASK_CREATED: 'task created',
  TASK_CLAIMED: 'task claimed',
  TASK_RELEASED: 'task released',
  TASK_SAVED: 'task saved',
  TASK_COMPLETED: 'task completed',
  JOB_CREATED: 'job created',
  JOB_COMPLETED: 'job completed',
  JOB_FAILED: 'job failed',
  JOB_ERROR_THROWN: 'job threw an error',
  ATTACHMENT_SET: 'attachment set',
  ACTION_COMPLETED: 'action completed',
  TRANSITION_FIRED: 'transition fired',
  EVENT_IGNORED: 'event ignored',
};

function eventKind(type) {
  if (/BACKTRACK/.test(type)) return 'ev-backtrack';
  if (/DISCARD|SKIP|CANCEL/.test(type)) return 'ev-discard';
  if (/INCOMPLETE_JOIN|DELAY/.test(type)) return 'ev-wait';
  if (/COMPLETE/.test(type)) return 'ev-complete';
  if (/^PROCESS/.test(type)) return 'ev-process';
  if (/^ARC/.test(type)) return 'ev-arc';
  return 'ev-node';
}

const refId = (r) => (r && typeof r === 'object' ? r.id : r) || '';
const arcText = (arc) => {
  if (!arc) return '';
  const from = arc.fromExternal ? `${arc.fromExternal}/${arc.from}` : arc.from;
  const to = arc.toExternal ? `${arc.toExternal}/${arc.to}` : arc.to;
  return `${from} → ${to}${arc.name ? ` (${arc.name})` : ''}`;
};

export async function processView(el, id, session) {
  const state = {
    proc: null, def: null, tokens: { nodeTokens: [], arcTokens: [] }, tokenSets: [], events: [],
    selected: '', children: new Map(), parent: null, stream: null, destroyed: false, seenSeq: 0,
  };
  state.proc = await api.process(id);
  const [def, tokens, events] = await Promise.all([
    api.definition(state.proc.definition, state.proc.version),
    api.tokens(id),
    api.events(id).catch(() => []),
  ]);
  state.def = def;
  state.tokens = normTokens(tokens);
  state.tokenSets = await loadTokenSets(id, state.tokens);
  state.events = events;
  state.seenSeq = events.reduce((m, e) => Math.max(m, Number(e.seq) || 0), 0);
  const nodeByKey = new Map((def.nodes || []).map((n) => [nodeKey(n.name, n.external), n]));

  // ---- layout
  const title = h('h1.process-title', 'Process ', idWithCopy(id));
  const badge = h('span.badge-slot');
  const live = h('span.live', { 'aria-live': 'polite' });
  const cancelBtn = h('button.danger', { type: 'button', 'data-action': 'cancel-process', 'data-focus': 'cancel', onclick: cancelDialog }, 'Cancel process…');
  const actions = h('div.actions');
  const head = h('div.page-head',
    h('div', h('p.crumbs', h('a', { href: '#/processes' }, 'Processes'), ' / '), title,
      h('p.sub', 'of ', h('a', { href: routeHref('definitions', def.name, 'versions', def.version) }, `${def.name} v${def.version}`),
        ' · ', badge, ' · ', live),
      state.proc.context ? h('p.sub.context-line', 'context ', contextChips(state.proc.context)) : null),
    actions);
  const relations = h('div.relations');
  const attention = h('div.attention', { role: 'status' });
  const net = isNetDefinition(def) ? netPanel(id, def, session, () => scheduleRefresh()) : null;
  const graph = net ? createNetView(def) : createGraphView(def, {
    stateLines: true,
    onSelectNode: (n, key) => {
      const ts = state.tokens.nodeTokens.filter((t) => nodeKey(t.node, t.external) === key);
      const pick = ts.find((t) => !t.complete) || ts[ts.length - 1];
      if (pick) selectToken(pick.id, false);
      else { state.selected = ''; renderSelected(); tokenDetail.prepend(h('p.muted', `No token has reached ${n.name}.`)); }
    },
  });
  const activeBox = h('div.active-tokens');
  const timeline = h('ol.timeline', { 'aria-label': 'Events, oldest first', tabindex: '0' });
  const procEnv = h('div');
  const tokenDetail = h('div.token-detail');
  const setsBox = h('div.token-sets');
  const setsSection = h('section', { 'aria-labelledby': 'h-sets', hidden: true }, h('h2#h-sets', 'Token sets'), setsBox);
  const history = h('div.table-wrap', { tabindex: '0', role: 'region', 'aria-label': 'Token history (scrolls sideways on a narrow screen)' });
  const activeHeading = h('h2#h-active');
  const envHeading = h('h2#h-env', 'Process environment');

  const schema = isSchemaDefinition(def) ? schemaPanel(id) : null;
  // A BPMN process is drawn from its file's diagram, with the live overlay;
  // a click on an element selects its token as a click on the graph does.
  const bpmn = isBPMNDefinition(def) ? bpmnPanel(def, id, session, {
    onSelect: (name) => {
      const ts = state.tokens.nodeTokens.filter((t) => t.node === name && !t.external);
      const pick = ts.find((t) => !t.complete) || ts[ts.length - 1];
      if (pick) selectToken(pick.id, true);
      else { state.selected = ''; renderSelected(); tokenDetail.prepend(h('p.muted', `No token has reached ${name}.`)); }
    },
    onChange: () => refresh(),
  }) : null;
  el.append(head, attention, relations, h('div.split',
    h('section.panel.graph-panel', { 'aria-label': 'Graph with token state' }, graph.el, net ? netLegend(true) : legend(true, def)),
    h('aside.panel.side',
      net ? net.el : h('section', { 'aria-labelledby': 'h-active' }, activeHeading, activeBox),
      h('section', { 'aria-labelledby': 'h-timeline' }, h('h2#h-timeline', 'Timeline'), timeline))),
  h('div.split.lower',
    h('section.panel', { 'aria-labelledby': 'h-history' }, h('h2#h-history', 'Token history'), history),
    h('aside.panel.side',
      h('section', { 'aria-labelledby': 'h-token' }, h('h2#h-token', 'Selected token'), tokenDetail),
      setsSection,
      h('section', { 'aria-labelledby': 'h-env' }, envHeading, procEnv))));
  if (schema) {
    el.insertBefore(schema.el, el.children[4] || null);
    schema.refresh();
  }
  if (bpmn) {
    el.insertBefore(bpmn.el, el.children[3] || null);
    bpmn.refresh(state.tokens);
  }
  if (net) {
    net.refresh().then((m) => { if (m) graph.ready.then(() => graph.setMarking(m)).catch(() => {}); });
  }
  const record = recordPanel(id);
  el.append(record.el);
  record.refresh();

  // ---- rendering
  const tokenById = () => new Map(state.tokens.nodeTokens.map((t) => [t.id, t]));
  const arcById = () => new Map(state.tokens.arcTokens.map((a) => [a.id, a]));
  const nodeLabel = (t) => (t ? (t.external ? `${t.external} / ${t.node}` : t.node) : '');
  const executing = () => !TERMINAL.has(state.proc.state) && state.proc.state !== 'pending_cancel';

  function renderHead() {
    clear(badge).append(stateBadge(state.proc.state));
    if (state.proc.stalled) badge.append(' ', h('span.badge.stalled', 'stalled'));
    badge.dataset.state = state.proc.state;
    clear(actions);
    if (session.canAct && executing()) actions.append(cancelBtn);
    clear(procEnv).append(envTable(state.proc.env));
    clear(envHeading).append('Process environment');
    if (session.canAct && executing()) {
      envHeading.append(' ', h('button.small', { type: 'button', 'data-action': 'edit-process-env', onclick: editProcessEnv }, 'Edit…'));
    }
  }

  // The attention banner: a stalled process says which join waits for
  // which arcs; a delayed token whose guard failed says why, and that an
  // incident waits to be resolved.
  function renderAttention() {
    clear(attention);
    const p = state.proc;
    if (p.stalled) {
      attention.append(h('div.alert.stalled', { 'data-attention': 'stalled' },
        h('strong', 'Stalled. '), 'No token is active, and these joins wait for arcs that nothing will complete:',
        h('ul', (p.stall || []).map((j) => h('li', { 'data-join': j.node },
          h('strong', j.external ? `${j.external} / ${j.node}` : j.node), ` (${j.join} join): ${joinProgressWords(joinWait(j.node, j.external))}; arrived from `,
          arcsWords(j.waiting), '; still needs ', arcsWords(j.missing), '.'))),
        session.canAct ? rescueButtons(p) : null));
    }
    for (const f of p.timerFailures || []) {
      const act = session.canAct && executing() && f.incident;
      attention.append(h('div.alert.failed', { 'data-attention': 'timer-failed', 'data-token': f.token },
        h('strong', 'A timer failed. '), `The guard of the delayed token on ${f.node || f.token} failed at ${fmtTime(f.at)}: `,
        h('code', f.message),
        f.incident
          ? h('p.small', `Incident ${f.incident} is open on the token: fix the cause (for instance the process environment), then resolve the incident to run the guard again.`)
          : h('p.small', `Tried ${f.attempts} time${f.attempts === 1 ? '' : 's'}; it is tried again later.`),
        act ? h('div.rescue',
          h('button.small', { type: 'button', 'data-action': 'fix-env', onclick: editProcessEnv }, 'Edit the process environment…'), ' ',
          h('button.primary.small', { type: 'button', 'data-action': 'resolve-incident', 'data-incident': f.incident, onclick: (e) => resolveIncident(e.currentTarget, f) },
            'Resolve: run the guard again')) : null));
    }
  }

  // For each arc a stalled join still needs, the last token of the node it
  // leaves that ended its branch: backtracking to it runs the branch again.
  function rescueButtons(p) {
    const canBacktrack = executing() && !schema && !bpmn && !net;
    const seen = new Set();
    const buttons = [];
    for (const j of p.stall || []) {
      for (const a of j.missing || []) {
        const t = state.tokens.nodeTokens.filter((x) => x.node === a.from && (x.external || '') === (a.fromExternal || '') &&
          x.complete && x.executionType === 'forward').pop();
        if (!t || seen.has(t.id)) continue;
        seen.add(t.id);
        const discarded = t.guardAction === 'discard';
        buttons.push(h('li', { 'data-rescue': t.id },
          canBacktrack ? h('button.small', { type: 'button', 'data-action': 'backtrack', 'data-token': t.id, onclick: () => backtrackDialog(t) },
            `Backtrack to ${nodeLabel(t)}…`) : h('strong', nodeLabel(t)), ' ',
          h('span.small', discarded
            ? 'its guard discarded the token: change what the guard reads first (the process environment), or it is discarded again'
            : `ended the branch ${fmtTime(t.completedAt)}`)));
      }
    }
    if (!buttons.length) return h('p.small', 'Backtrack to a completed token below to run its branch again, or cancel the process.');
    return h('div.rescue', h('p.small', 'To run a missing branch again, backtrack to the token that ended it, or cancel the process:'), h('ul.rescue-list', buttons));
  }

  async function resolveIncident(btn, f) {
    btn.disabled = true;
    try {
      await workApi.resolve(f.incident, {});
      toast(`Resolved incident ${f.incident}: the guard runs again.`, 'ok');
      await refresh();
    } catch (err) {
      btn.disabled = false;
      errorToast(err);
    }
  }

  // The process's wait at a join, with the progress the read gave it.
  const joinWait = (node, external) => (state.proc.waitingAt || [])
    .find((w) => w.kind === 'join' && w.node === node && (w.external || '') === (external || '')) || {};

  const arcsWords = (as) => ((as || []).length
    ? as.map((a) => `${a.fromExternal ? `${a.fromExternal} / ` : ''}${a.from}${a.name ? ` (“${a.name}”)` : ''}`).join(', ')
    : 'nothing');

  async function editProcessEnv() {
    const env = await editEnvDialog('Edit the process environment',
      'Attributes every node of the process sees (a token\'s own attributes come first).',
      state.proc.env, (patch) => api.patchProcessEnv(id, patch));
    if (env) { toast('The process environment was saved.', 'ok'); await refresh(); }
  }

  async function editTokenEnv(t) {
    const env = await editEnvDialog('Edit the token environment',
      `The attributes of the token at ${nodeLabel(t)}; the tokens after it inherit them.`,
      t.env, (patch) => api.patchTokenEnv(t.id, patch));
    if (env) { toast('The token environment was saved.', 'ok'); await refresh(); }
  }

  // The tokens a canceled process left active are stopped, not waiting.
  const stopped = () => state.proc.state === 'canceled' || state.proc.state === 'pending_cancel';
  const shownState = (t) => {
    const st = tokenState(t);
    return stopped() && (st === 'active' || st === 'delayed') ? 'stopped' : st;
  };

  function renderActive() {
    clear(activeBox);
    const act = state.tokens.nodeTokens.filter((t) => tokenState(t) === 'active' || tokenState(t) === 'delayed');
    clear(activeHeading).append(!executing() ? (stopped() ? 'Stopped by the cancel' : 'Active tokens') : session.canAct ? 'Waiting for you' : 'Active tokens');
    if (stopped()) {
      activeBox.append(h('p.muted', `The process is ${state.proc.state.replace('_', ' ')}: nothing waits any more.`));
      if (act.length) {
        activeBox.append(h('ul.token-cards.stopped', act.map((t) => h('li.token-card.stopped', { 'data-token': t.id, 'data-node': t.node },
          h('div', h('strong', nodeLabel(t)), ' ', h('span.badge.tok-stopped', 'stopped')),
          h('div.muted.small', `was active since ${fmtTime(t.createdAt)}`)))));
      }
      return;
    }
    const joins = (state.proc.waitingAt || []).filter((w) => w.kind === 'join');
    const joinCards = joins.length && !state.proc.stalled ? h('ul.join-cards', joins.map((w) => {
      const n = nodeByKey.get(nodeKey(w.node, w.external));
      return h('li.join-card', { 'data-join': w.node },
        h('div', h('strong', w.external ? `${w.external} / ${w.node}` : w.node), ' ', h('span.muted', n ? `${n.join || 'or'} join` : 'join')),
        h('div.small.join-progress', joinProgressWords(w)),
        h('div.muted.small', `waiting since ${fmtTime(w.since)}`));
    })) : null;
    if (!act.length) {
      activeBox.append(h('p.muted', TERMINAL.has(state.proc.state) ? `The process is ${state.proc.state}.` : state.proc.stalled ? 'No active token: the process is stalled.' : 'No active token.'));
      if (joinCards) activeBox.append(h('h3', 'Joins waiting'), joinCards);
      return;
    }
    activeBox.append(h('ul.token-cards', act.map((t) => {
      const n = nodeByKey.get(nodeKey(t.node, t.external));
      // A nested node's token completes by itself when its nested process
      // completes; while one runs, the card links to it instead of offering
      // to complete the token by hand.
      const kids = state.children.get(t.id) || [];
      const running = kids.filter((p) => !TERMINAL.has(p.state));
      const delayed = tokenState(t) === 'delayed';
      const failed = (state.proc.timerFailures || []).find((f) => f.token === t.id);
      return h(delayed ? 'li.token-card.delayed' : 'li.token-card', { 'data-token': t.id, 'data-node': t.node },
        h('div', h('strong', nodeLabel(t)), ' ', h('span.muted', n ? n.type : ''), delayed ? h('span.badge.state-delayed', 'delayed') : null,
          failed ? h('span.badge.failed', 'guard failed') : null),
        h('div.muted.small', 'token ', idCode(t.id), ` · since ${fmtTime(t.createdAt)}`),
        (t.tokenSets || []).length ? h('div.small.memberships', t.tokenSets.map((m, i) => [i ? ' · ' : '', membership(m)])) : null,
        delayed && t.delayUntil && !failed ? h('div.small.delay', { 'data-delay-until': t.delayUntil }, 'Its guard runs again at ', h('strong', fmtTime(t.delayUntil)),
          n && n.guard ? [' (', h('code', n.guard), ')'] : null) : null,
        failed ? h('div.small.failed', 'Its guard failed when its time came', failed.incident ? ['; incident ', idCode(failed.incident), ' waits to be resolved'] : '', '.') : null,
        running.length ? h('div.small', 'Waits for nested process ', running.map((p, i) => [i ? ', ' : '',
          h('a', { href: routeHref('processes', p.id), 'data-rel': 'child', title: p.id }, `${p.definition} ${shortId(p.id)}`)])) : null,
        h('div.row-actions',
          h('button.small', { type: 'button', 'data-focus': `details:${t.id}`, onclick: () => selectToken(t.id, true) }, 'Details'),
          session.canAct && executing() && !running.length && !schema && !bpmn && !net
            ? h('button.small.primary', { type: 'button', 'data-action': 'complete', 'data-node': t.node, 'data-focus': `card-complete:${t.id}`, onclick: () => completeDialog(t) },
              delayed ? 'Complete now…' : 'Complete…')
            : null));
    })));
    if (joinCards) activeBox.append(h('h3', 'Joins waiting'), joinCards);
  }

  function renderTimeline() {
    const stick = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 40;
    const toks = tokenById();
    const arcsById = arcById();
    const shown = state.events.slice(-500);
    clear(timeline);
    if (state.events.length > shown.length) timeline.append(h('li.muted', `${state.events.length - shown.length} earlier events not shown`));
    for (const ev of shown) {
      const t = toks.get(refId(ev.nodeToken));
      const a = arcsById.get(refId(ev.arcToken));
      const what = EVENT_WORDS[ev.type] || ev.type;
      const where = t ? nodeLabel(t) : (a ? arcText(a.arc) : '');
      const fresh = Number(ev.seq) > state.seenSeq ? ' fresh' : '';
      const li = h('li', { class: `ev ${eventKind(ev.type)}${fresh}`, 'data-seq': ev.seq, 'data-type': ev.type },
        h('time', { datetime: ev.at || '' }, fmtClock(ev.at)),
        h('span.ev-what', where ? h('strong', where) : null, where ? ' ' : '', what,
          ev.arcNames && ev.arcNames.length ? ` on ${ev.arcNames.map((x) => (x === null ? 'the default arc' : `“${x}”`)).join(', ')}` : '',
          ev.type === 'NODE_TOKEN_COMPLETED' && Array.isArray(ev.arcNames) && !ev.arcNames.length ? ' on no arc: its branch ends' : ''));
      li.title = ev.type;
      if (t) {
        li.tabIndex = 0;
        li.dataset.focus = `ev:${ev.seq}`;
        li.addEventListener('click', () => selectToken(t.id, true));
        li.addEventListener('keydown', (e) => { if (e.key === 'Enter') selectToken(t.id, true); });
      }
      timeline.append(li);
    }
    state.seenSeq = state.events.reduce((m, e) => Math.max(m, Number(e.seq) || 0), state.seenSeq);
    if (stick) timeline.scrollTop = timeline.scrollHeight;
  }

  function renderHistory() {
    const rows = state.tokens.nodeTokens.map((t) => {
      const st = shownState(t);
      const canBacktrack = session.canAct && executing() && t.complete && st === 'completed' && !schema && !bpmn && !net;
      return h('tr', { 'data-token': t.id, class: [`tok-${st}`, t.id === state.selected ? 'selected' : ''].join(' ') },
        h('td', h('button.link', { type: 'button', 'data-focus': `select:${t.id}`, onclick: () => selectToken(t.id, true) }, nodeLabel(t))),
        h('td', h('span', { class: `badge tok-${st}` }, st)),
        h('td', t.executionType || ''),
        h('td', t.guardAction || h('span.muted', '—')),
        h('td', fmtClock(t.createdAt)),
        h('td', t.completedAt ? fmtClock(t.completedAt) : h('span.muted', '—')),
        h('td.row-actions',
          (st === 'active' || st === 'delayed') && session.canAct && executing() && !runsNested(t) && !schema && !bpmn && !net
            ? h('button.small.primary', { type: 'button', 'data-action': 'complete', 'data-node': t.node, 'data-focus': `complete:${t.id}`, onclick: () => completeDialog(t) },
              st === 'delayed' ? 'Complete now…' : 'Complete…') : null,
          canBacktrack
            ? h('button.small', { type: 'button', 'data-action': 'backtrack', 'data-node': t.node, 'data-focus': `backtrack:${t.id}`, onclick: () => backtrackDialog(t) }, 'Backtrack here…') : null));
    });
    clear(history).append(h('table.list.tokens',
      h('caption.visually-hidden', 'Node tokens in creation order'),
      h('thead', h('tr', ['node', 'state', 'execution', 'guard', 'created', 'completed', ''].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', rows)));
  }

  // A token's membership in a token set, with the member's own attributes.
  function membership(m) {
    const set = state.tokenSets.find((s) => s.id === m.set);
    const env = set && set.memberEnvs ? set.memberEnvs[m.member] || {} : {};
    const keys = Object.keys(env).sort();
    return h('span.membership', { 'data-set': m.set, 'data-member': String(m.member) }, `${m.name} #${m.member}`,
      keys.length ? [' (', keys.map((k, i) => [i ? ', ' : '', h('code', `${k}=${fmtValue(env[k])}`)]), ')'] : null);
  }

  // A card for each token set: its shared attributes, and a row of
  // attributes for each member.
  function renderTokenSets() {
    clear(setsBox);
    setsSection.hidden = !state.tokenSets.length;
    setsBox.append(...state.tokenSets.map((s) => {
      const envs = s.memberEnvs || [];
      const keys = [...new Set(envs.flatMap((e) => Object.keys(e || {})))].sort();
      return h('div.token-set-card', { 'data-set': s.id },
        h('div', h('strong', s.name), ' ', h('span.muted', `${s.members} member${s.members === 1 ? '' : 's'} · `), idCode(s.id)),
        envTable(s.env, 'Shared by the members'),
        keys.length
          ? h('table.env.member-env', h('caption', 'Each member\'s own'),
            h('thead', h('tr', h('th', { scope: 'col' }, 'member'), keys.map((k) => h('th', { scope: 'col' }, k)))),
            h('tbody', envs.map((e, i) => h('tr', { 'data-member': String(i) }, h('th', { scope: 'row' }, `#${i}`),
              keys.map((k) => h('td', e && k in e ? h('code', fmtValue(e[k])) : h('span.muted', '—')))))))
          : h('p.muted', 'The members have no attributes of their own.'));
    }));
  }

  const runsNested = (t) => (state.children.get(t.id) || []).some((p) => !TERMINAL.has(p.state));

  function renderSelected() {
    clear(tokenDetail);
    const t = tokenById().get(state.selected);
    if (!t) { tokenDetail.append(h('p.muted', 'Choose a token in the graph, the timeline or the history.')); return; }
    const arcs = arcById();
    const arcList = (ids) => (ids || []).map((x) => arcs.get(x)).filter(Boolean);
    tokenDetail.append(
      h('dl.meta',
        h('dt', 'node'), h('dd', nodeLabel(t)),
        h('dt', 'token'), h('dd', h('code', t.id)),
        h('dt', 'state'), h('dd', shownState(t), ` (${t.executionType || 'forward'})`),
        t.delayUntil && !t.complete ? [h('dt', 'delayed until'), h('dd', fmtTime(t.delayUntil))] : null,
        h('dt', 'guard'), h('dd', t.guardAction || '—'),
        h('dt', 'created'), h('dd', fmtTime(t.createdAt)),
        h('dt', 'completed'), h('dd', t.completedAt ? fmtTime(t.completedAt) : '—'),
        h('dt', 'came in on'), h('dd', arcList(t.parents).map((a) => arcText(a.arc)).join('; ') || '—'),
        h('dt', 'went out on'), h('dd', arcList(t.children).map((a) => `${arcText(a.arc)}${arcWaitsAtJoin(a) ? ' (waiting at the join)' : ''}`).join('; ') || '—'),
        (t.tokenSets || []).length ? [h('dt', 'token sets'), h('dd', t.tokenSets.map((m, i) => [i ? '; ' : '', membership(m)]))] : null),
      envTable(t.env, 'Token environment'),
      session.canAct && executing() && !t.complete
        ? h('div.row-actions', h('button.small', { type: 'button', 'data-action': 'edit-token-env', onclick: () => editTokenEnv(t) }, 'Edit the token environment…'))
        : null);
    const kids = state.children.get(t.id);
    if (kids && kids.length) {
      tokenDetail.append(h('p', 'Nested processes: ', kids.map((p, i) => [i ? ', ' : '',
        h('a', { href: routeHref('processes', p.id), title: p.id }, `${p.definition} ${shortId(p.id)}`), ' ', stateBadge(p.state)])));
    }
  }

  function renderRelations() {
    clear(relations);
    const items = [];
    if (state.parent) {
      items.push(h('li', 'Nested in ', h('a', { href: routeHref('processes', state.parent.process), 'data-rel': 'parent', title: state.parent.process }, `process ${shortId(state.parent.process)}`),
        ` at node ${nodeLabel(state.parent)}`));
    } else if (state.proc.parentToken) {
      items.push(h('li', 'Nested under token ', idCode(state.proc.parentToken)));
    }
    for (const [tokenId, kids] of state.children) {
      const t = tokenById().get(tokenId);
      for (const p of kids) {
        items.push(h('li', `Node ${nodeLabel(t)} started nested process `,
          h('a', { href: routeHref('processes', p.id), 'data-rel': 'child', title: p.id }, `${p.definition} ${shortId(p.id)}`), ' ', stateBadge(p.state)));
      }
    }
    if (items.length) relations.append(h('ul.relations-list', items));
  }

  // Live updates rebuild the lists; the control that had the keyboard focus
  // gets it back in its new copy, so that updates never steal the focus.
  function keepFocus(render) {
    const active = document.activeElement;
    const key = active && el.contains(active) && active.dataset ? active.dataset.focus : '';
    render();
    if (!key || document.activeElement === active) return;
    const again = el.querySelector(`[data-focus="${CSS.escape(key)}"]`);
    if (again) again.focus({ preventScroll: true });
  }

  function renderAll() {
    if (state.destroyed) return;
    keepFocus(renderEverything);
  }

  function renderEverything() {
    graph.setOverlay(computeOverlay(def, state.tokens, { stopped: stopped(), waits: state.proc.waitingAt || [] }));
    renderHead();
    renderAttention();
    renderActive();
    renderTimeline();
    renderHistory();
    renderSelected();
    renderTokenSets();
    renderRelations();
  }

  function selectToken(tokenId, focusGraph) {
    state.selected = tokenId;
    const t = tokenById().get(tokenId);
    if (t && focusGraph) graph.select(nodeKey(t.node, t.external));
    renderSelected();
    for (const r of history.querySelectorAll('tr.selected')) r.classList.remove('selected');
    const row = history.querySelector(`tr[data-token="${CSS.escape(tokenId)}"]`);
    if (row) row.classList.add('selected');
  }

  // ---- nested processes, both ways
  async function loadRelations() {
    if (state.proc.parentToken && !state.parent) {
      state.parent = await api.nodeToken(state.proc.parentToken).catch(() => null);
    }
    const nested = state.tokens.nodeTokens.filter((t) => {
      const n = nodeByKey.get(nodeKey(t.node, t.external));
      return n && n.type === 'nested';
    });
    await Promise.all(nested.map(async (t) => {
      const kids = await api.processesAll({ parentToken: t.id }).catch(() => null);
      if (kids) state.children.set(t.id, kids);
    }));
  }

  // ---- live updates
  let refreshTimer = 0;
  let refreshing = null;
  async function refresh() {
    if (refreshing) { await refreshing; }
    refreshing = (async () => {
      const [p, tk] = await Promise.all([api.process(id), api.tokens(id)]);
      if (schema) schema.refresh();
      if (net) { const m = await net.refresh(); if (m && !state.destroyed) graph.setMarking(m); }
      record.refresh();
      if (state.destroyed) return;
      const sets = await loadTokenSets(id, tk);
      if (state.destroyed) return;
      state.proc = p;
      state.tokens = normTokens(tk);
      state.tokenSets = sets;
      if (bpmn) bpmn.refresh(state.tokens);
      await loadRelations();
      renderAll();
      if (TERMINAL.has(p.state) && state.stream) {
        // Let late events arrive, then stop listening.
        setTimeout(() => { if (state.stream) { state.stream.stop(); state.stream = null; live.textContent = 'process ended'; } }, 1500);
      }
    })().catch((err) => { if (!state.destroyed) errorToast(err); }).finally(() => { refreshing = null; });
    return refreshing;
  }
  function scheduleRefresh() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, 120);
  }

  function startStream() {
    if (TERMINAL.has(state.proc.state)) { live.textContent = 'process ended'; return; }
    const last = state.events.reduce((m, e) => Math.max(m, Number(e.seq) || 0), 0);
    state.stream = followEvents(id, last, {
      onEvent: (ev) => {
        state.events.push(ev);
        keepFocus(renderTimeline);
        scheduleRefresh();
      },
      onProblem: (msg) => errorToast(new Error(`The live event stream stopped: ${msg}. Reconnecting…`)),
      onState: (s) => {
        live.textContent = s === 'live' ? '● live' : s === 'reconnecting' ? 'reconnecting…' : '';
        live.dataset.state = s;
      },
    });
  }

  // ---- actions
  async function completeDialog(t) {
    const outs = (def.arcs || []).filter((a) => a.from === t.node && (a.fromExternal || '') === (t.external || ''));
    const names = [];
    for (const a of outs) if (!names.some((x) => x === (a.name ?? null))) names.push(a.name ?? null);
    const hasDefault = names.includes(null);
    const boxes = names.map((name, i) => {
      const targets = outs.filter((a) => (a.name ?? null) === name).map((a) => (a.toExternal ? `${a.toExternal}/${a.to}` : a.to));
      const cb = h('input', { type: 'checkbox', id: `arc-${i}`, checked: hasDefault ? name === null : i === 0, 'data-arc': name === null ? '' : name });
      return { name, cb, el: h('div.check', cb, h('label', { for: `arc-${i}` }, name === null ? 'default arc' : `arc “${name}”`, h('span.muted', ` → ${targets.join(', ')}`))) };
    });
    const attrs = attributeEditor('Token attributes to set first (optional)');
    // Completing with a new token set (Sarasvati's completeWithNewTokenSet).
    const setOn = h('input#ts-on', { type: 'checkbox', 'data-field': 'token-set' });
    const setName = h('input#ts-name', { type: 'text', placeholder: 'e.g. reviewers', autocomplete: 'off' });
    const setCount = h('input#ts-count', { type: 'number', min: 1, value: 2 });
    const setEnv = attributeEditor('Attributes all members share (optional)');
    const memberEnv = attributeEditor('Attributes per member: one value per member, separated by commas (optional)');
    const setFields = h('div.token-set-fields', { hidden: true },
      h('div.form-grid', h('label', { for: 'ts-name' }, 'Set name'), setName, h('label', { for: 'ts-count' }, 'Members'), setCount),
      setEnv.el, memberEnv.el);
    setOn.addEventListener('change', () => { setFields.hidden = !setOn.checked; });
    const delayed = tokenState(t) === 'delayed';
    const n = def.nodes && def.nodes.find((x) => x.name === t.node && (x.external || '') === (t.external || ''));
    const body = h('div',
      h('p', 'Complete the token at ', h('strong', nodeLabel(t)), '.'),
      delayed ? h('div.alert.warn', { 'data-warning': 'delayed' },
        h('strong', 'This token is delayed by its guard'), t.delayUntil ? ` until ${fmtTime(t.delayUntil)}` : '',
        n && n.guard ? [' (', h('code', n.guard), ')'] : null,
        '. Completing it now skips the rest of the delay: its guard is not evaluated again.') : null,
      names.length
        ? h('fieldset.arcs', h('legend', names.length > 1 ? 'Leave on which arcs?' : 'Leave on'), boxes.map((b) => b.el))
        : h('p.muted', 'This node has no outgoing arcs.'),
      attrs.el,
      names.length ? h('fieldset.token-set', h('legend', 'Token set'),
        h('div.check', setOn, h('label', { for: 'ts-on' }, 'Complete with a new token set: several tokens on the one arc chosen, each a member with its own attributes')),
        setFields) : null);
    const done = await modal(delayed ? 'Complete a delayed token' : 'Complete token', body, {
      submitLabel: delayed ? 'Complete now' : 'Complete',
      onSubmit: async () => {
        const chosen = boxes.filter((b) => b.cb.checked).map((b) => b.name);
        if (names.length && !chosen.length) throw new Error('Choose at least one arc to leave on.');
        const req = {};
        if (!(chosen.length === 1 && chosen[0] === null) && chosen.length) req.arcs = chosen;
        const env = attrs.value();
        if (Object.keys(env).length) req.env = env;
        if (setOn.checked) {
          if (chosen.length !== 1) throw new Error('A token set goes out on one arc: choose exactly one.');
          const name = setName.value.trim();
          const count = Number(setCount.value);
          if (!name) throw new Error('Name the token set.');
          if (!Number.isInteger(count) || count < 1) throw new Error('A token set needs at least one member.');
          req.arcs = chosen;
          req.tokenSet = { name, count };
          const se = setEnv.value();
          if (Object.keys(se).length) req.tokenSet.env = se;
          const me = {};
          for (const row of memberEnv.el.querySelectorAll('.attr-row')) {
            const k = row.querySelector('.attr-name').value.trim();
            if (!k) continue;
            me[k] = row.querySelector('.attr-value').value.split(',').map((v) => parseValue(v.trim()));
          }
          if (Object.keys(me).length) req.tokenSet.memberEnv = me;
        }
        return api.completeToken(t.id, req);
      },
    });
    if (done) {
      toast(`Completed ${nodeLabel(t)}.`, 'ok');
      await refresh();
    }
  }

  async function backtrackDialog(t) {
    const done = await modal('Backtrack the process',
      h('p', 'Undo everything after the token at ', h('strong', nodeLabel(t)), ` (completed ${fmtClock(t.completedAt)}) and make it active again?`),
      { submitLabel: 'Backtrack', danger: true, onSubmit: () => api.backtrackToken(t.id) });
    if (done) {
      toast(`Backtracked to ${nodeLabel(t)}.`, 'ok');
      await refresh();
    }
  }

  async function cancelDialog() {
    const done = await modal('Cancel the process',
      h('p', 'Cancel this process? Its active nested processes are canceled too. This cannot be undone.'),
      { submitLabel: 'Cancel process', danger: true, onSubmit: () => api.cancelProcess(id) });
    if (done) {
      toast('The process was canceled.', 'ok');
      await refresh();
    }
  }

  await loadRelations().catch(() => {});
  renderAll();
  // A large graph opens on where the process waits.
  graph.ready.then(() => {
    const overlay = computeOverlay(def, state.tokens, { stopped: stopped(), waits: state.proc.waitingAt || [] });
    graph.setOverlay(overlay);
    if (graph.focus) graph.focus([...overlay.nodes].filter(([, s]) => ['active', 'delayed', 'waiting'].includes(s.primary)).map(([k]) => k));
  }).catch(() => {});
  startStream();

  return () => {
    state.destroyed = true;
    clearTimeout(refreshTimer);
    if (state.stream) state.stream.stop();
    graph.destroy();
    if (bpmn) bpmn.destroy();
  };
}

function normTokens(tk) {
  return {
    nodeTokens: (tk && tk.nodeTokens) || [],
    arcTokens: (tk && tk.arcTokens) || [],
  };
}
