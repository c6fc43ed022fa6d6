extension PageAssets {
    static let handsJS = #"""
import { h, panel } from './dom.js';
import { section } from './theme.js';

// Raised hands, in the order they went up (and those waiting past the hand limit).
export function hands({ model, theme, act, moderator }) {
  const settings = section(theme, 'hands');
  if (!settings.visible) return null;
  const max = settings.maxNames ?? 12;
  const shown = model.hands.slice(0, max);
  return panel('hands', `Hands ${model.hands.length}`,
    shown.length === 0 ? h('p', { class: 'empty' }, settings.emptyText ?? 'no hands up') :
      h('ul', { class: 'hands' }, shown.map((user) => h('li', { 'data-user': user.id }, user.name,
        moderator ? h('button', { 'data-action': 'stage-on', 'data-user': user.id, onclick: () => act({ do: 'stage', user: user.id, on: true }) }, 'On stage') : null))),
    model.hands.length > max ? h('p', {}, `and ${model.hands.length - max} more`) : null,
    model.waitingHands.length ? h('p', {}, `${model.waitingHands.length} waiting (hand limit ${model.room.handLimit})`) : null);
}
"""#
}
