// Leaf topics fold. A chat names many things once, each at the end of one fact of one
// speaker ("need", "mix"): drawn one by one they make a star of names around the
// speaker. An entity's leaf topics (common nouns, mentioned at most once, whose every
// fact joins that entity) fold into one node, "12 topics of Jolene", that opens on a
// click; their facts are drawn again once it is open. Named things, pinned ones and
// anything mentioned twice stay on their own.

import { state } from './state.js';
import { cy } from './graph.js';

const FOLD_MIN = 3; // fewer leaves than this stay as they are
const PREFIX = 'fold:';

function isTopic(entry) {
  const data = entry.ele.data();
  return data.named === false && !data.pinned && !entry.pinned && Number(data.mentions ?? 0) <= 1;
}

// Each entity's neighbours through the loaded facts, at any time.
function neighbours() {
  const near = new Map();
  const add = (a, b) => { if (!near.has(a)) near.set(a, new Set()); near.get(a).add(b); };
  for (const fact of state.facts.values()) {
    add(fact.source, fact.target);
    add(fact.target, fact.source);
  }
  return near;
}

function leavesByHub() {
  const near = neighbours();
  const byHub = new Map();
  for (const [id, entry] of state.nodes) {
    if (!entry.ele || entry.folded || !isTopic(entry)) continue;
    const ends = near.get(id);
    if (!ends || ends.size !== 1) continue;
    const [hub] = ends;
    const hubEntry = state.nodes.get(hub);
    if (hub === id || !hubEntry?.ele || hubEntry.folded) continue;
    if (!byHub.has(hub)) byHub.set(hub, []);
    byHub.get(hub).push(id);
  }
  return byHub;
}

function makeFold(hub, members) {
  const id = `${PREFIX}${hub}`;
  const hubNode = cy.getElementById(hub);
  const fold = state.folds.get(id) ?? { hub, members: new Set() };
  members.forEach((member) => { fold.members.add(member); state.nodes.get(member).folded = id; });
  state.folds.set(id, fold);
  const label = `${fold.members.size} topics of ${hubNode.data('label')}`;
  const existing = cy.getElementById(id);
  if (existing.nonempty()) {
    existing.data('label', label);
    return;
  }
  const at = hubNode.position();
  cy.add([
    { group: 'nodes', classes: 'fold', position: { x: at.x + 40, y: at.y + 40 },
      data: { id, label, hub, salience: Math.log2(1 + fold.members.size), type: 'fold' } },
    { group: 'edges', classes: 'fold', data: { id: `${id}>`, source: hub, target: id, confidence: 0.2, relation: '' } },
  ]);
}

// Fold every entity's leaf topics (the first view, and after a reload).
export function foldLeaves() {
  for (const [hub, members] of leavesByHub()) {
    if (members.length >= FOLD_MIN || state.folds.has(`${PREFIX}${hub}`)) makeFold(hub, members);
  }
}

export function isFold(id) { return state.folds.has(id); }

// Open a fold: its topics around where it was, drawn on their own again. Returns them.
export function unfold(id) {
  const fold = state.folds.get(id);
  if (!fold) return cy.collection();
  const group = cy.getElementById(id);
  const at = group.nonempty() ? group.position() : cy.getElementById(fold.hub).position();
  const members = [...fold.members].map((member) => state.nodes.get(member)).filter(Boolean);
  const radius = 30 + 6 * members.length;
  members.forEach((entry, i) => {
    entry.folded = null;
    const angle = (2 * Math.PI * i) / members.length;
    entry.ele.position({ x: at.x + radius * Math.cos(angle), y: at.y + radius * Math.sin(angle) });
  });
  group.remove();
  state.folds.delete(id);
  return cy.collection(members.map((entry) => entry.ele));
}

// Open the fold that holds an entity, if one does (a search, an expansion, a new fact).
export function unfoldHolding(entityId) {
  const fold = state.nodes.get(entityId)?.folded;
  return fold ? unfold(fold) : cy.collection();
}

// Forget the folds (the graph is cleared or loaded anew).
export function clearFolds() {
  for (const id of state.folds.keys()) cy.getElementById(id).remove();
  state.folds.clear();
  for (const entry of state.nodes.values()) entry.folded = null;
}
