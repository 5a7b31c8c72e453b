// The schema view of a process page: a schema instance's almanac, its node
// instances (one per visit, in order) with their action instances, its
// queued events and the child instances its actions started.

import { api } from './api.js';
import { h, clear, envTable, fmtClock, shortId, routeHref, errorToast } from './ui.js';

export function isSchemaDefinition(def) {
  return !!def && def.format === 'schema';
}

// schemaPanel returns the panel's element and refresh(), which reads the
// almanac and the node instances again.
export function schemaPanel(id) {
  const almanac = h('div.almanac');
  const visits = h('div.table-wrap.visits', { tabindex: '0', 'aria-label': 'Node instances' });
  const queue = h('div.queue');
  const el = h('section.panel.schema-panel', { 'aria-labelledby': 'h-schema' },
    h('h2#h-schema', 'Schema instance'),
    h('div.split.schema-split',
      h('div', h('h2', 'Node instances and actions'), visits),
      h('aside', h('h2', 'Almanac'), almanac, h('h2', 'Queued events'), queue)));

  async function refresh() {
    try {
      const [alm, inst] = await Promise.all([api.almanac(id), api.schemaNodes(id)]);
      clear(almanac).append(envTable(alm));
      renderVisits(inst);
      clear(queue).append((inst.queue || []).length
        ? h('ol', inst.queue.map((m) => h('li', h('strong', m.name), ' ', h('code', JSON.stringify(m.payload ?? null)))))
        : h('p.muted', 'No event waits.'));
      if (inst.dropped) queue.append(h('p.muted', `${inst.dropped} event(s) dropped.`));
    } catch (err) { errorToast(err); }
  }

  function renderVisits(inst) {
    const rows = [];
    (inst.items || []).forEach((n, i) => {
      rows.push(h('tr', { class: `visit-head st-${n.state}`, 'data-visit': i, 'data-node': n.node },
        h('td', String(i + 1)),
        h('td', h('strong', n.node), ' ', h('span.muted', n.kind)),
        h('td', { 'data-state': n.state }, n.state),
        h('td', fmtClock(n.startedAt), n.finishedAt ? ` – ${fmtClock(n.finishedAt)}` : ''),
        h('td', n.event ? [h('span', `event ${n.event.name} `), h('code', JSON.stringify(n.event.payload ?? null))] : '',
          n.due ? h('div.muted', `due ${fmtClock(n.due)}`) : null,
          n.arc ? h('div.muted', `→ ${n.arc}`) : null,
          n.error ? h('div.error', n.error) : null,
          (n.children || []).length ? h('div', 'children: ', n.children.map((c, j) => [j ? ', ' : '', h('a', { href: routeHref('processes', c), 'data-rel': 'schema-child', title: c }, shortId(c))])) : null)));
      for (const a of n.actions || []) {
        rows.push(h('tr', { class: `action st-${a.state}`, 'data-action-name': a.name, 'data-state': a.state },
          h('td', ''),
          h('td', '· ', a.name, ' ', h('span.muted', a.do)),
          h('td', a.state),
          h('td', a.attempts ? `${a.attempts} attempt${a.attempts > 1 ? 's' : ''}` : '', a.finishedAt ? h('div.muted', fmtClock(a.finishedAt)) : null),
          h('td', a.result !== null && a.result !== undefined ? h('code', JSON.stringify(a.result)) : '', a.error ? h('div.error', a.error) : null)));
      }
    });
    clear(visits);
    if (inst.trimmed) visits.append(h('p.muted', `${inst.trimmed} earlier visits are no longer kept in detail (the token history has them).`));
    visits.append(h('table.list.actions',
      h('thead', h('tr', ['#', 'node / action', 'state', 'time', 'event · result'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', rows)));
  }
  return { el, refresh };
}
