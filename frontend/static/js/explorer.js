// The graph explorer: Cytoscape over the tenant's API and graph socket.
//
// Every fact on screen carries its four timestamps, so the two time sliders filter in
// the browser with no request per step. Live changes are applied as diffs and
// highlighted; after a dropped socket the server replays what was missed. Text from
// the graph is only ever set as text (textContent, canvas labels), never as HTML.

import { apiClient, statusMessage } from './api.js';
import { connectSocket } from './socket.js';
import { NEVER, ms, visible } from './time.js';

const root = document.getElementById('explorer');
const api = apiClient(root.dataset.api, statusMessage); // errors read "404: Not found"
const SOCKET = root.dataset.socket;
const $ = (id) => document.getElementById(id);

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#e67e22', '#17becf',
  '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];
const FRESH_MS = 3000;
const STEPS = 1000;

const state = {
  // id -> {ele, data, source, target, relation, valid, invalid, created, expired, hidden};
  // `ele` stays null until the fact is first shown: a fact hidden at the moment in view
  // (ended, not yet known, filtered out) costs Cytoscape nothing until then. The rest
  // are added while the browser is idle, so that scrubbing later adds nothing.
  facts: new Map(),
  nodes: new Map(), // id -> {ele, created, hidden, pinned}
  typeColours: new Map(),
  communityColours: new Map(),
  span: { start: Date.now() - 86400000, end: Date.now() }, // valid time
  knownSpan: { start: Date.now() - 3600000, end: Date.now() }, // system time
  asOf: NEVER, // NEVER: now, following live updates
  knownAt: NEVER,
  shown: new Map(), // element id -> 'on' | 'past' | 'off'
  visible: { nodes: 0, edges: 0 }, // how many are shown (kept by setShown)
  justEnded: new Set(), // facts ended by a live change: drawn as history until the view changes
  lastVs: null, // the change-feed versionstamp of the last change (a decimal string): where a replay starts
  playing: null,
  placing: 0, // server layouts in flight (until the frame after they are applied)
};

// --- helpers -----------------------------------------------------------------------

function text(tag, content, className) {
  const element = document.createElement(tag);
  if (content !== undefined) element.textContent = content;
  if (className) element.className = className;
  return element;
}

function status(message) { $('status').textContent = message; }

function toast(key, message, kind = 'info') {
  let item = document.querySelector(`[data-toast="${CSS.escape(key)}"]`);
  if (!item) {
    item = text('div', '', `toast ${kind}`);
    item.dataset.toast = key;
    $('toasts').append(item);
  }
  item.className = `toast ${kind}`;
  item.textContent = message;
  clearTimeout(item.timer);
  item.timer = setTimeout(() => item.remove(), kind === 'error' ? 15000 : 5000);
}

function colourOf(type) {
  if (!state.typeColours.has(type)) {
    state.typeColours.set(type, PALETTE[state.typeColours.size % PALETTE.length]);
    drawLegend();
  }
  return state.typeColours.get(type);
}

function drawLegend() {
  const legend = $('legend');
  legend.replaceChildren(...[...state.typeColours].map(([type, colour]) => {
    const item = text('li', type || 'Entity');
    const swatch = text('span', '', 'swatch');
    swatch.style.background = colour;
    item.prepend(swatch);
    return item;
  }));
}

function fmt(moment) {
  return moment === NEVER ? 'now' : new Date(moment).toISOString().slice(0, 10);
}

// --- the graph ---------------------------------------------------------------------

if (window.cytoscapeFcose) window.cytoscape.use(window.cytoscapeFcose);
const FORCE_LAYOUT = window.cytoscapeFcose ? 'fcose' : 'cose';

// WebGL draws large graphs much faster (Cytoscape 3.31+) on a graphics card; emulated
// in software (SwiftShader, llvmpipe) it is slower than the canvas. ?webgl=0 or 1 overrides.
function webglOnHardware() {
  try {
    const gl = document.createElement('canvas').getContext('webgl');
    if (!gl) return false;
    const info = gl.getExtension('WEBGL_debug_renderer_info');
    const renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
    gl.getExtension('WEBGL_lose_context')?.loseContext();
    return !/swiftshader|llvmpipe|softpipe|software|basic render/i.test(renderer);
  } catch {
    return false;
  }
}
const webglParam = new URLSearchParams(window.location.search).get('webgl');
const WEBGL = webglParam === null
  ? Number(root.dataset.entities || 0) > 2000 && webglOnHardware()
  : webglParam === '1';

