extension PageAssets {
    static let rosterJS = #"""
import { h, panel } from './dom.js';
import { css, section, streamGlyph } from './theme.js';

function glyph(g) {
  return h('span', { style: { color: css(g.color) } }, g.text);
}

// Teacher and assistant actions on one student: each goes through the session as the
// logged-in user; the node refuses with a code what the role may not do.
function actions(row, act) {
  const button = (label, name, action) => h('button', { 'data-action': name, 'data-user': row.id, onclick: () => act(action) }, label);
  return [
    button(row.onStage || row.waitingForStage ? 'Off stage' : 'On stage', row.onStage || row.waitingForStage ? 'stage-off' : 'stage-on',
      { do: 'stage', user: row.id, on: !(row.onStage || row.waitingForStage) }),
    button('Cam ✓', 'allow-camera',
      { do: 'allow', user: row.id, device: 'camera', on: true }),
    button('Cam ✗', 'deny-camera', { do: 'allow', user: row.id, device: 'camera', on: false }),
    button('Mic ✓', 'allow-mic', { do: 'allow', user: row.id, device: 'mic', on: true }),
    button('Mic ✗', 'deny-mic', { do: 'allow', user: row.id, device: 'mic', on: false }),
    button('+1', 'reward', { do: 'reward', user: row.id, amount: 1 }),
    button(row.chatMuted ? 'Unmute' : 'Mute', row.chatMuted ? 'unmute' : 'mute', { do: 'mute', user: row.id, on: !row.chatMuted }),
    row.hand ? button('Lower hand', 'lower-hand', { do: 'lower-hand', user: row.id }) : null,
    button('Kick', 'kick', { do: 'kick', user: row.id }),
  ];
}

const TITLES = { name: 'Name', stage: 'Stage', auth: 'Auth', camera: 'Camera', mic: 'Mic', rewards: 'Rewards', hand: 'Hand', group: 'Group' };

function cell(column, row, theme, model) {
  const roster = section(theme, 'roster');
  switch (column) {
    case 'name': return h('td', { class: 'name' }, row.name + (row.online ? '' : ' (offline)') + (row.id === model.local.id ? ' (you)' : ''));
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
export function roster({ model, theme, act, moderator, showPage }) {
  const settings = section(theme, 'roster');
  if (!settings.visible) return null;
  const columns = settings.columns ?? ['name', 'stage', 'auth', 'camera', 'mic', 'rewards'];
  const page = model.students;
  const rows = page.rows.map((row) => h('tr', {
      class: 'roster-row' + (row.id === model.local.id ? ' local' : '') + (row.online ? '' : ' offline'), 'data-user': row.id },
    columns.map((column) => cell(column, row, theme, model)),
    moderator ? h('td', { class: 'actions' }, actions(row, act)) : null));
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
