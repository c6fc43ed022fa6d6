extension PageAssets {
    static let rosterJS = #"""
import { h, panel } from './dom.js';
import { css, section, streamGlyph } from './theme.js';

function glyph(g) {
  return h('span', { style: { color: css(g.color) } }, g.text);
}

// Teacher and assistant actions on one student: each goes through the session as the
// logged-in user; the node refuses with a code what the role may not do.
function actions(row, { act, model, draft, redraw }) {
  const button = (label, name, action) => h('button', { 'data-action': name, 'data-user': row.id, onclick: () => act(action) }, label);
  const onStage = row.onStage || row.waitingForStage;
  return [
    button(onStage ? 'Off stage' : 'On stage', onStage ? 'stage-off' : 'stage-on', { do: 'stage', user: row.id, on: !onStage }),
    // Asks rather than puts: the student accepts or declines within 30 s.
    onStage || model.room.type === 'one-to-one' ? null : button('Invite', 'invite', { do: 'invite', user: row.id, seconds: 30 }),
    button('Cam ✓', 'allow-camera', { do: 'allow', user: row.id, device: 'camera', on: true }),
    button('Cam ✗', 'deny-camera', { do: 'allow', user: row.id, device: 'camera', on: false }),
    button('Mic ✓', 'allow-mic', { do: 'allow', user: row.id, device: 'mic', on: true }),
    button('Mic ✗', 'deny-mic', { do: 'allow', user: row.id, device: 'mic', on: false }),
    button(row.board ? 'Board ✗' : 'Board ✓', row.board ? 'board-revoke' : 'board-grant', { do: 'board', user: row.id, on: !row.board }),
    button('+1', 'reward', { do: 'reward', user: row.id, amount: 1 }),
    button(row.chatMuted ? 'Unmute' : 'Mute', row.chatMuted ? 'unmute' : 'mute', { do: 'mute', user: row.id, on: !row.chatMuted }),
    row.hand ? button('Lower hand', 'lower-hand', { do: 'lower-hand', user: row.id }) : null,
    button('Kick', 'kick', { do: 'kick', user: row.id }),
    // Picks the user in the private messages' form.
    h('button', { 'data-action': 'whisper', 'data-user': row.id, onclick: () => {
      draft['peer-to'] = row.id;
      redraw();
      document.getElementById('peer-input')?.focus();
    } }, 'Whisper'),
    model.groups.length ? groupChoice(row, model, act) : null,
  ];
}

// Which breakout group the student is in; choosing another moves them there.
function groupChoice(row, model, act) {
  const select = h('select', { 'data-action': 'group-move', 'data-user': row.id,
                              onchange: (event) => act({ do: 'group-move', user: row.id, group: event.target.value }) },
    h('option', { value: 'main' }, 'main room'),
    model.groups.map((group) => h('option', { value: group.id }, `${group.id} ${group.name}`)));
  select.value = row.group ?? 'main';
  return select;
}

const TITLES = { name: 'Name', stage: 'Stage', auth: 'Auth', camera: 'Camera', mic: 'Mic', rewards: 'Rewards', hand: 'Hand', group: 'Group' };

function cell(column, row, theme, model) {
  const roster = section(theme, 'roster');
  switch (column) {
    // Tagged with the breakout group, as the terminal's roster does.
    case 'name': return h('td', { class: 'name' },
      row.name + (row.id === model.local.id ? ' (you)' : '') + (row.online ? '' : ' (offline)') + (row.group ? ` [${row.group}]` : ''));
    case 'stage': return h('td', { class: 'stage-cell' },
      row.waitingForStage ? glyph(roster.stageWaiting ?? { text: 'waiting' }) : glyph(roster.stage?.[row.onStage ? 'on' : 'off'] ?? { text: row.onStage ? 'on' : '-' }));
    case 'auth': return h('td', {}, glyph(roster.auth?.[row.board ? 'on' : 'off'] ?? { text: row.board ? 'yes' : '-' }));
    case 'camera': return h('td', { class: 'cam', 'data-state': row.camera }, glyph(streamGlyph(roster.camera, row.camera)));
    case 'mic': return h('td', { class: 'mic', 'data-state': row.mic }, glyph(streamGlyph(roster.microphone, row.mic)));
    case 'rewards': return h('td', { class: 'rewards' }, String(row.rewards));
    case 'hand': return h('td', { class: 'hand' }, glyph(roster.hand?.[row.hand ? 'on' : 'off'] ?? { text: row.hand ? 'up' : '-' }));
    default: return h('td', {}, '');
  }
}

// The roster table (the seed's columns, in the theme's order), one page of students,
// with the moderators' actions on each row.
export function roster(view) {
  const { model, theme, moderator, showPage } = view;
  const settings = section(theme, 'roster');
  if (!settings.visible) return null;
  const columns = settings.columns ?? ['name', 'stage', 'auth', 'camera', 'mic', 'rewards'];
  const page = model.students;
  const rows = page.rows.map((row) => h('tr', {
      class: 'roster-row' + (row.id === model.local.id ? ' local' : '') + (row.online ? '' : ' offline'), 'data-user': row.id },
    columns.map((column) => cell(column, row, theme, model)),
    moderator ? h('td', { class: 'actions' }, actions(row, view)) : null));
  const pager = page.count > 1 ? h('div', { class: 'pager', id: 'pager' },
    h('button', { disabled: page.index === 0, onclick: () => showPage(page.index - 1) }, '‹ previous'),
    h('span', { id: 'page-label' }, `page ${page.index + 1} of ${page.count} · ${page.total} students`),
    h('button', { disabled: page.index + 1 >= page.count, onclick: () => showPage(page.index + 1) }, 'next ›')) : null;
  // The moderators, as the terminal's parties component lists them.
  const moderators = section(theme, 'parties').visible && model.moderators.length
    ? h('p', { id: 'moderators' }, model.moderators.map((row) => `${row.name} (${row.role}${row.online ? '' : ', offline'})`).join(' · ')) : null;
  return panel('roster', `Roster · ${page.total} students`, moderators,
    h('table', { class: 'roster' + (settings.enabled ? '' : ' dimmed') },
      h('thead', {}, h('tr', {}, columns.map((column) => h('th', {}, TITLES[column] ?? column)), moderator ? h('th', {}, '') : null)),
      h('tbody', {}, rows)),
    pager);
}
"""#
}
