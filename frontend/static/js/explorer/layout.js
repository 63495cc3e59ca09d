// Placing the nodes: fcose in the browser for small graphs and for new elements around
// placed ones; a full layout of a large graph is computed by the server. New nodes (live
// changes, an opened fold) settle in among the placed ones, which stay put.

import { state } from './state.js';
import { api, status } from './page.js';
import { cy, FORCE_LAYOUT } from './graph.js';
import { declutter } from './labels.js';

export function nearNeighbour(id, edges) {
  for (const edge of edges) {
    const other = edge.source === id ? edge.target : edge.target === id ? edge.source : null;
    const node = other && state.nodes.get(other)?.ele;
    if (node) {
      const p = node.position();
      return { x: p.x + (Math.random() - 0.5) * 120, y: p.y + (Math.random() - 0.5) * 120 };
    }
  }
  const extent = cy.extent();
  return { x: (extent.x1 + extent.x2) / 2 + (Math.random() - 0.5) * 200,
    y: (extent.y1 + extent.y2) / 2 + (Math.random() - 0.5) * 200 };
}

// Above this many nodes a full layout is computed by the server (igraph, in C):
// fcose needs seconds for thousands of nodes in the browser.
const SERVER_LAYOUT = 1000;

// What a full layout places: everything but the topics inside a fold (and their facts).
function placeable() {
  const inFolds = cy.nodes().filter((node) => Boolean(state.nodes.get(node.id())?.folded));
  return cy.elements().not(inFolds).not(inFolds.connectedEdges());
}

export function layout(elements, { fit = false } = {}) {
  const target = elements ?? placeable();
  if (target.empty()) return;
  if (!elements && target.nodes().length > SERVER_LAYOUT) {
    serverLayout(target, fit);
    return;
  }
  // Room for the names the nodes carry (labels.js sets their size against the zoom).
  // Entities with no fact drawn are tiled: as far apart as a name is wide.
  const options = { name: FORCE_LAYOUT, animate: false, fit, randomize: !elements, nodeRepulsion: 6000,
    idealEdgeLength: 90, nodeDimensionsIncludeLabels: true, tilingPaddingHorizontal: 70,
    tilingPaddingVertical: 24, quality: target.nodes().length > 500 ? 'draft' : 'default' };
  if (elements) {
    // Lay out the new elements around the ones already placed, which stay put.
    const fixed = target.neighborhood().nodes().not(elements);
    options.fixedNodeConstraint = fixed.map((n) => ({ nodeId: n.id(), position: n.position() }));
    target.union(fixed).layout(options).run();
  } else {
    target.layout(options).run();
  }
  declutter();
}

const SETTLE_ALL = 200; // up to this many nodes, the new ones settle among all the others

// New nodes settle in: each starts by the nodes it is joined to (or in view, when it
// is joined to none placed), then a force layout moves the new ones only, the others
// fixed where they are. With nothing placed yet, the graph is laid out whole.
export function settle(arrived) {
  const nodes = arrived.filter((node) => node.inside());
  if (nodes.empty()) return;
  const placed = cy.nodes().not(nodes).not('.gone');
  if (placed.empty()) {
    layout(null, { fit: true });
    return;
  }
  const extent = cy.extent();
  nodes.forEach((node) => {
    const near = node.neighborhood('node').not(nodes);
    if (near.nonempty()) {
      const x = near.reduce((sum, n) => sum + n.position('x'), 0) / near.length;
      const y = near.reduce((sum, n) => sum + n.position('y'), 0) / near.length;
      node.position({ x: x + (Math.random() - 0.5) * 80, y: y + (Math.random() - 0.5) * 80 });
    } else {
      node.position({ x: extent.x1 + Math.random() * extent.w, y: extent.y1 + Math.random() * extent.h });
    }
  });
  const around = placed.length + nodes.length <= SETTLE_ALL ? placed : nodes.neighborhood('node').not(nodes);
  const target = nodes.union(around).union(nodes.connectedEdges());
  target.layout({ name: FORCE_LAYOUT, animate: false, fit: false, randomize: false, nodeRepulsion: 6000,
    idealEdgeLength: 90, nodeDimensionsIncludeLabels: true,
    fixedNodeConstraint: around.map((n) => ({ nodeId: n.id(), position: { ...n.position() } })) }).run();
  declutter();
}

async function serverLayout(target, fit) {
  // Nothing is drawn until the positions arrive: a frame of thousands of elements
  // piled on one point costs seconds of drawing for nothing.
  cy.startBatch();
  state.placing += 1;
  try {
    await placeOnServer(target, fit);
  } finally {
    cy.endBatch();
    requestAnimationFrame(() => requestAnimationFrame(() => { state.placing -= 1; }));
  }
}

async function placeOnServer(target, fit) {
  const nodes = target.nodes();
  const number = new Map(nodes.map((node, i) => [node.id(), i]));
  const edges = target.edges().map((e) => [number.get(e.data('source')), number.get(e.data('target'))]);
  try {
    const asked = api('/layout', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ count: nodes.length, edges, aspect: Math.min(10, Math.max(0.1, cy.width() / Math.max(1, cy.height()))) }),
    });
    // While the server lays out, style the edges (done lazily, it would hold up the
    // first frame after the positions arrive).
    target.edges().forEach((edge) => { edge.pstyle('display'); });
    const { positions } = await asked;
    const placed = {};
    nodes.forEach((node, i) => { placed[node.id()] = { x: positions[i][0], y: positions[i][1] }; });
    target.layout({ name: 'preset', positions: placed, fit: false, animate: false }).run();
    if (fit) fitPoints(positions, 30);
  } catch (error) {
    status(`Layout on the server failed (${error.message}); laying out here…`);
    target.layout({ name: FORCE_LAYOUT, quality: 'draft',
      animate: false, fit }).run();
  }
}

// Fit the view to known positions. cy.fit() would measure the bounding box of every
// element first, which for thousands of nodes costs a third of a second.
function fitPoints(points, padding) {
  let [x1, y1, x2, y2] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const [x, y] of points) {
    x1 = Math.min(x1, x); x2 = Math.max(x2, x);
    y1 = Math.min(y1, y); y2 = Math.max(y2, y);
  }
  if (!Number.isFinite(x1)) return;
  const margin = padding + 10; // nodes are drawn around their centre
  const zoom = Math.min(cy.maxZoom(), Math.max(cy.minZoom(), Math.min(
    (cy.width() - 2 * margin) / Math.max(1, x2 - x1),
    (cy.height() - 2 * margin) / Math.max(1, y2 - y1))));
  cy.viewport({ zoom, pan: { x: (cy.width() - zoom * (x1 + x2)) / 2, y: (cy.height() - zoom * (y1 + y2)) / 2 } });
}
