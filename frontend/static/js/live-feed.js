// Shows the tenant's live graph changes as a list: the smallest client of the
// /ws/t/<slug>/live/ socket. Text from the graph is set as text, never as HTML.

import { $, el } from './dom.js';
import { connectSocket } from './socket.js';

const MAX_ITEMS = 200;

function describe(change) {
  const name = change.data?.name ?? change.data?.fact ?? change.data?.status ?? '';
  return `${change.action} ${change.record}${name ? ` — ${name}` : ''}`;
}

function follow(status, list) {
  connectSocket(status.dataset.socket, {
    onMessage(message) {
      if (message.type === 'live.ready') status.textContent = 'Live: changes appear here as they happen.';
      else if (message.type === 'live.unavailable') status.textContent = 'The graph store is unavailable; retrying…';
      else if (message.type === 'change') {
        list.prepend(el('li', describe(message)));
        while (list.children.length > MAX_ITEMS) list.lastChild.remove();
      }
    },
    onForbidden() { status.textContent = 'You no longer have access to this tenant.'; },
    onDisconnect() { status.textContent = 'Disconnected; reconnecting…'; },
  });
}

const status = $('live-status');
const list = $('live-changes');
if (status && list) follow(status, list);
