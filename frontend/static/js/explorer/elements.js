// What is in the graph: rows from the API or from live changes merged into the state
// and into Cytoscape, forgotten when deleted, and loaded (the first view, around a seed,
// or around one fact).

import { ms, NEVER } from '../time.js';
import { state } from './state.js';
import { $ } from '../dom.js';
import { api, status } from './page.js';
import { colourOf, communityColour, cy, tune } from './graph.js';
import { layout, nearNeighbour, settle } from './layout.js';
import { applyTime, drawHistogram, factShown, fitSpan, setShown, viewpoint } from './time.js';
import { showEntity, showFact } from './panel.js';
import { clearFolds, foldLeaves, unfoldHolding } from './fold.js';

// An empty tenant says how to fill it, until its first entity arrives.
function emptyHint() {
  $('empty-hint').hidden = state.nodes.size > 0;
}

function nodeData(row) {
  const id = row.id;
  const known = state.nodes.get(id);
  const community = row.community ?? known?.community ?? null;
  const entry = known ?? { ele: null, created_at: 0 };
  const type = row.type ?? row.entity_type ?? 'Entity';
  // Unknown creation time (a placeholder for a fact's end): treat as always known.
  if (row.created_at !== undefined) entry.created_at = row.created_at ? ms(row.created_at) : 0;
  entry.community = community;
  if (row.pinned !== undefined) entry.pinned = Boolean(row.pinned);
  state.nodes.set(id, entry);
  const degree = row.degree ?? 0;
  const data = {
    id,
    label: row.label ?? row.name ?? id,
    type,
    summary: row.summary ?? '',
    degree,
    // The server ranks by salience (kgapp/graph/search/salience.py); an entity that
    // arrived live has only its facts to go by until the next load.
    salience: row.salience ?? known?.ele?.data('salience') ?? Math.log2(1 + degree),
    colour: colourOf(type),
    community,
    communityColour: community ? communityColour(community) : '#c4c9cf',
  };
  for (const field of ['named', 'mentions', 'pinned']) if (row[field] !== undefined) data[field] = row[field];
  return data;
}

function edgeData(row) {
  const fact = state.facts.get(row.id) ?? { ele: null };
  Object.assign(fact, {
    source: row.source, target: row.target, relation: row.relation,
    valid_at: ms(row.valid_at), invalid_at: ms(row.invalid_at),
    created_at: ms(row.created_at), expired_at: ms(row.expired_at),
  });
  // The fact this one revises (the same statement with its validity closed): versions of
  // one fact share the root of this chain, and the panel lists them as one row.
  if (row.revision_of !== undefined) fact.revision_of = row.revision_of ?? null;
  state.facts.set(row.id, fact);
  if (fact.created_at !== NEVER && fact.created_at < state.knownSpan.start) state.knownSpan.start = fact.created_at;
  fact.data = {
    id: row.id, source: row.source, target: row.target, relation: row.relation,
    fact: row.fact, confidence: row.confidence ?? 1, edge_type: row.edge_type,
  };
  return fact;
}

// Add nodes and edges (rows from the API or from live changes) in one go; existing ones
// are updated in place. Returns the new elements.
export function merge(nodes, edges) {
  const newNodes = new Map();
  const newEdges = new Map();
  const view = viewpoint();
  cy.batch(() => {
    for (const row of nodes) {
      const data = nodeData(row);
      const { ele } = state.nodes.get(data.id);
      if (ele) ele.data(data);
      else newNodes.set(data.id, data);
    }
    for (const row of edges) {
      if (!state.nodes.has(row.source) || !state.nodes.has(row.target)) continue;
      const fact = edgeData(row);
      if (fact.ele) fact.ele.data(fact.data);
      else if (factShown(row.id, fact, view) !== 'off') newEdges.set(row.id, fact.data);
    }
  });
  // A new fact of a folded topic joins it to more than its entity: it leaves the fold.
  for (const row of edges) {
    if (newEdges.has(row.id)) { unfoldHolding(row.source); unfoldHolding(row.target); }
  }
  if (state.asOf === NEVER) fitSpan(); // the slider spans the facts (unless in use)
  if (!newNodes.size && !newEdges.size) return cy.collection();
  tune(state.nodes.size + state.facts.size);
  // A few new nodes start beside a neighbour already placed; many are laid out anew.
  const few = newNodes.size < 50 && cy.nodes().nonempty();
  const edgeRows = [...newEdges.values()];
  const addedNodes = cy.add([...newNodes.values()].map((data) => ({
    group: 'nodes', data, position: few ? nearNeighbour(data.id, edgeRows) : undefined })));
  // Style the nodes before their edges exist: every styled property of a node otherwise
  // walks its edges, which for thousands of nodes costs a good part of a second.
  if (addedNodes.length > 500) addedNodes.forEach((node) => node.pstyle('display'));
  const added = addedNodes.union(cy.add(edgeRows.map((data) => ({ group: 'edges', data }))));
  added.forEach((ele) => { (ele.isNode() ? state.nodes : state.facts).get(ele.id()).ele = ele; });
  if ($('by-community').checked) added.nodes().addClass('by-community');
  emptyHint();
  return added;
}

