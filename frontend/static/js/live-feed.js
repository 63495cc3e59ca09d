// Shows the tenant's live graph changes as a list: the smallest client of the
// /ws/t/<slug>/live/ socket. Text from the graph is set as text, never as HTML.

const MAX_ITEMS = 200;

function describe(change) {
  const name = change.data?.name ?? change.data?.fact ?? change.data?.status ?? '';
  return `${change.action} ${change.record}${name ? ` — ${name}` : ''}`;
}

function connect(status, list, url, attempt = 0) {
  const socket = new WebSocket(url);
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(event.data);
    if (message.type === 'live.ready') status.textContent = 'Live: changes appear here as they happen.';
    else if (message.type === 'live.unavailable') status.textContent = 'The graph store is unavailable; retrying…';
    else if (message.type === 'change') {
      const item = document.createElement('li');
      item.textContent = describe(message);
      list.prepend(item);
      while (list.children.length > MAX_ITEMS) list.lastChild.remove();
    }
  });
  socket.addEventListener('close', (event) => {
    if (event.code === 4403) {
      status.textContent = 'You no longer have access to this tenant.';
      return;
    }
    status.textContent = 'Disconnected; reconnecting…';
    const delay = Math.min(10000, 500 * 2 ** attempt);
    setTimeout(() => connect(status, list, url, attempt + 1), delay);
  });
  socket.addEventListener('open', () => { attempt = 0; });
}

const status = document.getElementById('live-status');
const list = document.getElementById('live-changes');
if (status && list) {
  const scheme = window.location.protocol === 'https:' ? 'wss' : 'ws';
  connect(status, list, `${scheme}://${window.location.host}${status.dataset.socket}`);
}
