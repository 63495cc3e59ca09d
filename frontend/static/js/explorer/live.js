// Live changes over the graph socket, applied as diffs and highlighted. After a dropped
// socket the server replays what was missed, from the last change's versionstamp.

import { connectSocket } from '../socket.js';
import { state } from './state.js';
import { api, root, status, toast } from './page.js';
import { cy } from './graph.js';
import { settle } from './layout.js';
import { applyTime } from './time.js';
import { forget, loadGraph, merge } from './elements.js';
import { communityJob } from './communities.js';

const FRESH_MS = 3000;
const SOCKET = root.dataset.socket;

export const seenAt = new Map(); // record id -> when its change arrived (for benchmarks)

function highlight(element) {
  if (!element) return;
  element.addClass('fresh');
  setTimeout(() => element.removeClass('fresh'), FRESH_MS);
}

const pendingNames = new Set();

// New nodes settle into the layout together, a moment after the last of a burst arrives.
const arrivals = new Set();
let settling = null;
function settleSoon(added) {
  added.nodes().forEach((node) => { arrivals.add(node.id()); });
  if (!arrivals.size) return;
  clearTimeout(settling);
  settling = setTimeout(() => {
    const nodes = cy.collection([...arrivals].map((id) => cy.getElementById(id)).filter((n) => n.nonempty()));
    arrivals.clear();
    settle(nodes);
    if (cy.nodes().length <= 40) cy.fit(cy.elements().not('.gone'), 60); // a small graph: all in view
  }, 250);
}

async function fetchNode(id) {
  if (pendingNames.has(id)) return;
  pendingNames.add(id);
  try {
    const entity = await api(`/entities/${encodeURIComponent(id)}`);
    settleSoon(merge([{ ...entity, id }], []));
  } catch { /* gone meanwhile */ } finally { pendingNames.delete(id); }
}

function applyChange(change) {
  const data = change.data || {};
  seenAt.set(change.record, Date.now());
  if (change.table === 'job') {
    if (data.kind === 'communities') communityJob(data);
    else jobToast(data);
    return;
  }
  if (change.action === 'DELETE' || (change.table === 'entity' && data.merged_into)) {
    forget(change.record);
    return;
  }
  if (change.table === 'entity') {
    settleSoon(merge([{ ...data, id: change.record }], []));
    highlight(state.nodes.get(change.record).ele);
  } else if (change.table === 'relates_to') {
    const row = { ...data, id: change.record, source: data.in, target: data.out };
    const wasOn = state.shown.get(change.record) === 'on';
    for (const end of [row.source, row.target]) {
      if (end && !state.nodes.has(end)) {
        settleSoon(merge([{ id: end, name: '…', entity_type: 'Entity' }], []));
        fetchNode(end);
      }
    }
    const added = merge([], [row]);
    if (wasOn && data.expired_at) state.justEnded.add(change.record);
    // Nodes joined by a new fact move to it (those placed before it came stay put).
    if (added.nonempty()) settleSoon(added.connectedNodes().filter((n) => arrivals.has(n.id())));
    highlight(state.facts.get(change.record).ele);
  }
}

let applyQueued = false;
function scheduleApply() {
  if (applyQueued) return;
  applyQueued = true;
  requestAnimationFrame(() => {
    applyQueued = false;
    state.knownSpan.end = Date.now();
    applyTime();
  });
}

function jobToast(job) {
  const id = String(job.id ?? 'job');
  const progress = job.total ? ` ${job.progress ?? 0}/${job.total}` : '';
  if (job.status === 'failed') toast(id, `Ingestion failed: ${job.error ?? 'see the uploads page'}`, 'error');
  else if (job.status === 'completed') toast(id, `Ingestion finished${progress}`);
  else toast(id, `Ingesting${progress}…`);
}

// Versionstamps exceed 2**53, so they are compared as BigInts. A change that became
// visible late can carry a lower one than the last: the cursor keeps the highest.
function noteVersionstamp(vs) {
  if (typeof vs !== 'string' || !/^[0-9]+$/.test(vs)) return;
  if (state.lastVs === null || BigInt(vs) > BigInt(state.lastVs)) state.lastVs = vs;
}

// `onSocket` gets each new socket (for tests and the console).
export function connect(onSocket) {
  connectSocket(SOCKET, {
    since: () => state.lastVs,
    onSocket,
    onMessage(message, { resumed }) {
      if (message.type === 'change') noteVersionstamp(message.versionstamp);
      // Before any change: where this socket's changes start (a later ready, after a
      // reconnect, would skip what the replay has yet to send).
      if (message.type === 'live.ready' && state.lastVs === null) noteVersionstamp(message.versionstamp);
      if (message.type === 'live.ready') status(resumed ? 'Catching up…' : 'Live');
      else if (message.type === 'live.unavailable') status('The graph store is unavailable; retrying…');
      else if (message.type === 'replay.done') status('Live');
      else if (message.type === 'replay.reload') { status('Reloading…'); loadGraph().then(() => status('Live')); }
      else if (message.type === 'change') { applyChange(message); scheduleApply(); }
    },
    onForbidden: () => status('You no longer have access to this tenant.'),
    onDisconnect: () => status('Disconnected; reconnecting…'),
  });
}
