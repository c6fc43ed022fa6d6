extension PageAssets {
    static let chatJS = #"""
import { h, panel, kept, clear } from './dom.js';
import { timeOfDay } from './clock.js';

// The room's chat (private messages have a panel of their own), and a box to send.
export function chat({ model, act, draft }) {
  const log = h('ul', { class: 'chat-log', id: 'chat-log' }, model.chat.map((message) =>
    h('li', { 'data-id': message.id }, `${timeOfDay(message.sentAtMillis)} ${message.sender.name}: ${message.text}`)));
  const form = h('form', { class: 'chat-form', onsubmit: (event) => {
    event.preventDefault();
    const text = (draft['chat-input'] ?? '').trim();
    if (!text) return;
    act({ do: 'chat', text }).then((done) => done && clear(draft, 'chat-input'));
  } }, kept(draft, 'chat-input', { maxlength: 2000, placeholder: model.chatMuted ? 'your chat is muted' : 'say something' }),
    h('button', { id: 'chat-send', type: 'submit' }, 'Send'));
  setTimeout(() => { log.scrollTop = log.scrollHeight; });
  return panel('chat', 'Chat', log, form);
}
"""#
}