const LARGE = 2000; // elements: beyond this, edges are drawn the cheap way

const cy = window.cytoscape({
  container: $('graph'),
  renderer: { name: 'canvas', webgl: WEBGL },
  hideEdgesOnViewport: true, // while panning and zooming a large graph
  textureOnViewport: true,
  wheelSensitivity: 0.3,
  minZoom: 0.05,
  maxZoom: 4,
  style: [
    { selector: 'node', style: {
      'background-color': 'data(colour)', label: 'data(label)', 'font-size': 11,
      'text-valign': 'bottom', 'text-margin-y': 3, color: '#1b1f24',
      'text-outline-color': '#fff', 'text-outline-width': 2, width: 'mapData(degree, 0, 30, 14, 40)',
      height: 'mapData(degree, 0, 30, 14, 40)', 'min-zoomed-font-size': 7 } },
    { selector: 'edge', style: {
      width: 'mapData(confidence, 0, 1, 1, 5)', 'line-color': '#8c959f', 'curve-style': 'bezier',
      'target-arrow-shape': 'triangle', 'target-arrow-color': '#8c959f', 'arrow-scale': 0.8,
      label: '', 'font-size': 9, color: '#57606a', 'text-rotation': 'autorotate',
      'text-background-color': '#fff', 'text-background-opacity': 0.8 } },
    { selector: 'edge.labelled, edge:selected', style: { label: 'data(relation)' } },
    { selector: 'edge.past', style: {
      'line-style': 'dashed', 'line-color': '#c4c9cf', 'target-arrow-color': '#c4c9cf', opacity: 0.8 } },
    { selector: '.gone', style: { display: 'none' } },
    { selector: 'node.by-community', style: { 'background-color': 'data(communityColour)' } },
    { selector: 'node.pinned', style: { 'border-width': 3, 'border-color': '#14213d' } },
    { selector: ':selected', style: { 'overlay-color': '#0b5fff', 'overlay-opacity': 0.18 } },
    { selector: '.fresh', style: { 'underlay-color': '#ffb000', 'underlay-opacity': 0.55, 'underlay-padding': 6 } },
  ],
});
// For tests, benchmarks and the console.
window.kgExplorer = { cy, state, applyTime, merge, layout, clear, seenAt: new Map(), webgl: WEBGL };

function nodeData(row) {
  const id = row.id;
  const known = state.nodes.get(id);
  const community = row.community ?? known?.community ?? null;
  const entry = known ?? { ele: null, created: 0 };
  const type = row.type ?? row.entity_type ?? 'Entity';
  // Unknown creation time (a placeholder for a fact's end): treat as always known.
  if (row.created_at !== undefined) entry.created = row.created_at ? ms(row.created_at) : 0;
  entry.community = community;
  state.nodes.set(id, entry);
  return {
    id,
    label: row.label ?? row.name ?? id,
    type,
    summary: row.summary ?? '',
    degree: row.degree ?? 0,
    colour: colourOf(type),
    community,
    communityColour: community ? communityColour(community) : '#c4c9cf',
  };
}

function communityColour(id) {
  if (!state.communityColours.has(id)) {
    state.communityColours.set(id, PALETTE[state.communityColours.size % PALETTE.length]);
  }
  return state.communityColours.get(id);
}

function edgeData(row) {
  const fact = state.facts.get(row.id) ?? { ele: null };
  Object.assign(fact, {
    source: row.source, target: row.target, relation: row.relation,
    valid: ms(row.valid_at), invalid: ms(row.invalid_at),
    created: ms(row.created_at), expired: ms(row.expired_at),
  });
  state.facts.set(row.id, fact);
  if (fact.valid !== NEVER && fact.valid < state.span.start) state.span.start = fact.valid;
  if (fact.created !== NEVER && fact.created < state.knownSpan.start) state.knownSpan.start = fact.created;
  fact.data = {
    id: row.id, source: row.source, target: row.target, relation: row.relation,
    fact: row.fact, confidence: row.confidence ?? 1, edge_type: row.edge_type,
  };
  return fact;
}

