extension PageAssets {
    static let linkLostJS = #"""
import { h } from './dom.js';

// The session's pool gave up on every node (aborted): the room below is as it was last
// seen and actions are refused until a node answers. The pool still retries by itself
// every few seconds; logging in again starts a new session at once.
export function linkLost({ model, link, relogin }) {
  if (link !== 'open' || model.connection !== 'aborted') return null;
  return h('div', { id: 'link-lost', class: 'link-lost', role: 'alert' },
    h('strong', {}, 'Lost the classroom: every node failed. '),
    h('span', { id: 'link-lost-why' }, model.link ?? ''),
    h('span', {}, ' What you see is the room as it was last seen; the session keeps trying the nodes, or log in again.'),
    h('button', { id: 'relogin', onclick: relogin }, 'Log in again'));
}
"""#
}
