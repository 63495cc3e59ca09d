// The graph explorer: Cytoscape over the tenant's API and graph socket. The modules in
// explorer/ share one state object (explorer/state.js); bi-temporal visibility is
// time.js's visible(). Text from the graph is only ever set as text (textContent,
// canvas labels), never as HTML.

import { state } from './explorer/state.js';
import { status } from './explorer/page.js';
import { cy, WEBGL } from './explorer/graph.js';
import { layout } from './explorer/layout.js';
import { applyTime } from './explorer/time.js';
import { clear, focusFact, loadGraph, merge, seed } from './explorer/elements.js';
import { connect, seenAt } from './explorer/live.js';
import { setup } from './explorer/controls.js';
import { declutter, overlappingLabels } from './explorer/labels.js';

// For tests, benchmarks and the console.
const hook = { cy, state, applyTime, merge, layout, clear, seenAt, webgl: WEBGL, declutter,
  overlappingLabels };
window.kgExplorer = hook;

// The first view: around ?fact=<fact id> or ?seed=<entity id> when the address names one
// (links from the Ask page), else the most connected entities.
async function firstView() {
  const asked = new URLSearchParams(window.location.search);
  if (asked.get('fact')) return focusFact(asked.get('fact'));
  if (asked.get('seed')) return seed(asked.get('seed'));
  try {
    await loadGraph();
    status('Ready');
  } catch (error) {
    status(`Could not load the graph: ${error.message}`);
  }
  return undefined;
}

async function start() {
  setup();
  await firstView();
  connect((socket) => { hook.socket = socket; });
}

start();
