extension PageAssets {
    static let sceneJS = #"""
import { h, panel } from './dom.js';
import { section } from './theme.js';
import { stateBar } from './statebar.js';
import { roster } from './roster.js';
import { stage, seat } from './stage.js';
import { hands } from './hands.js';
import { invitations } from './invitations.js';
import { chat } from './chat.js';
import { whispers } from './whispers.js';
import { groups } from './groups.js';
import { linkLost } from './lost.js';
import { controls } from './controls.js';

function counts({ model, theme }) {
  const settings = section(theme, 'counts');
  if (!settings.visible) return null;
  return panel('counts', 'Hall',
    h('div', { class: 'counts' },
      h('span', { id: 'count-online' }, `${model.onlineCount} online`),
      h('span', { id: 'count-students' }, `${model.students.total} students`),
      h('span', {}, `${model.stage.length}/${model.room.stageLimit} on stage`),
      h('span', {}, `${model.hands.length} hands`),
      model.observerCount ? h('span', {}, `${model.observerCount} observers`) : null,
      model.groups.length ? h('span', {}, `${model.groups.length} groups`) : null));
}

// One-to-one: the teacher and the student face to face.
function oneToOne(view) {
  const { model, theme } = view;
  const teacher = model.moderators[0], student = model.students.rows[0];
  const empty = (who) => h('div', { class: 'seat big empty' }, `no ${who} yet`);
  return h('div', { class: 'scene one-to-one', id: 'scene', 'data-scene': 'one-to-one' },
    h('div', { class: 'main' },
      h('div', { class: 'tiles' }, teacher ? seat(teacher, theme, true) : empty('teacher'), student ? seat(student, theme, true) : empty('student')),
      roster(view)),
    h('div', { class: 'side' }, controls(view), hands(view), chat(view), whispers(view)));
}

// Small classroom: the stage strip over the whole roster.
function smallClassroom(view) {
  return h('div', { class: 'scene small-classroom', id: 'scene', 'data-scene': 'small-classroom' },
    h('div', { class: 'main' }, stage(view), groups(view), roster(view)),
    h('div', { class: 'side' }, controls(view), invitations(view), hands(view), chat(view), whispers(view)));
}

// Lecture hall: counts, the stage, and the students a page at a time.
function lectureHall(view) {
  return h('div', { class: 'scene lecture-hall', id: 'scene', 'data-scene': 'lecture-hall' },
    h('div', { class: 'main' }, counts(view), stage(view), groups(view), roster(view)),
    h('div', { class: 'side' }, controls(view), invitations(view), hands(view), chat(view), whispers(view)));
}

const SCENES = { 'one-to-one': oneToOne, 'small-classroom': smallClassroom, 'lecture-hall': lectureHall };

// The whole page for one read model: the state bar, a lost link's banner, the notice
// line, the room type's scene.
export function render(root, view) {
  const scene = SCENES[view.model.room.type] ?? smallClassroom;
  const notice = h('div', { id: 'notice', class: 'notice ' + (view.notice?.kind ?? ''), role: 'status' }, view.notice?.text ?? '');
  root.replaceChildren(...[stateBar(view), linkLost(view), notice, scene(view)].filter(Boolean));
}
"""#
}