// Add nodes and edges (rows from the API or from live changes) in one go; existing ones
// are updated in place. Returns the new elements.
function merge(nodes, edges) {
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
  return added;
}

// Large graphs draw straight edges without arrows (Cytoscape's "haystack"), several
// times cheaper than curved ones with arrowheads; small ones get the full style.
function tune(size) {
  const large = size > LARGE;
  if (large === state.large) return;
  state.large = large;
  // Names are measured for every node that has one, so a large graph shows them only
  // on the nodes in view once zoomed in (see the zoom handler).
  cy.style()
    .selector('edge').style(large
      ? { 'curve-style': 'haystack', 'target-arrow-shape': 'none', 'haystack-radius': 0, width: 1 }
      : { 'curve-style': 'bezier', 'target-arrow-shape': 'triangle',
        width: 'mapData(confidence, 0, 1, 1, 5)' })
    .selector('node').style(large
      ? { label: '', width: 12, height: 12 }
      : { label: 'data(label)', width: 'mapData(degree, 0, 30, 14, 40)',
        height: 'mapData(degree, 0, 30, 14, 40)' })
    .selector('node.named, node:selected').style({ label: 'data(label)' })
    .update();
}

let naming = null;
function nameNodesInView() { // large graphs: names on the nodes in view when zoomed in
  clearTimeout(naming);
  naming = setTimeout(() => {
    const extent = cy.extent();
    const inView = cy.zoom() > 0.6
      ? cy.nodes().filter((n) => {
        const p = n.position();
        return p.x > extent.x1 && p.x < extent.x2 && p.y > extent.y1 && p.y < extent.y2;
      })
      : cy.collection();
    cy.batch(() => {
      cy.nodes('.named').not(inView).removeClass('named');
      inView.addClass('named');
    });
  }, 150);
}

function clear() {
  cy.elements().remove();
  for (const map of [state.nodes, state.facts, state.shown]) map.clear();
  state.visible = { nodes: 0, edges: 0 };
}

