// The two time sliders: the moment in view (valid time, and system time "as known at"),
// which facts and entities that shows, playback, the histogram and the counts.
//
// Every fact on screen carries its four timestamps, so the sliders filter in the browser
// with no request per step; which fact is visible is ../time.js's visible().

import { NEVER, visible } from '../time.js';
import { state } from './state.js';
import { $ } from '../dom.js';
import { fmt } from './page.js';
import { cy } from './graph.js';
import { declutterSoon } from './labels.js';

export const STEPS = 1000;
const DAY = 86400000;

// When the tenant's facts begin and end (their valid times, both ends): null when it has
// none loaded.
export function factExtent() {
  let [low, high] = [Infinity, -Infinity];
  for (const fact of state.facts.values()) {
    for (const moment of [fact.valid_at, fact.invalid_at]) {
      if (Number.isFinite(moment)) {
        low = Math.min(low, moment);
        high = Math.max(high, moment);
      }
    }
  }
  return Number.isFinite(low) ? { low, high } : null;
}

// The valid-time slider spans the tenant's facts, with a margin of 3% (a day at least) on
// each side; its last step is now, live. Without facts: the last day.
export function fitSpan() {
  const extent = factExtent();
  const now = Date.now();
  if (!extent) {
    state.span = { start: now - DAY, end: now };
    return;
  }
  const margin = Math.max(DAY, (extent.high - extent.low) * 0.03);
  state.span = { start: extent.low - margin, end: Math.max(extent.high + margin, extent.low + DAY) };
}

// A folded leaf topic (fold.js) is drawn inside its fold, not on its own.
function folded(id) { return Boolean(state.nodes.get(id)?.folded); }

function sliderTime(value, span = state.span) {
  if (Number(value) >= STEPS) return NEVER;
  const { start, end } = span;
  return start + (end - start) * (Number(value) / STEPS);
}

function factState(fact, asOf, knownAt, history) {
  if (visible(fact, asOf, knownAt)) return 'on';
  if (fact.created_at > knownAt) return 'off'; // not known yet: never drawn
  return history ? 'past' : 'off';
}

// The moment in view and the filters: what factShown judges against.
export function viewpoint() {
  const now = Date.now();
  return {
    asOf: state.asOf === NEVER ? now : state.asOf,
    knownAt: state.knownAt === NEVER ? now : state.knownAt,
    history: $('show-history').checked,
    relation: $('relation-filter')?.value || '',
  };
}

export function factShown(id, fact, view) {
  let next = factState(fact, view.asOf, view.knownAt, view.history);
  if (next === 'off' && state.justEnded.has(id)) next = 'past';
  if (next === 'off' && state.diff?.has(id)) next = 'on'; // a comparison draws its facts
  if (fact.hidden || (view.relation && fact.relation !== view.relation)) next = 'off';
  return next;
}

// Show what was true at `asOf` as known at `knownAt`. Plain arrays are walked; only
// elements whose state changed are touched in Cytoscape, and facts shown for the first
// time are added to it then.
export function applyTime() {
  const view = viewpoint();
  const live = new Set();
  const linked = new Set();
  let later = false;
  cy.batch(() => {
    const first = [];
    for (const [id, fact] of state.facts) {
      let next = factShown(id, fact, view);
      linked.add(fact.source);
      linked.add(fact.target);
      if (next !== 'off') {
        live.add(fact.source);
        live.add(fact.target);
      }
      if (folded(fact.source) || folded(fact.target)) next = 'off';
      if (next !== 'off' && !fact.ele) first.push([fact, next]);
      else if (!fact.ele) later = true;
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
      // Known once recorded, or once a fact about it is (a fact's system time starts when
      // its episode arrived, which may be before its entities were written).
      const known = node.created_at <= view.knownAt || live.has(id);
      const drawn = known && !node.hidden && (live.has(id) || node.pinned || !linked.has(id));
      setShown(id, node.ele, drawn && !node.folded ? 'on' : 'off');
    }
    // A fold is drawn while its entity is and one of its topics would be.
    for (const [id, fold] of state.folds) {
      const drawn = state.shown.get(fold.hub) === 'on' && [...fold.members].some((m) => live.has(m));
      cy.getElementById(id).toggleClass('gone', !drawn);
    }
  });
  if (later) addHiddenWhenIdle();
  const { asOf, knownAt } = view;
  $('valid-time-label').textContent = state.asOf === NEVER ? 'now (live)' : fmt(asOf);
  $('known-time-label').textContent = state.knownAt === NEVER ? 'now'
    : new Date(knownAt).toISOString().slice(0, 19).replace('T', ' ');
  counts();
  declutterSoon();
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
      if (!fact.ele && state.nodes.has(fact.source) && state.nodes.has(fact.target)
        && !folded(fact.source) && !folded(fact.target)) {
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

export function setShown(id, element, next) {
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

function counts() {
  let folded = 0;
  for (const fold of state.folds.values()) folded += fold.members.size;
  $('counts').textContent = `${state.visible.nodes} entities · ${state.visible.edges} facts shown`
    + (folded ? ` · ${folded} topics folded` : '');
}

export function drawHistogram() {
  const canvas = $('histogram');
  const width = canvas.clientWidth || 600;
  canvas.width = width;
  const bins = new Array(100).fill(0);
  const { start, end } = state.span;
  for (const fact of state.facts.values()) {
    if (fact.valid_at === NEVER) continue;
    const bin = Math.min(99, Math.max(0, Math.floor(((fact.valid_at - start) / (end - start || 1)) * 100)));
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

export function onSlider() {
  state.justEnded.clear();
  state.asOf = sliderTime($('valid-time').value);
  state.knownAt = sliderTime($('known-time').value, state.knownSpan);
  applyTime();
}

export function play() {
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
    slider.dispatchEvent(new Event('input')); // the graph and the panel follow
    if (Number(slider.value) >= STEPS) play();
  }, 100);
}
