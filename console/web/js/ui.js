// Small DOM helpers shared by the console's views.

// h('div.card#x', {attrs}, ...children) builds an element. Attributes starting
// with "on" become listeners; strings and numbers become text nodes.
export function h(tag, attrs, ...children) {
  const m = /^([a-z0-9-]+)?((?:[.#][\w-]+)*)$/i.exec(tag);
  const el = document.createElement((m && m[1]) || 'div');
  if (m && m[2]) {
    for (const part of m[2].match(/[.#][\w-]+/g)) {
      if (part[0] === '.') el.classList.add(part.slice(1));
      else el.id = part.slice(1);
    }
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  // A 24-hour clock like the timeline's, and the zone, so that times on a
  // page read alike and beside the command line's (which says its zone).
  return d.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    hourCycle: 'h23', timeZoneName: 'short',
  });
}

export function fmtClock(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

// Ids are shown by their start, because the start is what the command line
// and the process search take: any start of a process id that only one
// process has stands for it, and a token, task, job or incident id is its
// process id (or such a start) with ".n3", ".t1" and the like.
//
// How much of the start: process ids are UUIDv7s, 0192f7c4-3b1e-7a2c-…. The
// first 12 hex digits are the millisecond the process was named, so the
// first 8 characters are the same for every process started within about a
// minute, and the first 13 for those started within one millisecond. After
// the version digit 7 come 3 digits that order the ids made within one
// millisecond, and the engine never hands out the same time and order
// twice; so the first 18 characters, through those digits, tell apart every
// process one engine names (the random digits after them would make the
// display longer without telling more apart in practice). Ids of another
// shape show the same 18 characters. The full id goes in the title
// (idCode, or a title on the link) and copy buttons copy the full id.
export const ID_SHOWN = 18;

export function shortId(id) {
  const s = String(id || '');
  const child = /^(.*)(\.[a-z]\d+)$/.exec(s);
  if (child) return shortId(child[1]) + child[2];
  return s.length > ID_SHOWN + 2 ? `${s.slice(0, ID_SHOWN)}…` : s;
}

// An abbreviated id in monospace, with the full id on hover.
export function idCode(id) {
  return h('code.short-id', { title: String(id || ''), 'data-full-id': String(id || '') }, shortId(id));
}

// How far a waiting join has come, from the progress a process read gives
// its join waits ("2 of 3 arcs arrived", "reviewers: 1 of 3 members
// arrived"); for a join whose strategy has no count (or a list's row, which
// has none), how many arc tokens wait.
export function joinProgressWords(w) {
  const ps = (w && w.progress) || [];
  if (!ps.length) {
    const n = (w && w.arcs) || 0;
    return `${n} arc token${n === 1 ? '' : 's'} waiting`;
  }
  return ps.map((p) => `${p.group ? `${p.group}: ` : ''}${p.arrived} of ${p.needs} ${p.needs === 1 ? p.of.replace(/s$/, '') : p.of} arrived`).join('; ');
}

export function fmtValue(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object' && typeof v.date === 'string') return `date ${v.date}`;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// Table of an environment object, or a quiet "empty" line.
export function envTable(env, caption) {
  const keys = Object.keys(env || {}).sort();
  if (!keys.length) return h('p.muted', caption ? `${caption}: empty` : 'empty');
  return h('table.env',
    caption ? h('caption', caption) : null,
    h('thead', h('tr', h('th', { scope: 'col' }, 'attribute'), h('th', { scope: 'col' }, 'value'))),
    h('tbody', keys.map((k) => h('tr', h('th', { scope: 'row' }, k), h('td', h('code', fmtValue(env[k])))))));
}

// Turns attribute rows into an env object: numbers, booleans and null are
// recognised, anything else is a string; a value in double quotes stays a string.
export function parseValue(s) {
  const t = String(s).trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t === 'null') return null;
  if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t)) return Number(t);
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) {
    try { return JSON.parse(t); } catch { return t.slice(1, -1); }
  }
  return s;
}

// An editor of attribute rows (name = value) with add/remove buttons; with
// pairs, of context pairs (key = text).
export function attributeEditor(label, { pairs = false } = {}) {
  const rows = h('div.attr-rows');
  const wrap = h('fieldset.attrs', h('legend', label));
  const what = pairs ? 'pair' : 'attribute';
  let n = 0;
  function addRow(name = '', value = '') {
    n++;
    const nameIn = h('input', { type: 'text', 'aria-label': `${what} ${n} ${pairs ? 'key' : 'name'}`, placeholder: pairs ? 'key' : 'name', value: name, class: 'attr-name', autocomplete: 'off' });
    const valIn = h('input', { type: 'text', 'aria-label': `${what} ${n} value`, placeholder: pairs ? 'value (text)' : 'value (text, number, true/false, null)', value, class: 'attr-value', autocomplete: 'off' });
    const row = h('div.attr-row', nameIn, h('span.eq', { 'aria-hidden': 'true' }, '='), valIn,
      h('button.icon', { type: 'button', title: `Remove ${what}`, 'aria-label': `remove ${what} ${n}`, onclick: () => { row.remove(); } }, '×'));
    rows.appendChild(row);
    return nameIn;
  }
  wrap.append(rows, h('button.small', { type: 'button', 'data-add': what, onclick: () => addRow().focus() }, `+ Add ${what}`));
  return {
    el: wrap,
    addRow,
    value() {
      const env = {};
      for (const row of rows.querySelectorAll('.attr-row')) {
        const k = row.querySelector('.attr-name').value.trim();
        if (!k) continue;
        const v = row.querySelector('.attr-value').value;
        env[k] = pairs ? v : parseValue(v);
      }
      return env;
    },
  };
}

// The dialogs open now, so that a change of page closes them: a dialog
// acts on the page it was opened from, never on the next one.
const openDialogs = new Set();

// Closes every open dialog as if cancelled (their promises resolve to null).
export function closeDialogs() {
  for (const close of [...openDialogs]) close(null);
}

// A modal dialog built on <dialog>; resolves when it closes (null when
// cancelled, or closed because the page changed).
export function modal(title, body, { onSubmit, submitLabel = 'OK', danger = false } = {}) {
  const errorBox = h('div.error-box', { role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: danger ? 'danger' : 'primary', 'data-action': 'dialog-submit' }, submitLabel);
  const cancel = h('button', { type: 'button', 'data-action': 'dialog-cancel' }, 'Cancel');
  const form = h('form', { method: 'dialog' }, h('h2', title), body, errorBox, h('div.buttons', cancel, submit));
  const dlg = h('dialog.modal', { 'aria-label': title }, form);
  document.body.appendChild(dlg);
  return new Promise((resolve) => {
    let closed = false;
    const close = (v) => {
      if (closed) return;
      closed = true;
      openDialogs.delete(close);
      dlg.close();
      dlg.remove();
      resolve(v);
    };
    openDialogs.add(close);
    cancel.addEventListener('click', () => close(null));
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); close(null); });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      errorBox.hidden = true;
      submit.disabled = true;
      try {
        const v = onSubmit ? await onSubmit() : true;
        close(v === undefined ? true : v);
      } catch (err) {
        if (closed) return;
        showError(errorBox, err);
        submit.disabled = false;
      }
    });
    dlg.showModal();
    const first = form.querySelector('input, select, textarea, button.primary, button.danger');
    if (first) first.focus();
  });
}

