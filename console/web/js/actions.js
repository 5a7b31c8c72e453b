// Dialogs that change things, shared by the pages: editing a process's or
// a token's environment, and sending an event to the process whose context
// matches. The pages show them to operators and admins only.

import { api } from './api.js';
import { h, modal, attributeEditor, navigate, routeHref, toast, fmtValue } from './ui.js';

// The text an attribute value is edited as: what parseValue reads back as
// the same value (a string that would read as a number, a boolean or null
// is quoted).
export function editText(v) {
  if (v && typeof v === 'object') return JSON.stringify(v);
  if (typeof v !== 'string') return fmtValue(v);
  const t = v.trim();
  if (t !== v || /^(true|false|null)$/.test(t) || /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t) || (t.startsWith('"') && t.endsWith('"'))) {
    return JSON.stringify(v);
  }
  return v;
}

// editEnvDialog edits an environment: rows start with its attributes;
// a row removed removes the attribute, a row changed or added sets it.
// save(patch) sends the patch (null removes). Resolves to the saved
// environment, or null when cancelled.
export async function editEnvDialog(title, intro, env, save) {
  const ed = attributeEditor('Attributes');
  const names = Object.keys(env || {}).sort();
  for (const k of names) ed.addRow(k, editText(env[k]));
  if (!names.length) ed.addRow();
  const body = h('div', h('p', intro),
    h('p.muted.small', 'Values: 42 and 1.5 are numbers, true and false booleans, {"date": "2026-05-01T08:00:00Z"} a date, anything else text ("42" in quotes is text). Remove a row to remove the attribute.'),
    ed.el);
  return modal(title, body, {
    submitLabel: 'Save',
    onSubmit: async () => {
      const now = ed.value();
      const patch = {};
      for (const k of names) if (!(k in now)) patch[k] = null;
      for (const [k, v] of Object.entries(now)) {
        if (!(k in (env || {})) || JSON.stringify(env[k]) !== JSON.stringify(v)) patch[k] = v;
      }
      if (!Object.keys(patch).length) return env;
      return save(patch);
    },
  });
}

// sendEventDialog sends an incoming event: it goes to the one executing
// process whose context holds every pair, merges its attributes into that
// process's environment and completes its token on the node given (or its
// only active token). Opens the process on success.
export async function sendEventDialog(match = {}) {
  const pairs = attributeEditor('Context pairs the process must hold', { pairs: true });
  const keys = Object.keys(match);
  for (const k of keys) pairs.addRow(k, match[k]);
  if (!keys.length) pairs.addRow();
  const node = h('input#event-node', { type: 'text', placeholder: 'its only active token', autocomplete: 'off' });
  const attrs = attributeEditor('Attributes merged into the process environment (optional)');
  const body = h('div',
    h('p', 'Deliver an event to the one executing process started with these context pairs: its token on the node is completed and the process runs on.'),
    pairs.el,
    h('div.form-grid', h('label', { for: 'event-node' }, 'Node'), node),
    attrs.el);
  const proc = await modal('Send an event', body, {
    submitLabel: 'Send',
    onSubmit: () => {
      const m = pairs.value();
      if (!Object.keys(m).length) throw new Error('Give at least one context pair: the process is found by it.');
      const req = { match: m };
      if (node.value.trim()) req.node = node.value.trim();
      const env = attrs.value();
      if (Object.keys(env).length) req.env = env;
      // Not found here means no process matched, or its token is not on
      // that node: the server's detail says which; the generic words for
      // not_found ("does not exist any more") would mislead.
      return api.sendEvent(req).catch((err) => {
        if (err.code === 'not_found' && err.detail) throw new Error(`Not delivered: ${err.detail}.`);
        throw err;
      });
    },
  });
  if (proc && proc.id) {
    toast('The event was delivered.', 'ok');
    navigate(routeHref('processes', proc.id));
  }
  return proc;
}
