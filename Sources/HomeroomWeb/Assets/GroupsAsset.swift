extension PageAssets {
    static let groupsJS = #"""
import { h, panel, kept, clear } from './dom.js';

function names(members) {
  return members.length ? members.map((member) => member.name).join(' · ') : 'nobody yet';
}

// Teacher and assistant: create a group, spread the online students over new groups,
// broadcast to every group, end them all. Moving one student is on the roster row.
function moderatorControls({ model, act, draft }) {
  const submit = (action, ...fields) => (event) => {
    event.preventDefault();
    act(action()).then((done) => done && clear(draft, ...fields));
  };
  const text = (id) => (draft[id] ?? '').trim();
  return h('div', { class: 'group-controls' },
    h('form', { id: 'group-create', class: 'inline-form',
                onsubmit: submit(() => ({ do: 'group-create', group: text('group-id'), name: text('group-name') || undefined }), 'group-id', 'group-name') },
      kept(draft, 'group-id', { placeholder: 'id, e.g. g1', maxlength: 16, class: 'short' }),
      kept(draft, 'group-name', { placeholder: 'name (optional)', maxlength: 64 }),
      h('button', { id: 'group-create-button', type: 'submit' }, 'Create group')),
    h('form', { id: 'group-random', class: 'inline-form',
                onsubmit: submit(() => ({ do: 'group-random', count: Number(text('group-count')) || 2 }), 'group-count') },
      kept(draft, 'group-count', { type: 'number', min: 1, max: 20, placeholder: '2', class: 'short' }),
      h('button', { id: 'group-random-button', type: 'submit' }, 'Random groups')),
    model.groups.length ? h('form', { id: 'group-broadcast', class: 'inline-form',
                onsubmit: submit(() => ({ do: 'group-broadcast', text: text('group-broadcast-text') }), 'group-broadcast-text') },
      kept(draft, 'group-broadcast-text', { placeholder: 'a message to every group', maxlength: 2000 }),
      h('button', { id: 'group-broadcast-button', type: 'submit' }, 'Broadcast')) : null,
    model.groups.length ? h('button', { id: 'group-end', onclick: () => act({ do: 'group-end' }) }, 'End all groups') : null);
}

// Breakout groups, as the terminal lists them: each one's id, name and members. Members
// meet in the group's own room; this page stays in the main room.
export function groups(view) {
  const { model, act, moderator } = view;
  if (!moderator && model.groups.length === 0) return null;
  const mine = model.groups.find((group) => group.members.some((member) => member.id === model.local.id));
  const list = model.groups.length === 0 ? h('p', { class: 'empty' }, 'no breakout groups') :
    h('ul', { class: 'groups', id: 'group-list' }, model.groups.map((group) => h('li', { 'data-group': group.id },
      h('strong', {}, `${group.id} ${group.name}`), ` (${group.members.length}): ${names(group.members)}`,
      moderator ? h('button', { 'data-action': 'group-remove', 'data-group': group.id,
                                onclick: () => act({ do: 'group-remove', group: group.id }) }, 'End') : null)));
  return panel('groups', `Breakout groups ${model.groups.length}`,
    mine ? h('p', { id: 'my-group', 'data-group': mine.id }, `You are in ${mine.name} (${mine.id}); it meets in room ${mine.room}.`) : null,
    list,
    moderator ? moderatorControls(view) : null);
}
"""#
}