function forget(id) {
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

function nearNeighbour(id, edges) {
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

function layout(elements, { fit = false } = {}) {
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

// --- time --------------------------------------------------------------------------

function sliderTime(value, span = state.span) {
  if (Number(value) >= STEPS) return NEVER;
  const { start, end } = span;
  return start + (end - start) * (Number(value) / STEPS);
}

// A fact's four times under the names visible() reads (NEVER for an open end).
function bitemporal(fact) {
  return { valid_at: fact.valid, invalid_at: fact.invalid, created_at: fact.created, expired_at: fact.expired };
}

function factState(fact, asOf, knownAt, history) {
  if (visible(bitemporal(fact), asOf, knownAt)) return 'on';
  if (fact.created > knownAt) return 'off'; // not known yet: never drawn
  return history ? 'past' : 'off';
}

// The moment in view and the filters: what factShown judges against.
function viewpoint() {
  const now = Date.now();
  return {
    asOf: state.asOf === NEVER ? now : state.asOf,
    knownAt: state.knownAt === NEVER ? now : state.knownAt,
    history: $('show-history').checked,
    relation: $('relation-filter')?.value || '',
  };
}

function factShown(id, fact, view) {
  let next = factState(fact, view.asOf, view.knownAt, view.history);
  if (next === 'off' && state.justEnded.has(id)) next = 'past';
  if (fact.hidden || (view.relation && fact.relation !== view.relation)) next = 'off';
  return next;
}

// Show what was true at `asOf` as known at `knownAt`. Plain arrays are walked; only
// elements whose state changed are touched in Cytoscape, and facts shown for the first
// time are added to it then.
function applyTime() {
  const view = viewpoint();
  const live = new Set();
  const linked = new Set();
  let later = false;
  cy.batch(() => {
    const first = [];
    for (const [id, fact] of state.facts) {
      const next = factShown(id, fact, view);
      linked.add(fact.source);
      linked.add(fact.target);
      if (next !== 'off') {
        live.add(fact.source);
        live.add(fact.target);
        if (!fact.ele) first.push([fact, next]);
      } else if (!fact.ele) {
        later = true;
      }
      if (fact.ele || next === 'off') setShown(id, fact.ele, next);
    }
    if (first.length) {
      cy.add(first.map(([fact]) => ({ group: 'edges', data: fact.data }))).forEach((ele, i) => {
        const [fact, next] = first[i];
        fact.ele = ele;
        setShown(ele.id(), ele, next);
      });
    }
    for (const [id, node] of state.nodes) {
      if (!node.ele) continue;
      const known = node.created <= view.knownAt;
      const next = known && !node.hidden && (live.has(id) || node.pinned || !linked.has(id)) ? 'on' : 'off';
      setShown(id, node.ele, next);
    }
  });
  if (later) addHiddenWhenIdle();
  const { asOf, knownAt } = view;
  $('valid-time-label').textContent = state.asOf === NEVER ? 'now (live)' : fmt(asOf);
  $('known-time-label').textContent = state.knownAt === NEVER ? 'now'
    : new Date(knownAt).toISOString().slice(0, 19).replace('T', ' ');
  counts();
}

// Add the facts not shown yet to Cytoscape, hidden, a slice at a time while the
// browser is idle: styling an element costs tens of microseconds, paid now rather than
// on the slider step that first shows it.
let addingHidden = null;
function addHiddenWhenIdle() {
  if (addingHidden !== null) return;
  const idle = window.requestIdleCallback ?? ((fn) => setTimeout(fn, 50));
  addingHidden = idle(() => {
    addingHidden = null;
    if (state.placing) { // the first drawing after a layout comes first
      setTimeout(addHiddenWhenIdle, 250);
      return;
    }
    const slice = [];
    for (const fact of state.facts.values()) {
      if (!fact.ele && state.nodes.has(fact.source) && state.nodes.has(fact.target)) {
        slice.push({ group: 'edges', data: fact.data, classes: 'gone' });
        if (slice.length === 1500) break;
      }
    }
    if (!slice.length) return;
    const view = viewpoint();
    cy.batch(() => cy.add(slice).forEach((ele) => {
      const fact = state.facts.get(ele.id());
      fact.ele = ele;
      state.shown.set(ele.id(), 'off');
      setShown(ele.id(), ele, factShown(ele.id(), fact, view));
    }));
    // Style is computed lazily, by the next frame: compute it here, in the idle slice.
    for (const { data } of slice) state.facts.get(data.id).ele.pstyle('display');
    addHiddenWhenIdle();
  }, { timeout: 1000 });
}

function setShown(id, element, next) {
  const previous = state.shown.get(id);
  if (previous === next) return;
  state.shown.set(id, next);
  const group = state.nodes.has(id) ? 'nodes' : 'edges';
  if (previous !== undefined && previous !== 'off') state.visible[group] -= 1;
  if (next !== 'off') state.visible[group] += 1;
  if (!element || (previous === undefined && next === 'on')) return; // no class to touch
  element.toggleClass('gone', next === 'off');
  element.toggleClass('past', next === 'past');
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

function counts() {
  $('counts').textContent = `${state.visible.nodes} entities · ${state.visible.edges} facts shown`;
}

function drawHistogram() {
  const canvas = $('histogram');
  const width = canvas.clientWidth || 600;
  canvas.width = width;
  const bins = new Array(100).fill(0);
  const { start, end } = state.span;
  for (const fact of state.facts.values()) {
    if (fact.valid === NEVER) continue;
    const bin = Math.min(99, Math.max(0, Math.floor(((fact.valid - start) / (end - start || 1)) * 100)));
    bins[bin] += 1;
  }
  const top = Math.max(1, ...bins);
  const context = canvas.getContext('2d');
  context.clearRect(0, 0, width, canvas.height);
  context.fillStyle = '#9fb3c8';
  bins.forEach((count, i) => {
    const h = (count / top) * canvas.height;
    context.fillRect((i * width) / 100, canvas.height - h, width / 100 - 1, h);
  });
}

function onSlider() {
  state.justEnded.clear();
  state.asOf = sliderTime($('valid-time').value);
  state.knownAt = sliderTime($('known-time').value, state.knownSpan);
  applyTime();
}

function play() {
  if (state.playing) {
    clearInterval(state.playing);
    state.playing = null;
    $('play').textContent = '▶ Play';
    $('play').setAttribute('aria-pressed', 'false');
    return;
  }
  const slider = $('valid-time');
  if (Number(slider.value) >= STEPS) slider.value = 0;
  $('play').textContent = '❚❚ Pause';
  $('play').setAttribute('aria-pressed', 'true');
  state.playing = setInterval(() => {
    slider.value = Math.min(STEPS, Number(slider.value) + Number($('speed').value));
    onSlider();
    if (Number(slider.value) >= STEPS) play();
  }, 100);
}

// --- loading -----------------------------------------------------------------------

async function loadGraph(params = 'limit=150') {
  const body = await api(`/graph?${params}`);
  const nodes = body.nodes.map((n) => n.data);
  const edges = body.edges.map((e) => e.data);
  const first = cy.elements().empty();
  const added = merge(nodes, edges);
  state.span.end = state.knownSpan.end = Date.now();
  drawHistogram();
  applyTime();
  if (first) layout(null, { fit: true });
  else if (added.nonempty()) layout(added);
  return added;
}

async function seed(id) {
  status('Loading…');
  try {
    await loadGraph(`seed=${encodeURIComponent(id)}&depth=${$('depth').value}&limit=60`);
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

// --- details -----------------------------------------------------------------------

function validityBar(fact) {
  const { start } = state.span;
  const end = Date.now();
  const bar = text('span', '', 'validity');
  const fill = text('span', '', 'fill');
  const from = Math.max(0, (fact.valid - start) / (end - start));
  const to = Math.min(1, ((fact.invalid === NEVER ? end : fact.invalid) - start) / (end - start));
  fill.style.left = `${(from * 100).toFixed(1)}%`;
  fill.style.width = `${Math.max(1, (to - from) * 100).toFixed(1)}%`;
  if (fact.expired !== NEVER) fill.classList.add('retired');
  bar.append(fill);
  bar.title = `valid ${fmt(fact.valid)} → ${fmt(fact.invalid)}; known ${fmt(fact.created)} → ${fmt(fact.expired)}`;
  return bar;
}

async function showEntity(id) {
  const panel = $('detail');
  const node = cy.getElementById(id);
  panel.replaceChildren(text('h2', node.data('label') ?? id), text('p', node.data('type') ?? '', 'muted'));
  try {
    const [entity, passages] = await Promise.all([
      api(`/entities/${encodeURIComponent(id)}`),
      api(`/entities/${encodeURIComponent(id)}/episodes?limit=10`),
    ]);
    if (entity.summary) panel.append(text('p', entity.summary));
    const aliases = (entity.aliases ?? []).map((a) => (typeof a === 'string' ? a : a.name)).filter(Boolean);
    if (aliases.length) panel.append(text('p', `Also known as: ${aliases.join(', ')}`, 'muted'));
    const byRelation = new Map();
    node.connectedEdges().forEach((edge) => {
      const list = byRelation.get(edge.data('relation')) ?? [];
      list.push(edge);
      byRelation.set(edge.data('relation'), list);
    });
    for (const [relation, edges] of byRelation) {
      panel.append(text('h3', relation));
      const list = text('ul', '', 'facts');
      for (const edge of edges) {
        const item = text('li');
        const link = text('button', edge.data('fact'), 'linkish');
        link.type = 'button';
        link.addEventListener('click', () => showFact(edge.id()));
        item.append(link, validityBar(state.facts.get(edge.id())));
        list.append(item);
      }
      panel.append(list);
    }
    if (passages.length) {
      panel.append(text('h3', 'Mentioned in'));
      const list = text('ul', '', 'passages');
      for (const passage of passages) {
        const item = text('li');
        item.append(text('span', `${fmt(ms(passage.valid_at))} · ${passage.source ?? ''}`, 'muted'),
          text('blockquote', passage.content));
        list.append(item);
      }
      panel.append(list);
    }
  } catch (error) {
    panel.append(text('p', `Could not load the details: ${error.message}`, 'error'));
  }
}

async function showFact(id) {
  const panel = $('detail');
  const edge = cy.getElementById(id);
  panel.replaceChildren(text('h2', edge.data('relation') ?? 'Fact'), text('p', edge.data('fact') ?? ''));
  const fact = state.facts.get(id);
  if (fact) {
    const times = text('dl', '', 'times');
    for (const [label, value] of [['valid from', fact.valid], ['valid until', fact.invalid],
      ['known from', fact.created], ['retired', fact.expired]]) {
      times.append(text('dt', label), text('dd', value === NEVER ? '—' : new Date(value).toISOString()));
    }
    panel.append(times, validityBar(fact));
  }
  try {
    const chain = await api(`/facts/${encodeURIComponent(id)}/history`);
    panel.append(text('h3', 'History'));
    const list = text('ol', '', 'chain');
    for (const step of chain) {
      const item = text('li', `${step.fact} (${fmt(ms(step.valid_at))} → ${fmt(ms(step.invalid_at))})`);
      if (step.id === id) item.classList.add('current');
      list.append(item);
    }
    panel.append(list);
  } catch (error) {
    panel.append(text('p', `Could not load the history: ${error.message}`, 'error'));
  }
}

// --- live --------------------------------------------------------------------------

function highlight(element) {
  if (!element) return;
  element.addClass('fresh');
  setTimeout(() => element.removeClass('fresh'), FRESH_MS);
}

const pendingNames = new Set();

async function fetchNode(id) {
  if (pendingNames.has(id)) return;
  pendingNames.add(id);
  try {
    const entity = await api(`/entities/${encodeURIComponent(id)}`);
    merge([{ ...entity, id }], []);
  } catch { /* gone meanwhile */ } finally { pendingNames.delete(id); }
}

function applyChange(change) {
  const data = change.data || {};
  window.kgExplorer.seenAt.set(change.record, Date.now());
  if (change.table === 'job') { jobToast(data); return; }
  if (change.action === 'DELETE' || (change.table === 'entity' && data.merged_into)) {
    forget(change.record);
    return;
  }
  if (change.table === 'entity') {
    merge([{ ...data, id: change.record }], []);
    highlight(state.nodes.get(change.record).ele);
  } else if (change.table === 'relates_to') {
    const row = { ...data, id: change.record, source: data.in, target: data.out };
    const wasOn = state.shown.get(change.record) === 'on';
    for (const end of [row.source, row.target]) {
      if (end && !state.nodes.has(end)) {
        merge([{ id: end, name: '…', entity_type: 'Entity' }], []);
        fetchNode(end);
      }
    }
    const added = merge([], [row]);
    if (wasOn && data.expired_at) state.justEnded.add(change.record);
    if (added.nonempty()) {
      layout(added.connectedNodes().union(added));
      if (cy.nodes().length <= 40) cy.fit(cy.elements().not('.gone'), 60); // a small graph: all in view
    }
    highlight(state.facts.get(change.record).ele);
  }
}

let applyQueued = false;
function scheduleApply() {
  if (applyQueued) return;
  applyQueued = true;
  requestAnimationFrame(() => {
    applyQueued = false;
    state.span.end = state.knownSpan.end = Date.now();
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

function connect() {
  connectSocket(SOCKET, {
    since: () => state.lastVs,
    onSocket: (socket) => { window.kgExplorer.socket = socket; },
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

// --- search box --------------------------------------------------------------------

function setupSearch() {
  const input = $('entity-search');
  const list = $('suggestions');
  let timer = null;
  let active = -1;
  const choose = (item) => {
    list.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    input.value = item.dataset.name;
    seed(item.dataset.id);
  };
  const mark = (index) => {
    const items = [...list.children];
    active = Math.max(-1, Math.min(items.length - 1, index));
    items.forEach((item, i) => item.setAttribute('aria-selected', String(i === active)));
    if (active >= 0) input.setAttribute('aria-activedescendant', items[active].id);
  };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    const q = input.value.trim();
    if (!q) { list.hidden = true; return; }
    timer = setTimeout(async () => {
      try {
        const found = await api(`/entities?q=${encodeURIComponent(q)}&limit=8`);
        list.replaceChildren(...found.map((entity, i) => {
          const item = text('li', entity.name);
          item.append(text('span', ` ${entity.entity_type ?? ''}`, 'muted'));
          item.id = `suggestion-${i}`;
          item.setAttribute('role', 'option');
          item.dataset.id = entity.id;
          item.dataset.name = entity.name;
          item.addEventListener('mousedown', (event) => { event.preventDefault(); choose(item); });
          return item;
        }));
        list.hidden = found.length === 0;
        input.setAttribute('aria-expanded', String(found.length > 0));
        mark(found.length ? 0 : -1);
      } catch (error) {
        status(error.message);
      }
    }, 150);
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'ArrowDown') { mark(active + 1); event.preventDefault(); }
    else if (event.key === 'ArrowUp') { mark(active - 1); event.preventDefault(); }
    else if (event.key === 'Enter' && active >= 0 && !list.hidden) { choose(list.children[active]); event.preventDefault(); }
    else if (event.key === 'Escape') { list.hidden = true; input.setAttribute('aria-expanded', 'false'); }
  });
}

// --- controls ----------------------------------------------------------------------

function selectedNode() { return cy.nodes(':selected').first(); }

async function expand() {
  const node = selectedNode();
  if (node.nonempty()) await seed(node.id());
}

function hideSelected() {
  cy.elements(':selected').forEach((ele) => {
    const entry = state.nodes.get(ele.id()) ?? state.facts.get(ele.id());
    if (entry) entry.hidden = true;
  }).unselect();
  applyTime();
}

function pinSelected() {
  cy.nodes(':selected').forEach((node) => {
    const entry = state.nodes.get(node.id());
    entry.pinned = !entry.pinned;
    node.toggleClass('pinned', entry.pinned);
    if (entry.pinned) node.lock(); else node.unlock();
  });
  applyTime();
}

function exportPng() {
  const link = document.createElement('a');
  link.href = cy.png({ full: true, scale: 2, bg: '#ffffff' });
  link.download = 'graph.png';
  link.click();
}

function setupRelationFilter() {
  const select = document.createElement('select');
  select.id = 'relation-filter';
  select.setAttribute('aria-label', 'Relation shown');
  select.append(new Option('all relations', ''));
  const refresh = () => {
    const current = select.value;
    const relations = [...new Set([...state.facts.values()].map((f) => f.relation))].sort();
    select.replaceChildren(new Option('all relations', ''), ...relations.map((r) => new Option(r, r)));
    select.value = relations.includes(current) ? current : '';
  };
  select.addEventListener('focus', refresh);
  select.addEventListener('change', applyTime);
  $('show-history').closest('label').before(select);
}

function setup() {
  setupSearch();
  setupRelationFilter();
  $('fit').addEventListener('click', () => cy.fit(cy.elements().not('.gone'), 30));
  $('relayout').addEventListener('click', () => layout(null, { fit: true }));
  $('expand').addEventListener('click', expand);
  $('hide').addEventListener('click', hideSelected);
  $('pin').addEventListener('click', pinSelected);
  $('export').addEventListener('click', exportPng);
  $('show-history').addEventListener('change', () => { state.justEnded.clear(); applyTime(); });
  $('by-community').addEventListener('change', () => {
    cy.nodes().toggleClass('by-community', $('by-community').checked);
  });
  $('valid-time').addEventListener('input', onSlider);
  $('known-time').addEventListener('input', onSlider);
  $('play').addEventListener('click', play);
  $('now').addEventListener('click', () => {
    $('valid-time').value = STEPS;
    $('known-time').value = STEPS;
    onSlider();
  });
  cy.on('tap', 'node', (event) => showEntity(event.target.id()));
  cy.on('tap', 'edge', (event) => showFact(event.target.id()));
  cy.on('dbltap', 'node', (event) => seed(event.target.id()));
  cy.on('mouseover', 'edge', (event) => event.target.addClass('labelled'));
  cy.on('mouseout', 'edge', (event) => event.target.removeClass('labelled'));
  cy.on('zoom', () => {
    const labelled = cy.zoom() > 1.6;
    if (labelled !== state.labelled) {
      state.labelled = labelled;
      cy.edges().toggleClass('labelled', labelled);
    }
    if (state.large) nameNodesInView();
  });
  cy.on('pan', () => { if (state.large) nameNodesInView(); });
  document.addEventListener('keydown', (event) => {
    const typing = ['INPUT', 'SELECT', 'TEXTAREA'].includes(event.target.tagName) && event.target.type !== 'range';
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const actions = { '/': () => $('entity-search').focus(), f: () => $('fit').click(),
      l: () => $('relayout').click(), e: expand, h: hideSelected, p: pinSelected,
      ' ': play, Escape: () => cy.elements().unselect() };
    if (actions[event.key]) { actions[event.key](); event.preventDefault(); }
  });
  window.addEventListener('resize', drawHistogram);
}

async function start() {
  setup();
  try {
    await loadGraph();
    status('Ready');
  } catch (error) {
    status(`Could not load the graph: ${error.message}`);
  }
  connect();
}

start();
