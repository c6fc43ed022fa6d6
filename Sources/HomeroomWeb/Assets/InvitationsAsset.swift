extension PageAssets {
    static let invitationsJS = #"""
import { h, panel } from './dom.js';
import { now } from './clock.js';

// Seconds left to answer, by the server's clock.
export function secondsLeft(expiresAtMillis) {
  return Math.max(0, Math.ceil((expiresAtMillis - now()) / 1000));
}

// Invitations to the stage waiting for an answer: the local user's own with Accept and
// Decline, and on a teacher's page every one with its countdown. Timed out, it goes.
export function invitations({ model, act, moderator }) {
  const open = model.invitations.filter((invitation) => secondsLeft(invitation.expiresAtMillis) > 0);
  if (open.length === 0) return null;
  return panel('invitations', 'Invitations to the stage',
    h('ul', { class: 'invitations' }, open.map((invitation) => {
      const mine = invitation.user.id === model.local.id;
      const left = h('span', { class: 'left', 'data-expires': String(invitation.expiresAtMillis) },
        `${secondsLeft(invitation.expiresAtMillis)} s left`);
      if (mine) {
        return h('li', { class: 'mine', 'data-user': invitation.user.id },
          `${invitation.inviter?.name ?? 'the teacher'} invites you on stage · `, left,
          h('button', { id: 'invitation-accept', onclick: () => act({ do: 'invitation-accept' }) }, 'Accept'),
          h('button', { id: 'invitation-decline', onclick: () => act({ do: 'invitation-decline' }) }, 'Decline'));
      }
      return h('li', { 'data-user': invitation.user.id },
        `${invitation.user.name} invited` + (moderator && invitation.inviter ? ` by ${invitation.inviter.name}` : '') + ' · ', left);
    })));
}
"""#
}