// Writes an error into a box, with the line list of a definition that failed to load.
export function showError(box, err) {
  clear(box);
  box.hidden = false;
  box.appendChild(h('p', err && err.message ? err.message : String(err)));
  if (err && Array.isArray(err.errors) && err.errors.length) {
    const shown = err.errors.slice(0, 20);
    box.appendChild(h('ul', shown.map((e) => h('li',
      e.line ? `line ${e.line}${e.column ? `, column ${e.column}` : ''}: ` : '', e.message || JSON.stringify(e)))));
    if (err.errors.length > shown.length) box.appendChild(h('p', `… and ${err.errors.length - shown.length} more.`));
  }
}

let toastTimer = 0;
export function toast(msg, kind = 'info') {
  const el = document.getElementById('toast');
  if (!el) return;
  el.textContent = msg;
  el.className = `toast ${kind}`;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, kind === 'error' ? 10000 : 4000);
}

export function errorToast(err) {
  toast(err && err.message ? err.message : String(err), 'error');
}

export const PROCESS_STATES = ['created', 'executing', 'pending_completion', 'completed', 'pending_cancel', 'canceled'];

export function stateBadge(state) {
  return h('span', { class: `badge state-${state || 'unknown'}` }, String(state || 'unknown').replace('_', ' '));
}

// Goes to a route of the console; the same route again renders it anew.
export function navigate(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}

export function routeHref(...parts) {
  return `#/${parts.map((p) => encodeURIComponent(String(p))).join('/')}`;
}

// copyIcon is two overlapping sheets, drawn (no font has a glyph for it
// everywhere).
function copyIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('width', '13');
  svg.setAttribute('height', '13');
  svg.setAttribute('aria-hidden', 'true');
  for (const [x, y] of [[5, 5], [2, 2]]) {
    const r = document.createElementNS(ns, 'rect');
    for (const [k, v] of Object.entries({ x, y, width: 9, height: 9, rx: 1.5, fill: x === 5 ? '#fff' : 'none', stroke: 'currentColor', 'stroke-width': 1.5 })) r.setAttribute(k, v);
    svg.appendChild(r);
  }
  return svg;
}

// A button that copies text to the clipboard, saying so; without a label,
// an icon.
export function copyButton(text, label = 'Copy') {
  const btn = h('button.small.copy', { type: 'button', title: `Copy ${text}`, 'aria-label': `Copy ${text}`, 'data-copy': text }, label || copyIcon());
  btn.addEventListener('click', async () => {
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        ok = true;
      }
    } catch { /* fall back below */ }
    if (!ok) {
      const area = h('textarea', { 'aria-hidden': 'true', style: 'position:fixed;left:-9999px;top:0' });
      area.value = text;
      document.body.appendChild(area);
      area.select();
      try { ok = document.execCommand('copy'); } catch { ok = false; }
      area.remove();
    }
    btn.replaceChildren(ok ? 'Copied' : 'Select and copy');
    btn.dataset.copied = ok ? 'yes' : 'no';
    setTimeout(() => { btn.replaceChildren(label || copyIcon()); }, 1500);
  });
  return btn;
}

// A full id in monospace with a copy button.
export function idWithCopy(id) {
  return h('span.id-copy', h('code.full-id', { 'data-id': id }, id), ' ', copyButton(id));
}

// Context pairs as small chips, or nothing.
export function contextChips(ctx) {
  const keys = Object.keys(ctx || {}).sort();
  if (!keys.length) return null;
  return h('span.context-chips', keys.map((k) => h('span.chip.ctx', { title: `context ${k}` }, h('span.muted', `${k}=`), ctx[k])));
}

// How long ago a time was, in a few characters.
export function fmtAgo(iso, now = Date.now()) {
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d`;
}
