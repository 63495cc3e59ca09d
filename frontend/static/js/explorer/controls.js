// The toolbar, the keyboard shortcuts and the graph's pointer events.

import { state } from './state.js';
import { $, el } from '../dom.js';
import { api, root, status } from './page.js';
import { cy, nameNodesInView } from './graph.js';
import { layout, settle } from './layout.js';
import { declutterSoon } from './labels.js';
import { isFold, unfold } from './fold.js';
import { applyTime, drawHistogram, onSlider, play, STEPS } from './time.js';
import { seed } from './elements.js';
import { refreshPanel, showEntity, showFact } from './panel.js';
import { setupSearch } from './search.js';
import { setupDiff, toggleCompare } from './diff.js';
import { setupCommunities } from './communities.js';

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

// Pin: the node stays where it is, and for a curator the pin is kept, so that the
// entity is in the first view of everyone's explorer from then on.
function pinSelected() {
  cy.nodes(':selected').filter((node) => state.nodes.has(node.id())).forEach((node) => {
    const entry = state.nodes.get(node.id());
    entry.pinned = !entry.pinned;
    node.toggleClass('pinned', entry.pinned);
    if (entry.pinned) node.lock(); else node.unlock();
    if (root.dataset.canCurate === 'true') keepPin(node.id(), entry.pinned);
  });
  applyTime();
}

async function keepPin(id, pinned) {
  try {
    await api(`/entities/${encodeURIComponent(id)}/pin`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ pinned }) });
    cy.getElementById(id).data('pinned', pinned);
    status(pinned ? 'Pinned: shown first from now on.' : 'Unpinned.');
  } catch (error) {
    status(`Could not keep the pin: ${error.message}`);
  }
}

function openFold(id) {
  const opened = unfold(id);
  applyTime();
  settle(opened);
}

function exportPng() {
  const link = el('a');
  link.href = cy.png({ full: true, scale: 2, bg: '#ffffff' });
  link.download = 'graph.png';
  link.click();
}

function setupRelationFilter() {
  const select = el('select');
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

export function setup() {
  setupSearch();
  setupRelationFilter();
  setupDiff();
  $('fit').addEventListener('click', () => cy.fit(cy.elements().not('.gone'), 30));
  $('relayout').addEventListener('click', () => layout(null, { fit: true }));
  $('expand').addEventListener('click', expand);
  $('hide').addEventListener('click', hideSelected);
  $('pin').addEventListener('click', pinSelected);
  $('export').addEventListener('click', exportPng);
  $('show-history').addEventListener('change', () => { state.justEnded.clear(); applyTime(); });
  setupCommunities();
  $('valid-time').addEventListener('input', onSlider);
  $('valid-time').addEventListener('input', refreshPanel);
  $('known-time').addEventListener('input', onSlider);
  $('known-time').addEventListener('input', refreshPanel);
  $('play').addEventListener('click', play);
  $('now').addEventListener('click', () => {
    if (state.playing) play();
    $('valid-time').value = STEPS;
    $('known-time').value = STEPS;
    onSlider();
    refreshPanel();
  });
  cy.on('tap', 'node', (event) => {
    if (isFold(event.target.id())) openFold(event.target.id());
    else showEntity(event.target.id());
  });
  cy.on('tap', 'edge', (event) => { if (!event.target.hasClass('fold')) showFact(event.target.id()); });
  cy.on('dbltap', 'node', (event) => { if (!isFold(event.target.id())) seed(event.target.id()); });
  cy.on('mouseover', 'node', (event) => event.target.addClass('hover'));
  cy.on('mouseout', 'node', (event) => event.target.removeClass('hover'));
  cy.on('mouseover', 'edge', (event) => event.target.addClass('labelled'));
  cy.on('mouseout', 'edge', (event) => event.target.removeClass('labelled'));
  cy.on('zoom', () => {
    const labelled = cy.zoom() > 1.6;
    if (labelled !== state.labelled) {
      state.labelled = labelled;
      cy.edges().toggleClass('labelled', labelled);
    }
    if (state.large) nameNodesInView();
    declutterSoon(150);
  });
  cy.on('pan', () => { if (state.large) nameNodesInView(); });
  document.addEventListener('keydown', (event) => {
    const typing = ['INPUT', 'SELECT', 'TEXTAREA'].includes(event.target.tagName) && event.target.type !== 'range';
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const actions = { '/': () => $('entity-search').focus(), f: () => $('fit').click(),
      l: () => $('relayout').click(), e: expand, h: hideSelected, p: pinSelected, c: toggleCompare,
      ' ': play, Escape: () => cy.elements().unselect() };
    if (actions[event.key]) { actions[event.key](); event.preventDefault(); }
  });
  window.addEventListener('resize', drawHistogram);
}
