extension PageAssets {
    static let chatJS = #"""
import { h, panel } from './dom.js';

function time(millis) {
  return new Date(millis).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

// The room's chat as the local user may see it (their own whispers included), and a box to send.
export function chat({ model, act, draft }) {
  const log = h('ul', { class: 'chat-log', id: 'chat-log' }, model.chat.map((message) =>
    h('li', { class: message.to ? 'whisper' : '', 'data-id': message.id },
      `${time(message.sentAtMillis)} ${message.sender.name}${message.to ? ` → ${message.to}` : ''}: ${message.text}`)));
  const input = h('input', { id: 'chat-input', maxlength: 2000, placeholder: model.chatMuted ? 'your chat is muted' : 'say something',
    value: draft.text, oninput: (event) => { draft.text = event.target.value; } });
  const form = h('form', { class: 'chat-form', onsubmit: (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    act({ do: 'chat', text }).then(() => { draft.text = ''; input.value = ''; }, () => {});
  } }, input, h('button', { id: 'chat-send', type: 'submit' }, 'Send'));
  setTimeout(() => { log.scrollTop = log.scrollHeight; });
  return panel('chat', 'Chat', log, form);
}
"""#
}
