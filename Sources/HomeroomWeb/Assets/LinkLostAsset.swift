extension PageAssets {
    static let linkLostJS = #"""
import { h } from './dom.js';

// Every node failed (a whole round while reconnecting, or suspended after the backoff),
// or the pool gave up for good (aborted): the room below is as it was last seen and
// actions are refused until a node answers. Reconnecting and suspended, the pool still
// tries by itself (by default 2, 4, 8, 16 s apart, then every 30 s;
// `homeroom web --reconnect-waits`); logging in again starts a new
// session at once.
export function linkLost({ model, link, relogin }) {
  if (link !== 'open') return null;
  const failed = model.connection === 'suspended' || model.connection === 'aborted'
    || (model.connection === 'reconnecting' && model.linkReason === 'every-node-failed');
  if (!failed) return null;
  const headline = model.connection === 'aborted' ? 'Lost the classroom for good. '
    : model.connection === 'suspended' ? 'Lost the classroom: every node failed for a while (suspended). '
    : 'Lost the classroom: every node failed. ';
  const then = model.connection === 'aborted' ? ' What you see is the room as it was last seen; log in again to try.'
    : ' What you see is the room as it was last seen; the session keeps trying the nodes, or log in again.';
  return h('div', { id: 'link-lost', class: 'link-lost', role: 'alert', 'data-state': model.connection,
                    'data-reason': model.linkReason ?? '' },
    h('strong', {}, headline),
    h('span', { id: 'link-lost-why' }, model.link ?? ''),
    h('span', {}, then),
    h('button', { id: 'relogin', onclick: relogin }, 'Log in again'));
}
"""#
}
