// The one reconnecting WebSocket the pages share: it opens `path` on this host, passes
// every message on parsed, and after a drop opens it again with a growing delay
// (0.5 s, 1 s, 2 s … up to 10 s; back to 0.5 s once a socket opened). A close with
// code 4403 (access withdrawn) ends it. With `since`, each new socket asks the server to
// replay what changed after that cursor.

export const FORBIDDEN = 4403;
const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 10000;

export function backoff(attempt) {
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt);
}

// handlers:
//   onMessage(message, {resumed})  every message, parsed; `resumed` when this socket was
//                                  opened with a `since` cursor
//   since()                        the cursor to resume from (a string), or null
//   onSocket(socket)               each new socket, once created
//   onForbidden()                  closed with 4403: no more reconnecting
//   onDisconnect()                 dropped (or refused); a new socket follows
export function connectSocket(path, handlers) {
  const { onMessage, since, onSocket, onForbidden, onDisconnect } = handlers;
  const connect = (attempt) => {
    const cursor = since?.() ?? null;
    const query = cursor ? `?since=${encodeURIComponent(cursor)}` : '';
    const retry = () => {
      onDisconnect?.();
      setTimeout(() => connect(attempt + 1), backoff(attempt));
    };
    const scheme = window.location.protocol === 'https:' ? 'wss' : 'ws';
    let socket;
    try {
      socket = new WebSocket(`${scheme}://${window.location.host}${path}${query}`);
    } catch { // offline, or refused before a socket exists: try again later
      retry();
      return;
    }
    onSocket?.(socket);
    socket.addEventListener('open', () => { attempt = 0; });
    socket.addEventListener('message', (event) => {
      onMessage(JSON.parse(event.data), { resumed: query !== '' });
    });
    socket.addEventListener('close', (event) => {
      if (event.code === FORBIDDEN) { onForbidden?.(); return; }
      retry();
    });
  };
  connect(0);
}
