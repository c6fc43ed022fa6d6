extension PageAssets {
    static let stateBarJS = #"""
import { h } from './dom.js';
import { section } from './theme.js';
import { now } from './clock.js';

const TYPES = { 'one-to-one': 'one-to-one', 'small-classroom': 'small classroom', 'lecture-hall': 'lecture hall' };

// Minutes and seconds, like the terminal's state bar.
function clock(millis) {
  const total = Math.max(0, Math.floor(Math.abs(millis) / 1000));
  const text = `${String(Math.floor(total / 60)).padStart(2, '0')}:${String(total % 60).padStart(2, '0')}`;
  return millis < 0 ? `-${text}` : text;
}

export function classText(model, at = now()) {
  if (model.classState === 'during' && model.classSinceMillis > 0) {
    const elapsed = at - model.classSinceMillis;
    const left = model.classDurationSeconds * 1000 - elapsed;
    return `in class ${clock(elapsed)}` + (left < 0 ? ` (over by ${clock(-left)})` : ` (${clock(left)} left)`);
  }
  return model.classState === 'after' ? 'class over' : 'before class';
}

// What the room's teacher switched for everyone: device mutes and hand raising.
export function roomRulesText(room) {
  const rules = [];
  if (room.cameraMuted) rules.push('cameras muted');
  if (room.microphoneMuted) rules.push('mics muted');
  if (!room.handRaising) rules.push('hands off');
  else if (room.autoStage) rules.push('hands go on stage');
  return rules.join(' · ');
}

function roomRules(model) {
  const text = roomRulesText(model.room);
  return text ? h('span', { class: 'rules', id: 'room-rules' }, text) : null;
}

// Room, class state and timer, and the link: state and node.
export function stateBar({ model, theme, link }) {
  const settings = section(theme, 'stateBar');
  if (!settings.visible) return null;
  const connection = link === 'open' ? model.connection : link;
  const latency = settings.showLatency && model.latencyMicros > 0 ? ` · ${(model.latencyMicros / 1000).toFixed(0)} ms` : '';
  return h('header', { id: 'state-bar', class: 'state-bar' + (settings.enabled ? '' : ' dimmed') },
    h('span', { class: 'room' }, model.room.name),
    settings.showRoomType !== false ? h('span', { class: 'type', id: 'room-type' }, TYPES[model.room.type] ?? model.room.type) : null,
    h('span', { class: 'class', id: 'class-state' }, classText(model)),
    h('span', { class: 'you' }, `${model.local.name} (${model.local.role})`),
    roomRules(model),
    h('span', { class: 'connection', id: 'connection', 'data-state': connection, 'data-node': model.node },
      connection === 'connected' ? `connected · ${model.node}${latency}` : connection));
}
"""#
}
