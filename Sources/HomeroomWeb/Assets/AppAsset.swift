extension PageAssets {
    static let appJS = #"""
// The classroom page: log in with a join token, then draw each read model the server
// sends, and send the user's actions back. No state of the room lives here.
import { ClassroomSocket } from './socket.js';
import { loadTheme, applyColors } from './theme.js';
import { render } from './scene.js';
import { classText } from './statebar.js';

const root = document.getElementById('app');
const view = { model: null, theme: {}, link: 'connecting', notice: null, moderator: false, draft: { text: '' } };
let socket = null;

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

function start(login) {
  sessionStorage.setItem('homeroom.login', JSON.stringify(login));
  Object.assign(view, {
    act: (action) => act(action).catch(() => {}),
    showPage: (index) => socket.showPage(index),
  });
  socket = new ClassroomSocket(login, {
    onWelcome: (welcome) => { view.moderator = welcome.role === 'teacher' || welcome.role === 'assistant'; },
    onModel: (model) => { view.model = model; view.link = 'open'; redraw(); },
    onLink: (state) => { view.link = state; redraw(); },
    onEnded: (ended) => {
      sessionStorage.removeItem('homeroom.login');
      if (!view.model) { showLogin(`[${ended.code}] ${ended.message}`); return; }
      notify('refused', `session ended [${ended.code}]: ${ended.message}`);
    },
  });
  window.homeroom = { socket, view };
  socket.connect();
}

function showLogin(error = '') {
  const form = document.getElementById('login');
  if (!form) { location.reload(); return; }
  document.getElementById('login-error').textContent = error;
  form.onsubmit = (event) => {
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
// The class timer moves between read models.
setInterval(() => {
  const label = document.getElementById('class-state');
  if (label && view.model) label.textContent = classText(view.model);
}, 1000);
// A link may carry the token (`homeroom demo --web` prints one): taken off the address bar at once.
const linked = new URLSearchParams(location.hash.slice(1)).get('token');
if (linked) history.replaceState(null, '', location.pathname);
const saved = sessionStorage.getItem('homeroom.login');
if (linked) start({ token: linked }); else if (saved) start(JSON.parse(saved)); else showLogin();
"""#
}