export function clear() {
  clearFolds();
  cy.elements().remove();
  for (const map of [state.nodes, state.facts, state.shown]) map.clear();
  state.visible = { nodes: 0, edges: 0 };
}

export function forget(id) {
  const entry = state.facts.get(id) ?? state.nodes.get(id);
  if (entry?.ele) entry.ele.remove();
  const isNode = state.nodes.has(id);
  unshow(id);
  state.facts.delete(id);
  state.nodes.delete(id);
  if (!isNode) return;
  for (const [factId, fact] of state.facts) { // a removed node takes its facts along
    if (fact.source === id || fact.target === id) {
      unshow(factId);
      state.facts.delete(factId);
    }
  }
}

function unshow(id) {
  setShown(id, null, 'off'); // counts it out of state.visible while its maps still hold it
  state.shown.delete(id);
}

export async function loadGraph(params = 'limit=150') {
  const body = await api(`/graph?${params}`);
  const nodes = body.nodes.map((n) => n.data);
  const edges = body.edges.map((e) => e.data);
  const first = cy.elements().empty();
  const added = merge(nodes, edges);
  state.knownSpan.end = Date.now();
  drawHistogram();
  if (first) foldLeaves();
  applyTime();
  if (first) layout(null, { fit: true });
  else if (added.nonempty()) settle(added.nodes());
  emptyHint();
  return added;
}

export async function seed(id) {
  status('Loading…');
  try {
    const opened = unfoldHolding(id);
    await loadGraph(`seed=${encodeURIComponent(id)}&depth=${$('depth').value}&limit=60`);
    if (opened.nonempty()) { applyTime(); settle(opened); }
    const node = cy.getElementById(id);
    cy.elements().unselect();
    node.select();
    cy.animate({ center: { eles: node }, zoom: Math.max(cy.zoom(), 1) }, { duration: 250 });
    await showEntity(id);
    status('Ready');
  } catch (error) {
    status(`Could not load that entity: ${error.message}`);
  }
}

// One fact in focus (the Ask page links to ?fact=<id>): the neighbourhood of its source
// loaded, the fact itself added should that page leave it out, drawn among the ended
// facts when it has ended, selected, centred and shown in the panel.
export async function focusFact(id) {
  status('Loading…');
  try {
    const fact = await api(`/facts/${encodeURIComponent(id)}`);
    unfoldHolding(fact.source);
    unfoldHolding(fact.target);
    await loadGraph(`seed=${encodeURIComponent(fact.source)}&depth=1&limit=60`);
    if (!state.facts.has(id)) {
      const ends = [[fact.source, fact.source_name], [fact.target, fact.target_name]];
      merge(ends.filter(([end]) => !state.nodes.has(end)).map(([end, name]) => ({ id: end, name })), [fact]);
    }
    if (factShown(id, state.facts.get(id), viewpoint()) === 'off') $('show-history').checked = true;
    applyTime();
    const edge = cy.getElementById(id);
    cy.elements().unselect();
    edge.select();
    cy.animate({ center: { eles: edge }, zoom: Math.max(cy.zoom(), 1) }, { duration: 250 });
    await showFact(id);
    status('Ready');
  } catch (error) {
    status(`Could not load that fact: ${error.message}`);
  }
}
