extension PageAssets {
    static let controlsJS = #"""
import { h, panel } from './dom.js';

// The local user's own controls: hand, camera and microphone (everyone), class start and end (moderators);
// and what the user may do now: stage, streams, rewards, the whiteboard.
export function controls({ model, act, moderator }) {
  // An observer watches: no hand, no devices (the node would refuse them [not-allowed]).
  if (model.local.role === 'observer') return panel('controls', 'You', h('p', {}, 'watching as an observer'));
  const me = [...model.moderators, ...model.students.rows, ...model.stage].find((row) => row.id === model.local.id);
  const handUp = model.hands.some((user) => user.id === model.local.id);
  const cameraOn = me ? me.camera === 'live' || me.camera === 'privilege-off' : false;
  const micOn = me ? me.mic === 'live' || me.mic === 'privilege-off' : false;
  return panel('controls', 'You',
    h('div', { class: 'controls' },
      h('button', { id: 'hand-button', onclick: () => act({ do: 'hand', on: !handUp }) }, handUp ? 'Lower hand' : 'Raise hand'),
      h('button', { id: 'camera-button', onclick: () => act({ do: 'device', device: 'camera', on: !cameraOn }) }, cameraOn ? 'Camera off' : 'Camera on'),
      h('button', { id: 'mic-button', onclick: () => act({ do: 'device', device: 'mic', on: !micOn }) }, micOn ? 'Mic off' : 'Mic on'),
      moderator && model.classState === 'before' ? h('button', { id: 'class-start', onclick: () => act({ do: 'class-start' }) }, 'Start class') : null,
      moderator && model.classState === 'during' ? h('button', { id: 'class-end', onclick: () => act({ do: 'class-end' }) }, 'End class') : null,
      moderator ? h('button', { id: 'mute-all-mics', onclick: () => act({ do: 'mute-all-mics' }) }, 'Mute all mics') : null,
      moderator ? h('button', { id: 'room-mute-camera', onclick: () => act({ do: 'room-mute', device: 'camera', on: !model.room.cameraMuted }) },
        model.room.cameraMuted ? 'Unmute cameras' : 'Mute cameras') : null,
      moderator ? h('button', { id: 'room-mute-mic', onclick: () => act({ do: 'room-mute', device: 'mic', on: !model.room.microphoneMuted }) },
        model.room.microphoneMuted ? 'Unmute mics' : 'Mute mics') : null,
      moderator ? h('button', { id: 'hand-raising', onclick: () => act({ do: 'hand-raising', on: !model.room.handRaising }) },
        model.room.handRaising ? 'Hands off' : 'Hands on') : null,
      moderator && model.room.handRaising ? h('button', { id: 'auto-stage', onclick: () => act({ do: 'hand-raising', on: true, autoStage: !model.room.autoStage }) },
        model.room.autoStage ? 'Auto-stage off' : 'Auto-stage on') : null),
    me ? h('p', { id: 'my-streams', 'data-camera': me.camera, 'data-mic': me.mic, 'data-stage': me.onStage ? 'on' : 'off',
                  'data-board': me.board ? 'granted' : 'none' },
      `stage ${me.onStage ? 'on' : me.waitingForStage ? 'waiting' : 'off'} · camera ${me.camera} · mic ${me.mic} · rewards ${me.rewards}`
      // A teacher's board needs no grant: only the others are told theirs.
      + (model.local.role === 'teacher' ? '' : ` · board ${me.board ? 'granted' : 'not granted'}`)) : null);
}
"""#
}
