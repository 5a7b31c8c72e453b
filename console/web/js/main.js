// The console shell: who is logged in, the hash router and the views.
// Routes:
//   #/definitions                          definitions list (+ load a file)
//   #/definitions/NAME[/versions/V]        definition page
//   #/processes[?definition=&state=&parentToken=&after=]   processes list
//   #/processes/ID                         process page
//   #/waiting[?…the processes filters…]    waiting work: active tokens and waiting joins
//   #/tasks[?scope=&group=&queue=&state=&task=]   the Tasklist
//   #/incidents[?state=]                   incidents
//   #/login                                log in with an access token

import { api, setAccessToken, accessToken, setUnauthorizedHandler } from './api.js';
import { h, clear, errorToast, showError, navigate, closeDialogs } from './ui.js';
import { definitionsView, definitionView } from './definitions.js';
import { processView } from './processes.js';
import { processesView, waitingView } from './processlist.js';
import { tasklistView, incidentsView } from './work.js';

export const session = {
  role: '',          // viewer, operator, admin or open
  name: '',          // the access token's name, when the server tells it
  groups: [],        // the token's user's groups
  authRequired: false,
  get canAct() { return !!this.role && this.role !== 'viewer'; },
};

const main = () => document.getElementById('main');
let cleanup = null;
let renderSeq = 0;


function parseRoute() {
  let raw = location.hash.replace(/^#/, '');
  if (!raw || raw === '/') raw = '/definitions';
  const [path, qs] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(qs || '') };
}

async function route() {
  const seq = ++renderSeq;
  // A dialog belongs to the page it was opened on.
  closeDialogs();
  if (cleanup) { try { cleanup(); } catch { /* the old view is gone anyway */ } cleanup = null; }
  const { parts, query } = parseRoute();
  // Each route renders into its own element, so a slow view that finishes
  // after the user moved on writes into a detached element, not the page.
  const el = h('div.view');
  clear(main()).appendChild(el);
  markNav(parts[0]);

  if (parts[0] === 'login') { loginView(el, query); return; }
  if (!session.role) {
    const ok = await loadSession();
    if (!ok || seq !== renderSeq) return;
  }
  try {
    let result;
    if (parts[0] === 'definitions' && parts.length === 1) result = await definitionsView(el, query, session);
    else if (parts[0] === 'definitions' && parts[2] === 'versions') result = await definitionView(el, parts[1], parts[3], session);
    else if (parts[0] === 'definitions') result = await definitionView(el, parts[1], '', session);
    else if (parts[0] === 'processes' && parts.length === 1) result = await processesView(el, query, session);
    else if (parts[0] === 'waiting') result = await waitingView(el, query, session);
    else if (parts[0] === 'processes') result = await processView(el, parts[1], session);
    else if (parts[0] === 'tasks') result = await tasklistView(el, query, session);
    else if (parts[0] === 'incidents') result = await incidentsView(el, query, session);
    else {
      el.append(h('h1', 'Page not found'), h('p', 'There is no such page in the console. ', h('a', { href: '#/definitions' }, 'Go to the definitions.')));
    }
    if (seq !== renderSeq) { if (typeof result === 'function') result(); return; }
    if (typeof result === 'function') cleanup = result;
  } catch (err) {
    if (seq !== renderSeq) return;
    if (err && err.status === 401) return;
    const box = h('div.error-box', { role: 'alert' });
    showError(box, err);
    el.append(h('h1', 'Something went wrong'), box, h('p', h('a', { href: '#/definitions' }, 'Back to the definitions')));
  }
}

function markNav(section) {
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

// Asks the server who we are; sends to the login page when a token is needed.
async function loadSession() {
  try {
    setSession(await api.whoami());
    return true;
  } catch (err) {
    if (err.status === 401) {
      toLogin(accessToken() ? 'Your access token was not accepted. Enter another one.' : '');
      return false;
    }
    const box = h('div.error-box', { role: 'alert' });
    showError(box, err);
    clear(main()).append(h('h1', 'Cannot talk to the server'), box,
      h('button', { type: 'button', onclick: () => route() }, 'Try again'));
    return false;
  }
}

// Takes the answer of GET /api/v1/whoami as the session and shows it.
function setSession(me) {
  session.role = (me && me.role) || 'open';
  session.name = (me && me.name) || '';
  session.groups = (me && me.groups) || [];
  session.authRequired = !!(me && me.authRequired);
  renderWho();
}

function toLogin(message) {
  const back = location.hash.startsWith('#/login') ? '' : location.hash;
  session.role = '';
  renderWho();
  const q = new URLSearchParams();
  if (back) q.set('back', back);
  if (message) q.set('msg', message);
  navigate(`#/login?${q}`);
}

function renderWho() {
  const who = clear(document.getElementById('who'));
  if (!session.role) return;
  const label = session.role === 'open'
    ? 'open server (no login)'
    : `${session.name ? `${session.name} · ` : ''}role: ${session.role}`;
  who.append(h('span', { class: `role role-${session.role}`, 'data-role': session.role }, label));
  if (session.authRequired) {
    who.append(h('button.small', {
      type: 'button',
      onclick: () => { setAccessToken(''); session.role = ''; renderWho(); navigate('#/login'); },
    }, 'Log out'));
  }
}

function loginView(el, query) {
  const msg = query.get('msg');
  const back = query.get('back') || '#/definitions';
  const input = h('input#token', { type: 'password', name: 'token', autocomplete: 'current-password', required: true, spellcheck: 'false' });
  const errorBox = h('div.error-box', { role: 'alert', hidden: !msg }, msg || '');
  const form = h('form.card.login', {
    onsubmit: async (e) => {
      e.preventDefault();
      errorBox.hidden = true;
      setAccessToken(input.value.trim());
      session.role = '';
      try {
        setSession(await api.whoami());
        navigate(back);
      } catch (err) {
        setAccessToken('');
        showError(errorBox, err.status === 401 ? new Error('That access token was not accepted. Check it and try again.') : err);
        input.focus();
      }
    },
  },
  h('h1', 'Log in'),
  h('p', 'This Veena server needs an access token. Ask its administrator for one. It is kept only in this browser tab.'),
  h('label', { for: 'token' }, 'Access token'), input, errorBox,
  h('div.buttons', h('button.primary', { type: 'submit', 'data-action': 'login' }, 'Log in')));
  el.append(form);
  input.focus();
}

setUnauthorizedHandler(() => toLogin('Your session needs an access token. Please log in.'));

// A deep link such as /processes/ID (served as index.html) becomes its hash route.
if (location.pathname !== '/' && !location.hash) {
  history.replaceState(null, '', `/#${location.pathname}${location.search}`);
}

document.getElementById('skip').addEventListener('click', (e) => {
  e.preventDefault();
  main().focus();
});
window.addEventListener('hashchange', route);
window.addEventListener('unhandledrejection', (e) => {
  if (e.reason && e.reason.status === 401) return;
  if (e.reason && e.reason.message) errorToast(e.reason);
});
route();
