extension PageAssets {
    static let stageJS = #"""
import { h, panel } from './dom.js';
import { css, section, streamGlyph } from './theme.js';
import { carouselText, carouselControls } from './carousel.js';

// One seat: who sits there and their camera and microphone, in the theme's glyphs.
export function seat(row, theme, big = false) {
  const roster = section(theme, 'roster');
  const cam = streamGlyph(roster.camera, row.camera), mic = streamGlyph(roster.microphone, row.mic);
  return h('div', { class: 'seat' + (big ? ' big' : ''), 'data-user': row.id, 'data-camera': row.camera, 'data-mic': row.mic },
    h('strong', {}, row.name),
    h('span', { class: 'seat-camera', style: { color: css(cam.color) } }, `camera ${cam.text}`),
    h('span', { class: 'seat-mic', style: { color: css(mic.color) } }, `mic ${mic.text}`));
}

// The stage strip: seats in the order every replica agrees on, then the empty ones; the
// carousel and its next turn while one runs (the app's timer counts it down).
export function stage(view) {
  const { model, theme, moderator } = view;
  const settings = section(theme, 'stage');
  if (!settings.visible) return null;
  const limit = model.room.stageLimit;
  const empty = Math.max(0, Math.min(limit, 12) - model.stage.length);
  return panel('stage', `Stage ${model.stage.length}/${limit}`,
    h('div', { class: 'stage-strip' + (settings.enabled ? '' : ' dimmed') },
      model.stage.map((row) => seat(row, theme)),
      Array.from({ length: empty }, () => h('div', { class: 'seat empty' }, 'empty seat'))),
    model.carousel ? h('p', { id: 'carousel', 'data-turn': model.carousel.turn }, carouselText(model.carousel)) : null,
    model.stageWaiting.length ? h('p', { id: 'stage-waiting' }, 'waiting: ' + model.stageWaiting.map((row) => row.name).join(', ')) : null,
    moderator ? carouselControls(view) : null);
}
"""#
}
