#!/usr/bin/env node
// Serves the official SurrealDB engine (npm @surrealdb/node) over the SurrealDB
// WebSocket RPC protocol on loopback, so the Python SDK talks to it exactly as it
// talks to `surreal start`.
//
// Protocol notes (measured, see docs/surrealdb-notes.md):
// - engine.execute(cbor {id, method, params, session, txn}) answers CBOR of the bare
//   result, or of {error}; over the socket the reply is framed {id, result} / {id, error}.
// - every client connection gets its own engine session; without one, `use` on one
//   connection would change every connection's namespace. Sessions a client attaches
//   itself (SDK sessions) are owned by that connection and by no other.
// - live notifications name the session that opened the live query; each goes to the
//   connection owning that session as an id-less frame {result: {...}}.
// - the engine runs with authentication off (every session is an owner), so this server
//   checks the root credentials itself: a connection must `signin` as SURREAL_USER /
//   SURREAL_PASS (or `authenticate` with the token a signin of a live connection gave)
//   before anything but ping and version reaches the engine.
//
// Usage: SURREAL_USER=... SURREAL_PASS=... node surreal/server.mjs [--bind 127.0.0.1:8811]
//        [--storage rocksdb://var/surreal]

import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';
import { CborCodec, Uuid } from 'surrealdb';
import { WebSocketServer } from 'ws';

const require = createRequire(import.meta.url);
const codec = new CborCodec({});
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
const STORAGE_SCHEMES = ['mem://', 'rocksdb://', 'surrealkv://', 'surrealkv+versioned://'];
// Methods a connection may call before it has signed in.
const OPEN_METHODS = new Set(['signin', 'authenticate', 'invalidate', 'ping', 'version']);
const NOT_SIGNED_IN =
  'Not signed in: the local SurrealDB server requires its root credentials' +
  ' (var/surreal-credentials.json, or SURREAL_USER / SURREAL_PASS)';

function usage(message) {
  process.stderr.write(
    `${message}\nusage: node surreal/server.mjs [--bind HOST:PORT] [--storage mem://|rocksdb://PATH|surrealkv://PATH]\n`,
  );
  process.exit(2);
}

export function parseArgs(argv) {
  const options = {
    bind: process.env.SURREAL_BIND || '127.0.0.1:8811',
    storage: process.env.SURREAL_STORAGE || 'rocksdb://var/surreal',
    log: process.env.SURREAL_LOG || 'info',
    // From the environment only: a command line is visible to every user of the machine.
    user: process.env.SURREAL_USER || '',
    pass: process.env.SURREAL_PASS || '',
  };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--bind' || flag === '--storage' || flag === '--log') {
      if (value === undefined) usage(`${flag} needs a value`);
      options[flag.slice(2)] = value;
      i += 1;
    } else {
      usage(`unknown argument: ${flag}`);
    }
  }
  const split = options.bind.lastIndexOf(':');
  if (split < 0) usage(`--bind must be HOST:PORT, got ${options.bind}`);
  options.host = options.bind.slice(0, split);
  options.port = Number(options.bind.slice(split + 1));
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
    usage(`--bind has an invalid port: ${options.bind}`);
  }
  // Even with its credentials checked, the server speaks plain ws://: keep it on loopback.
  if (!LOOPBACK.has(options.host)) usage(`refusing to bind ${options.host}: loopback only`);
  if (!STORAGE_SCHEMES.some((scheme) => options.storage.startsWith(scheme))) {
    usage(`--storage must start with one of ${STORAGE_SCHEMES.join(', ')}`);
  }
  if (!options.user || !options.pass) {
    usage('SURREAL_USER and SURREAL_PASS must be set: the server accepts no one without them');
  }
  return options;
}

function loadEngine() {
  // The package's own entry point wraps the binding in the JS SDK's engine interface;
  // we need the raw binding, whose file name depends on the platform.
  const libc = process.platform === 'linux' ? (isMusl() ? '-musl' : '-gnu') : '';
  const file = `surrealdb-node.${process.platform}-${process.arch}${libc}.node`;
  const searched = require.resolve.paths('@surrealdb/node') || [];
  for (const dir of searched) {
    const candidate = path.join(dir, '@surrealdb', 'node', 'dist', file);
    if (fs.existsSync(candidate)) return require(candidate);
  }
  throw new Error(`the SurrealDB engine binding ${file} was not found; run \`npm ci\` first`);
}

function isMusl() {
  const report = process.report?.getReport?.();
  return !report?.header?.glibcVersionRuntime;
}

function log(level, message) {
  if (level === 'debug' && currentLogLevel !== 'debug') return;
  process.stderr.write(`${new Date().toISOString()} ${level.toUpperCase()} surreal: ${message}\n`);
}
let currentLogLevel = 'info';

