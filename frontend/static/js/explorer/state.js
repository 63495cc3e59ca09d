// The explorer's state: one object, owned here and imported by the modules that read or
// change it (and shown to tests and the console as window.kgExplorer.state).

import { NEVER } from '../time.js';

export const state = {
  // id -> {ele, data, source, target, relation, valid_at, invalid_at, created_at, expired_at,
  // revision_of, hidden}: the API's names; the four times are milliseconds, NEVER for an
  // open end (what ../time.js's visible() reads).
  // `ele` stays null until the fact is first shown: a fact hidden at the moment in view
  // (ended, not yet known, filtered out) costs Cytoscape nothing until then. The rest
  // are added while the browser is idle, so that scrubbing later adds nothing.
  facts: new Map(),
  nodes: new Map(), // id -> {ele, created_at, hidden, pinned, community, folded (its fold's id)}
  folds: new Map(), // fold node id -> {hub, members: Set of entity ids} (fold.js)
  typeColours: new Map(),
  communityColours: new Map(),
  span: { start: Date.now() - 86400000, end: Date.now() }, // valid time
  // System time: from the first fact recorded (elements.js lowers the start), or from a
  // minute ago when all are newer, so that the slider's thousand steps stay fine-grained.
  knownSpan: { start: Date.now() - 60000, end: Date.now() },
  asOf: NEVER, // NEVER: now, following live updates
  knownAt: NEVER,
  shown: new Map(), // element id -> 'on' | 'past' | 'off'
  visible: { nodes: 0, edges: 0 }, // how many are shown (kept by setShown)
  diff: null, // while a comparison is shown: fact id -> 'added' | 'ended' | 'changed' (explorer/diff.js)
  justEnded: new Set(), // facts ended by a live change: drawn as history until the view changes
  lastVs: null, // the change-feed versionstamp of the last change (a decimal string): where a replay starts
  playing: null, // the playback's interval
  placing: 0, // server layouts in flight (until the frame after they are applied)
  large: null, // whether the graph is drawn the cheap way (set by tune)
  labelled: null, // whether every edge shows its relation (zoomed in)
};
