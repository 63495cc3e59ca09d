// The Cytoscape instance and how it draws: the styles, colours by type (colours.js) and
// community, the legend, and the cheaper drawing of large graphs (names only on the
// nodes in view).

import { state } from './state.js';
import { $, el } from '../dom.js';
import { root } from './page.js';
import { COMMUNITY_PALETTE, typeColour } from './colours.js';

export function colourOf(type) {
  if (!state.typeColours.has(type)) {
    state.typeColours.set(type, typeColour(type));
    drawLegend();
  }
  return state.typeColours.get(type);
}

function drawLegend() {
  const legend = $('legend');
  const types = [...state.typeColours].sort(([a], [b]) => a.localeCompare(b));
  legend.replaceChildren(...types.map(([type, colour]) => {
    const item = el('li', type || 'Entity');
    item.dataset.type = type;
    item.dataset.colour = colour;
    const swatch = el('span', '', 'swatch');
    swatch.style.background = colour;
    item.prepend(swatch);
    return item;
  }));
}

if (window.cytoscapeFcose) window.cytoscape.use(window.cytoscapeFcose);
export const FORCE_LAYOUT = window.cytoscapeFcose ? 'fcose' : 'cose';

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
export const WEBGL = webglParam === null
  ? Number(root.dataset.entities || 0) > 2000 && webglOnHardware()
  : webglParam === '1';

const LARGE = 2000; // elements: beyond this, edges are drawn the cheap way
// Names that would overlap a more salient one wait for a zoom or a hover (labels.js).
// Rules later in the sheet win, so tune() appends these again after its own.
const QUIET = [
  { selector: 'node.quiet', style: { label: '' } },
  { selector: 'node.quiet.hover, node.quiet:selected', style: { label: 'data(label)', 'z-index': 10 } },
];
const FOLD_EDGE = { 'line-style': 'dotted', 'target-arrow-shape': 'none', width: 1.5, 'curve-style': 'straight' };

export const cy = window.cytoscape({
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
      'text-outline-color': '#fff', 'text-outline-width': 2, width: 'mapData(salience, 0, 16, 14, 40)',
      height: 'mapData(salience, 0, 16, 14, 40)', 'text-wrap': 'ellipsis', 'text-max-width': 160 } },
    ...QUIET,
    // A fold of one entity's leaf topics (fold.js): a click opens it.
    { selector: 'node.fold', style: { shape: 'round-rectangle', 'background-color': '#eef1f4',
      'border-width': 1, 'border-color': '#8c959f', 'border-style': 'dashed', width: 22, height: 16,
      color: '#57606a', 'font-style': 'italic' } },
    { selector: 'edge.fold', style: FOLD_EDGE },
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
    // A comparison (explorer/diff.js): added green, ended red, changed amber.
    { selector: 'edge.diff-added, edge.diff-ended, edge.diff-changed', style: {
      width: 4, 'line-style': 'solid', opacity: 1, label: 'data(relation)' } },
    { selector: 'node.diff-added, node.diff-ended, node.diff-changed', style: { 'border-width': 4 } },
    { selector: '.diff-added', style: { 'line-color': '#2ca02c', 'target-arrow-color': '#2ca02c', 'border-color': '#2ca02c' } },
    { selector: '.diff-ended', style: { 'line-color': '#d62728', 'target-arrow-color': '#d62728', 'border-color': '#d62728' } },
    { selector: '.diff-changed', style: { 'line-color': '#e69f00', 'target-arrow-color': '#e69f00', 'border-color': '#e69f00' } },
  ],
});

export function communityColour(id) {
  if (!state.communityColours.has(id)) {
    state.communityColours.set(id, COMMUNITY_PALETTE[state.communityColours.size % COMMUNITY_PALETTE.length]);
  }
  return state.communityColours.get(id);
}

// Large graphs draw straight edges without arrows (Cytoscape's "haystack"), several
// times cheaper than curved ones with arrowheads; small ones get the full style.
export function tune(size) {
  const large = size > LARGE;
  if (large === state.large) return;
  state.large = large;
  // Names are measured for every node that has one, so a large graph shows them only
  // on the nodes in view once zoomed in (see the zoom handler).
  const sheet = cy.style();
  sheet
    .selector('edge').style(large
      ? { 'curve-style': 'haystack', 'target-arrow-shape': 'none', 'haystack-radius': 0, width: 1 }
      : { 'curve-style': 'bezier', 'target-arrow-shape': 'triangle',
        width: 'mapData(confidence, 0, 1, 1, 5)' })
    .selector('node').style(large
      ? { label: '', width: 12, height: 12 }
      : { label: 'data(label)', width: 'mapData(salience, 0, 16, 14, 40)',
        height: 'mapData(salience, 0, 16, 14, 40)' })
    .selector('node.named, node:selected').style({ label: 'data(label)' })
    .selector('edge.fold').style(FOLD_EDGE);
  QUIET.forEach(({ selector, style }) => sheet.selector(selector).style(style));
  sheet.update();
}

let naming = null;
export function nameNodesInView() { // large graphs: names on the nodes in view when zoomed in
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
