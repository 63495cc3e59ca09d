// Shows the tenant's live graph changes as a list: the smallest client of the
// /ws/t/<slug>/live/ socket. Text from the graph is set as text, never as HTML.

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
        const item = document.createElement('li');
        item.textContent = describe(message);
        list.prepend(item);
        while (list.children.length > MAX_ITEMS) list.lastChild.remove();
      }
    },
    onForbidden() { status.textContent = 'You no longer have access to this tenant.'; },
    onDisconnect() { status.textContent = 'Disconnected; reconnecting…'; },
  });
}

const status = document.getElementById('live-status');
const list = document.getElementById('live-changes');
if (status && list) follow(status, list);
