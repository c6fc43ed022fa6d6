extension PageAssets {
    static let whispersJS = #"""
import { h, panel, kept, keptSelect, clear } from './dom.js';
import { timeOfDay } from './clock.js';

// Everyone the page knows who may receive a peer message: the room's users, not oneself.
function recipients(model) {
  const known = new Map();
  for (const row of [...model.moderators, ...model.stage, ...model.students.rows]) {
    if (row.id !== model.local.id && !known.has(row.id)) known.set(row.id, row.name);
  }
  return [...known];
}

// Peer messages: to and from the local user only (the history the session reads holds
// no one else's), and a form to write one to one user.
export function whispers({ model, act, draft }) {
  const log = h('ul', { class: 'chat-log', id: 'peer-log' }, model.whispers.map((message) => {
    const sent = message.sender.id === model.local.id;
    return h('li', { class: sent ? 'sent' : 'received', 'data-id': message.id, 'data-from': message.sender.id, 'data-to': message.to },
      `${timeOfDay(message.sentAtMillis)} ${sent ? `you → ${message.toName}` : `${message.sender.name} → you`}: ${message.text}`);
  }));
  const people = recipients(model);
  const send = (event) => {
    event.preventDefault();
    const to = document.getElementById('peer-to')?.value, text = (draft['peer-input'] ?? '').trim();
    if (!to || !text) return;
    act({ do: 'whisper', user: to, text }).then((done) => done && clear(draft, 'peer-input'));
  };
  return panel('whispers', 'Private messages',
    model.whispers.length ? log : h('p', { class: 'empty', id: 'peer-log-empty' }, 'only you and one other user see these'),
    people.length ? h('form', { class: 'chat-form', id: 'peer-form', onsubmit: send },
      keptSelect(draft, 'peer-to', people),
      kept(draft, 'peer-input', { maxlength: 2000, placeholder: 'a private message' }),
      h('button', { id: 'peer-send', type: 'submit' }, 'Send')) : null);
}
"""#
}
