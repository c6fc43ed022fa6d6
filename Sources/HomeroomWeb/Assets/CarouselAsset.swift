extension PageAssets {
    static let carouselJS = #"""
import { h, kept, keptSelect } from './dom.js';
import { now, duration } from './clock.js';

// "Carousel every 30 s, all, join order · next turn in 0:12", as the terminal's stage strip says it.
export function carouselText(carousel, at = now()) {
  if (!carousel) return '';
  const settings = `Carousel every ${carousel.intervalSeconds} s, ${carousel.range}, ${carousel.order.replace('-', ' ')}`;
  if (!carousel.rotates) return `${settings} · everyone fits on stage`;
  return `${settings} · next turn in ${duration(Math.max(0, carousel.nextTurnAtMillis - at))}`;
}

// A moderator starts the carousel (students take turns on stage) with its settings, or stops it.
export function carouselControls({ model, act, draft }) {
  if (model.carousel) {
    return h('div', { class: 'inline-form' },
      h('button', { id: 'carousel-stop', onclick: () => act({ do: 'carousel-stop' }) }, 'Stop carousel'));
  }
  const start = (event) => {
    event.preventDefault();
    const seconds = Number(draft['carousel-seconds']);
    act({ do: 'carousel-start', seconds: seconds > 0 ? seconds : undefined,
          range: draft['carousel-range'] ?? 'all', order: draft['carousel-order'] ?? 'join-order' });
  };
  return h('form', { id: 'carousel-start', class: 'inline-form', onsubmit: start },
    'Carousel every ', kept(draft, 'carousel-seconds', { type: 'number', min: 10, max: 99, placeholder: '60', class: 'short' }), ' s',
    keptSelect(draft, 'carousel-range', [['all', 'all online'], ['camera-on', 'camera on']]),
    keptSelect(draft, 'carousel-order', [['join-order', 'join order'], ['random', 'random']]),
    h('button', { id: 'carousel-start-button', type: 'submit' }, 'Start carousel'));
}
"""#
}
