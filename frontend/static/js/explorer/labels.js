// Names that never overlap. A name keeps the same size on screen at every zoom (its font
// is set against the zoom), and the nodes in view are taken from the most salient down:
// each shows its name when the box of that name, as the screen will draw it, overlaps
// no name already shown; the others are "quiet" (no name until a hover, a selection,
// or a zoom that leaves room for them).

import { state } from './state.js';
import { cy } from './graph.js';

const FONT_PX = 11; // on screen
const LINE_PX = 19; // the name's height with its outline (Cytoscape measures about 17), and more
const GAP_PX = 4; // between a node and its name, and around each name
const MAX_WIDTH_PX = 160; // longer names are cut with an ellipsis (graph.js)

const measure = document.createElement('canvas').getContext('2d');
let widths = new Map();
let measuredAt = null;

// The name's width on screen, as Cytoscape draws it: measured in the font it uses, at
// the size in graph units it sets (FONT_PX / zoom), times the zoom. Text does not scale
// quite linearly with its size, so measuring at 11px alone came out up to 4% narrower
// than drawn; a little is added for what is left.
function textWidth(node, label) {
  const zoom = cy.zoom();
  if (measuredAt !== zoom) {
    widths = new Map();
    measuredAt = zoom;
  }
  if (!widths.has(label)) {
    const style = (name) => node.pstyle(name).strValue;
    // A family of several words must be quoted, or the canvas ignores the whole font
    // and measures in its default 10px.
    const families = style('font-family').split(',').map((f) => f.trim())
      .map((f) => (/\s/.test(f) && !/^["']/.test(f) ? `"${f}"` : f)).join(', ');
    measure.font = `${style('font-style')} ${style('font-weight')} ${FONT_PX / zoom}px ${families}`;
    widths.set(label, Math.min(MAX_WIDTH_PX + 8, measure.measureText(label).width * zoom * 1.06));
  }
  return widths.get(label);
}

// The screen box of a node's name, below the node (text-valign bottom).
export function labelBox(node) {
  const zoom = cy.zoom();
  const p = node.renderedPosition();
  const half = (node.height() * zoom) / 2;
  const width = textWidth(node, String(node.data('label') ?? '')) + 2 * GAP_PX;
  const top = p.y + half;
  return { x1: p.x - width / 2, x2: p.x + width / 2, y1: top, y2: top + GAP_PX + LINE_PX };
}

function overlaps(a, b) {
  return a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
}

// Boxes by grid cell, so that each new box is tested against its neighbours only.
function placer(cell) {
  const grid = new Map();
  const cells = (box, visit) => {
    for (let i = Math.floor(box.x1 / cell); i <= Math.floor(box.x2 / cell); i += 1) {
      for (let j = Math.floor(box.y1 / cell); j <= Math.floor(box.y2 / cell); j += 1) visit(`${i},${j}`);
    }
  };
  return (box) => {
    let free = true;
    cells(box, (key) => { if (free && (grid.get(key) ?? []).some((other) => overlaps(box, other))) free = false; });
    if (free) cells(box, (key) => { const list = grid.get(key) ?? []; list.push(box); grid.set(key, list); });
    return free;
  };
}

function salience(node) { return Number(node.data('salience') ?? 0); }

// Which names to show, for the nodes drawn now.
export function declutter() {
  const zoom = cy.zoom();
  cy.batch(() => {
    // Set on the nodes themselves (a rule added to the style sheet at each zoom would
    // pile up), and only on those not yet sized for this zoom: this runs after every
    // slider step too.
    const unsized = cy.nodes().filter((n) => n.scratch('kgLabelZoom') !== zoom);
    unsized.style({ 'font-size': FONT_PX / zoom, 'text-margin-y': GAP_PX / zoom,
      'text-outline-width': 2 / zoom, 'text-max-width': MAX_WIDTH_PX / zoom });
    unsized.forEach((n) => { n.scratch('kgLabelZoom', zoom); });
    const drawn = cy.nodes().filter((n) => !n.hasClass('gone') && n.visible());
    const candidates = state.large ? drawn.filter('.named') : drawn;
    const ranked = candidates.toArray().sort((a, b) => salience(b) - salience(a)
      || String(a.data('label')).localeCompare(String(b.data('label'))));
    const free = placer(120);
    for (const node of ranked) node.toggleClass('quiet', !free(labelBox(node)));
    drawn.not(candidates).addClass('quiet');
  });
}

let pending = null;
export function declutterSoon(delay = 80) {
  clearTimeout(pending);
  pending = setTimeout(declutter, delay);
}

// Overlapping names as the browser draws them: pairs of names drawn (by the style in
// force, whatever the classes say) whose boxes, as Cytoscape measures them, intersect
// (tests and benchmarks read it).
export function overlappingLabels() {
  const shown = cy.nodes().filter((n) => n.visible() && n.pstyle('label').strValue);
  const boxes = shown.map((n) => [n.id(), n.renderedBoundingBox({ includeNodes: false, includeEdges: false,
    includeLabels: true })]);
  const pairs = [];
  for (let i = 0; i < boxes.length; i += 1) {
    for (let j = i + 1; j < boxes.length; j += 1) {
      const [a, boxA] = boxes[i];
      const [b, boxB] = boxes[j];
      if (boxA.w > 0 && boxB.w > 0 && overlaps(boxA, boxB)) pairs.push([a, b]);
    }
  }
  return pairs;
}