// CBOR for {id, result: <raw>} built around the engine's bytes, so a large result is
// never decoded and re-encoded on its way through.
function frameResult(id, raw) {
  const head = codec.encode({ id });
  // A map of 1 entry starts with 0xa1; make it 0xa2 and append "result": raw.
  const key = codec.encode('result');
  const out = Buffer.allocUnsafe(head.length + key.length + raw.length);
  Buffer.from(head).copy(out, 0);
  out[0] = 0xa2;
  Buffer.from(key).copy(out, head.length);
  Buffer.from(raw).copy(out, head.length + key.length);
  return out;
}

// The engine answers {error: {...}} as a one-entry map keyed "error". A bare result is
// never such a map (records always carry an id, query results are arrays).
const ERROR_PREFIX = Buffer.from([0xa1, 0x65, ...Buffer.from('error')]);

function asUuid(value) {
  if (value instanceof Uuid) return value;
  if (typeof value === 'string') return new Uuid(value);
  throw new Error('session and txn must be UUIDs');
}

function rpcError(id, message, code = -32000) {
  return codec.encode({ id, error: { code, message } });
}

// Compared as digests, so neither the length nor the content leaks through timing.
function sameSecret(given, expected) {
  if (typeof given !== 'string') return false;
  const digest = (value) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

function rootSignin(params, options) {
  const vars = Array.isArray(params) ? params[0] : params;
  if (!vars || typeof vars !== 'object') return false;
  const scoped = ['ns', 'NS', 'namespace', 'db', 'DB', 'database', 'ac', 'AC', 'access'];
  if (scoped.some((key) => vars[key] !== undefined && vars[key] !== null)) return false;
  const user = vars.user ?? vars.username;
  const pass = vars.pass ?? vars.password;
  // Both compared, always: a wrong user name takes as long as a wrong password.
  const userOk = sameSecret(user, options.user);
  const passOk = sameSecret(pass, options.pass);
  return userOk && passOk;
}

export async function startServer(options) {
  currentLogLevel = options.log || 'info';
  const { SurrealNodeEngine } = loadEngine();
  if (options.storage.startsWith('rocksdb://') || options.storage.startsWith('surrealkv')) {
    const dir = options.storage.replace(/^[a-z+]+:\/\//, '');
    fs.mkdirSync(path.dirname(path.resolve(dir)), { recursive: true });
  }
  const engine = await SurrealNodeEngine.connect(options.storage, {
    capabilities: { live_query_notifications: true },
  });
  const version = codec.decode(await engine.execute(codec.encode({ id: 0, method: 'version' })));
  const owners = new Map(); // engine session uuid string -> Connection
  const tokens = new Map(); // token of a signin -> the Connection that signed in

  async function call(request) {
    return Buffer.from(await engine.execute(codec.encode(request)));
  }

  class Connection {
    constructor(socket) {
      this.socket = socket;
      this.sessions = new Set();
      this.defaultSession = new Uuid(randomUUID());
      this.queue = Promise.resolve();
      this.token = null; // set while signed in
    }

    signIn() {
      this.signOut();
      // Opaque, but shaped like a JWT (three dotted parts), as SDKs check tokens so.
      this.token = [16, 32, 16].map((n) => randomBytes(n).toString('base64url')).join('.');
      tokens.set(this.token, this);
      return this.token;
    }

    signOut() {
      if (this.token && tokens.get(this.token) === this) tokens.delete(this.token);
      this.token = null;
    }

    authenticate(id, method, params) {
      if (method === 'signin') {
        if (!rootSignin(params, options)) {
          log('info', 'refused a signin with wrong credentials');
          return rpcError(id, 'There was a problem with authentication', -32002);
        }
        return frameResult(id, codec.encode(this.signIn()));
      }
      if (method === 'authenticate') {
        const token = Array.isArray(params) ? params[0] : params;
        if (typeof token !== 'string' || !tokens.has(token)) {
          return rpcError(id, 'There was a problem with authentication', -32002);
        }
        this.signOut();
        this.token = token;
        return frameResult(id, codec.encode(null));
      }
      // invalidate
      this.signOut();
      return frameResult(id, codec.encode(null));
    }

    async open() {
      await this.attach(this.defaultSession);
    }

    async attach(session) {
      const key = session.toString();
      const owner = owners.get(key);
      if (owner && owner !== this) throw new Error('session belongs to another connection');
      if (owner === this) return;
      const raw = await call({ id: 0, method: 'attach', session });
      if (raw.subarray(0, ERROR_PREFIX.length).equals(ERROR_PREFIX)) {
        throw new Error(codec.decode(raw).error.message);
      }
      owners.set(key, this);
      this.sessions.add(key);
    }

    async detach(session) {
      const key = session.toString();
      if (!this.sessions.has(key)) return;
      this.sessions.delete(key);
      owners.delete(key);
      await call({ id: 0, method: 'detach', session }).catch(() => {});
    }

    async handle(data) {
      let request;
      try {
        request = codec.decode(data instanceof Buffer ? data : Buffer.from(data));
      } catch (err) {
        return rpcError(null, `invalid CBOR request: ${err.message}`, -32700);
      }
      const id = request?.id ?? null;
      if (!request || typeof request.method !== 'string') {
        return rpcError(id, 'request must be a map with a method', -32600);
      }
      try {
        const method = request.method;
        if (method === 'signin' || method === 'authenticate' || method === 'invalidate') {
          return this.authenticate(id, method, request.params);
        }
        if (!this.token && !OPEN_METHODS.has(method)) {
          return rpcError(id, NOT_SIGNED_IN, -32002);
        }
        let session = this.defaultSession;
        if (request.session !== undefined && request.session !== null) {
          session = asUuid(request.session);
        }
        if (method === 'attach') {
          await this.attach(session);
          return frameResult(id, codec.encode(null));
        }
        if (method === 'detach') {
          if (session.toString() === this.defaultSession.toString()) {
            return rpcError(id, 'the connection session cannot be detached');
          }
          await this.detach(session);
          return frameResult(id, codec.encode(null));
        }
        if (!this.sessions.has(session.toString())) {
          return rpcError(id, `Session not found: ${session}`);
        }
        const forwarded = { id, method, params: request.params, session };
        if (request.txn !== undefined && request.txn !== null) forwarded.txn = asUuid(request.txn);
        const raw = await call(forwarded);
        if (raw.subarray(0, ERROR_PREFIX.length).equals(ERROR_PREFIX)) {
          const { error } = codec.decode(raw);
          return codec.encode({ id, error });
        }
        return frameResult(id, raw);
      } catch (err) {
        return rpcError(id, err.message || String(err));
      }
    }

    async close() {
      this.signOut();
      for (const key of [...this.sessions]) await this.detach(new Uuid(key));
    }
  }

  // One receiver for the whole engine; each notification goes to the owner of the
  // session that opened the live query.
  const receiver = await engine.notifications();
  let stopping = false;
  (async () => {
    while (!stopping) {
      let value;
      try {
        value = await receiver.recv();
      } catch (err) {
        if (!stopping) log('error', `notification receiver failed: ${err.message}`);
        return;
      }
      if (value === null) return;
      const note = codec.decode(value);
      const owner = note.session ? owners.get(note.session.toString()) : undefined;
      if (!owner || owner.socket.readyState !== owner.socket.OPEN) continue;
      const { id, action, record, result } = note;
      owner.socket.send(codec.encode({ result: { id, action, record, result } }));
    }
  })();

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    if (req.method === 'GET' && url.pathname === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', version, storage: options.storage }));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/version') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(version);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'not found: use /rpc (WebSocket) or /health' }));
  });

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 256 * 1024 * 1024,
    handleProtocols: (protocols) => (protocols.has('cbor') ? 'cbor' : false),
  });

  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname !== '/rpc') {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });

  wss.on('connection', (ws) => {
    if (ws.protocol !== 'cbor') {
      ws.close(1002, 'only the cbor subprotocol is supported');
      return;
    }
    const connection = new Connection(ws);
    const ready = connection.open();
    ws.on('message', (data) => {
      // Requests run concurrently in the engine (a slow query must not hold up the
      // connection), each reply framed with its own id.
      ready
        .then(() => connection.handle(data))
        .then((reply) => {
          if (ws.readyState === ws.OPEN) ws.send(reply);
        })
        .catch((err) => log('error', `request failed: ${err.message}`));
    });
    ws.on('close', () => {
      ready.then(() => connection.close()).catch(() => {});
    });
    ws.on('error', (err) => log('debug', `socket error: ${err.message}`));
  });

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host.replace(/^\[|\]$/g, ''), resolve);
  });
  const address = server.address();

  async function stop() {
    stopping = true;
    for (const client of wss.clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
    // Freeing the engine closes the datastore, so RocksDB flushes before exit.
    engine.free();
  }

  return { server, address, version, stop };
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  let running;
  try {
    running = await startServer(options);
  } catch (err) {
    process.stderr.write(`surreal: could not start: ${err.message}\n`);
    process.exit(1);
  }
  const { address, version } = running;
  log('info', `${version} serving ${options.storage} on ws://${options.host}:${address.port}/rpc`);
  // A machine-readable line for whoever started us (tests pick a free port with :0).
  process.stdout.write(`LISTENING ${options.host}:${address.port}\n`);
  let closing = false;
  const shutdown = async (signal) => {
    if (closing) return;
    closing = true;
    log('info', `${signal}: shutting down`);
    await running.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('server.mjs')) {
  main();
}
