// Placing the nodes: fcose in the browser for small graphs and for new elements around
// placed ones; a full layout of a large graph is computed by the server.

import { state } from './state.js';
import { api, status } from './dom.js';
import { cy, FORCE_LAYOUT } from './graph.js';

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

export function layout(elements, { fit = false } = {}) {
  const target = elements ?? cy.elements();
  if (target.empty()) return;
  if (!elements && target.nodes().length > SERVER_LAYOUT) {
    serverLayout(target, fit);
    return;
  }
  const options = { name: FORCE_LAYOUT, animate: false, fit, randomize: !elements, nodeRepulsion: 6000,
    idealEdgeLength: 90, quality: target.nodes().length > 500 ? 'draft' : 'default' };
  if (elements) {
    // Lay out the new elements around the ones already placed, which stay put.
    const fixed = target.neighborhood().nodes().not(elements);
    options.fixedNodeConstraint = fixed.map((n) => ({ nodeId: n.id(), position: n.position() }));
    target.union(fixed).layout(options).run();
  } else {
    target.layout(options).run();
  }
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
