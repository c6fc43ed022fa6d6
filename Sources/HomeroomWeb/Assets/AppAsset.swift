extension PageAssets {
    static let appJS = #"""
// The classroom page: log in with a join token, then draw each read model the server
// sends, and send the user's actions back. No state of the room lives here.
import { ClassroomSocket } from './socket.js';
import { loadTheme, applyColors } from './theme.js';
import { render } from './scene.js';
import { classText } from './statebar.js';
import { carouselText } from './carousel.js';
import { syncClock } from './clock.js';
import { secondsLeft } from './invitations.js';

const root = document.getElementById('app');
// The login form as served, to show again after a session ends.
const loginForm = document.getElementById('login').cloneNode(true);
const view = { model: null, theme: {}, link: 'connecting', notice: null, moderator: false, draft: {} };
let socket = null;
let lastLogin = null;

function redraw() {
  if (!view.model) return;
  const focused = document.activeElement?.id;
  render(root, view);
  if (focused) document.getElementById(focused)?.focus();
}

function notify(kind, text) {
  view.notice = { kind, text };
  redraw();
}

function act(action) {
  return socket.act(action).then(
    (result) => { notify('ok', `done: ${action.do}${action.user ? ' ' + action.user : ''}`); return result; },
    (refusal) => { notify('refused', `refused [${refusal.code}]: ${refusal.message}`); throw refusal; });
}

// A new session with the same token: the old socket goes, and its pool with it.
function relogin() {
  socket?.close();
  view.model = null;
  view.notice = null;
  if (lastLogin) start(lastLogin); else showLogin();
}

function start(login) {
  lastLogin = login;
  sessionStorage.setItem('homeroom.login', JSON.stringify(login));
  Object.assign(view, {
    // Resolves to whether it was done (a refusal is already on the notice line): a form
    // keeps what was typed when its action is refused.
    act: (action) => act(action).then(() => true, () => false),
    showPage: (index) => socket.showPage(index),
    redraw,
    relogin,
  });
  socket = new ClassroomSocket(login, {
    onWelcome: (welcome) => {
      syncClock(welcome.nowMillis);
      view.moderator = welcome.role === 'teacher' || welcome.role === 'assistant';
    },
    onModel: (model) => { view.model = model; view.link = 'open'; redraw(); },
    onLink: (state) => { view.link = state; redraw(); },
    onEnded: (ended) => {
      sessionStorage.removeItem('homeroom.login');
      if (!view.model) { showLogin(`[${ended.code}] ${ended.message}`, login.token); return; }
      notify('refused', `session ended [${ended.code}]: ${ended.message}`);
    },
  });
  window.homeroom = { socket, view };
  socket.connect();
}

// The login form, with why the last login ended (and its token, to try again).
function showLogin(error = '', token = '') {
  if (!document.getElementById('login')) root.replaceChildren(loginForm.cloneNode(true));
  document.getElementById('login-error').textContent = error;
  if (token) document.getElementById('login-token').value = token;
  document.getElementById('login').onsubmit = (event) => {
    event.preventDefault();
    const login = { token: document.getElementById('login-token').value.trim() };
    const room = document.getElementById('login-room').value.trim();
    const name = document.getElementById('login-name').value.trim();
    if (room) login.room = room;
    if (name) login.name = name;
    start(login);
  };
}

view.theme = await loadTheme().catch(() => ({}));
applyColors(view.theme);
// The class timer and the carousel's next turn move between read models.
setInterval(() => {
  if (!view.model) return;
  const label = document.getElementById('class-state');
  if (label) label.textContent = classText(view.model);
  const carousel = document.getElementById('carousel');
  if (carousel) carousel.textContent = carouselText(view.model.carousel);
  // An invitation's countdown; one that ran out goes with the next drawing.
  let expired = false;
  for (const left of document.querySelectorAll('[data-expires]')) {
    const seconds = secondsLeft(Number(left.dataset.expires));
    left.textContent = `${seconds} s left`;
    if (seconds === 0) expired = true;
  }
  if (expired) redraw();
}, 1000);
// A link may carry the token (`homeroom demo --web` prints one): taken off the address bar at once.
const linked = new URLSearchParams(location.hash.slice(1)).get('token');
if (linked) history.replaceState(null, '', location.pathname);
const saved = sessionStorage.getItem('homeroom.login');
if (linked) start({ token: linked }); else if (saved) start(JSON.parse(saved)); else showLogin();
"""#
}
