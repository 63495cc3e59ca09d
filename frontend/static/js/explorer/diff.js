// Compare two moments: the bar that picks an axis and two moments, the API's diff
// (GET graph/diff), its facts highlighted on the graph (added green, ended red, changed
// amber, with their entities) and listed in the side panel with a CSV export. While a
// diff is shown its facts are drawn whatever the sliders say (state.diff, which
// time.js's factShown reads); clearing it gives the sliders the graph back. Text from
// the graph is set as text only.

import { inputMoment, inputValue, NEVER } from '../time.js';
import { state } from './state.js';
import { $, el } from '../dom.js';
import { api, root, status } from './page.js';
import { cy } from './graph.js';
import { merge } from './elements.js';
import { layout } from './layout.js';
import { applyTime, factExtent } from './time.js';
import { showFact } from './panel.js';

const KINDS = [['added', 'Added'], ['ended', 'Ended'], ['changed', 'Changed']];
const CLASSES = KINDS.map(([kind]) => `diff-${kind}`).join(' ');
const MARKED = KINDS.map(([kind]) => `.diff-${kind}`).join(', ');
const AXIS_NAMES = { valid: 'Valid time', known: 'As known at' };

// <input type=datetime-local> holds UTC here (the explorer's times are all UTC).
function readInput(input) { return inputMoment(input.value); }

// The span of an axis: the tenant's facts in valid time; from the first fact recorded
// to now in system time.
function axisSpan(axis) {
  if (axis === 'known') return { low: state.knownSpan.start, high: Date.now() };
  return factExtent() ?? { low: state.span.start, high: Date.now() };
}

// The moments a comparison opens with: where the axis's slider is, compared with the
// end of the span; at "now", the first half of the tenant's span against the second
// (its middle against its end).
function defaultMoments(axis) {
  const { low, high } = axisSpan(axis);
  const end = Math.min(Date.now(), high);
  const moment = axis === 'known' ? state.knownAt : state.asOf;
  if (moment !== NEVER && moment < end) return [moment, end];
  return [low + (end - low) / 2, end];
}

function openBar() {
  const bar = $('diff-bar');
  const opening = bar.hidden;
  bar.hidden = !opening;
  $('compare').setAttribute('aria-expanded', String(opening));
  if (!opening) return;
  const [from, to] = defaultMoments($('diff-axis').value);
  $('diff-from').value = inputValue(from);
  $('diff-to').value = inputValue(to);
  $('diff-from').focus();
}

function query(limit) {
  const from = readInput($('diff-from'));
  const to = readInput($('diff-to'));
  if (!from || !to) return null;
  return new URLSearchParams({ from, to, axis: $('diff-axis').value, limit: String(limit) });
}

async function runDiff(event) {
  event.preventDefault();
  const params = query(500);
  if (!params) {
    status('Pick both moments to compare (date and time, UTC).');
    return;
  }
  status('Comparing…');
  try {
    const diff = await api(`/graph/diff?${params}`);
    highlight(diff);
    listChanges(diff, params);
    status(`${diff.totals.added} added · ${diff.totals.ended} ended · ${diff.totals.changed} changed`);
  } catch (error) {
    status(`Could not compare: ${error.message}`);
  }
}

function versionsOf(diff) {
  const rows = [];
  for (const fact of diff.added) rows.push(['added', fact]);
  for (const fact of diff.ended) rows.push(['ended', fact]);
  for (const change of diff.changed) rows.push(['changed', change.before], ['changed', change.after]);
  return rows;
}

// Draw the diff's facts (adding those not loaded yet, with their ends) and mark them.
function highlight(diff) {
  clearHighlight();
  const rows = versionsOf(diff);
  state.diff = new Map(rows.map(([kind, fact]) => [fact.id, kind]));
  const nodes = new Map();
  for (const [, fact] of rows) {
    for (const [id, name] of [[fact.source, fact.source_name], [fact.target, fact.target_name]]) {
      if (!state.nodes.has(id)) nodes.set(id, { id, name: name ?? id });
    }
  }
  const added = merge([...nodes.values()], rows.map(([, fact]) => fact));
  applyTime();
  if (added.nonempty()) layout(added);
  cy.batch(() => {
    for (const [kind, fact] of rows) {
      const edge = cy.getElementById(fact.id);
      edge.addClass(`diff-${kind}`);
      edge.connectedNodes().addClass(`diff-${kind}`);
    }
  });
  const marked = cy.elements(MARKED);
  if (marked.nonempty()) cy.animate({ fit: { eles: marked, padding: 50 } }, { duration: 250 });
}

function clearHighlight() {
  cy.elements(MARKED).removeClass(CLASSES);
  state.diff = null;
}

function clearDiff() {
  clearHighlight();
  applyTime();
  const list = $('detail').querySelector('.diff');
  if (list) list.replaceChildren(el('p', 'Comparison cleared.', 'muted'));
  status('Ready');
}

function describe(fact) {
  const until = fact.invalid_at ? fact.invalid_at.slice(0, 10) : 'now';
  return `${fact.source_name ?? fact.source} ${fact.relation} ${fact.target_name ?? fact.target}`
    + ` · valid ${fact.valid_at.slice(0, 10)} → ${until}`;
}

function row(fact, extra) {
  const item = el('li');
  item.dataset.fact = fact.id;
  const open = el('button', fact.fact, 'linkish');
  open.type = 'button';
  open.addEventListener('click', () => {
    cy.elements().unselect();
    cy.getElementById(fact.id).select();
    showFact(fact.id);
  });
  item.append(open, el('span', describe(fact), 'muted'));
  if (extra) item.append(extra);
  return item;
}

function changeNote(change) {
  const was = change.fields.includes('fact') ? `was: ${change.before.fact}` : describe(change.before);
  return el('span', `${change.fields.join(', ')} changed; ${was}`, 'was');
}

// The panel's list: each kind with its count, a row per fact, and the CSV export.
function listChanges(diff, params) {
  const panel = $('detail');
  const section = el('div', '', 'diff');
  const from = diff.from.slice(0, 19).replace('T', ' ');
  const to = diff.to.slice(0, 19).replace('T', ' ');
  section.append(el('h2', 'Changes'),
    el('p', `${AXIS_NAMES[diff.axis]}: ${from} → ${to} (UTC)`, 'muted'));
  const csv = el('a', 'Export CSV', 'export-csv');
  csv.id = 'diff-csv';
  const all = new URLSearchParams(params);
  all.set('limit', '5000');
  csv.href = `${root.dataset.api}/graph/diff.csv?${all}`;
  csv.download = '';
  section.append(csv);
  for (const [kind, title] of KINDS) {
    const rows = kind === 'changed' ? diff.changed : diff[kind];
    section.append(el('h3', `${title} (${diff.totals[kind]})`, `diff-${kind}`));
    const list = el('ul', '', `diff-list diff-${kind}`);
    for (const entry of rows) {
      list.append(kind === 'changed' ? row(entry.after, changeNote(entry)) : row(entry));
    }
    if (!rows.length) list.append(el('li', 'none', 'muted'));
    section.append(list);
  }
  if (diff.truncated) section.append(el('p', 'Only the first 500 of each kind are listed; the CSV holds up to 5,000.', 'muted'));
  panel.replaceChildren(section);
}

export function setupDiff() {
  $('compare').addEventListener('click', openBar);
  $('diff-bar').addEventListener('submit', runDiff);
  $('diff-clear').addEventListener('click', clearDiff);
  $('diff-axis').addEventListener('change', () => {
    const [from, to] = defaultMoments($('diff-axis').value);
    $('diff-from').value = inputValue(from);
    $('diff-to').value = inputValue(to);
  });
  $('diff-from-slider').addEventListener('click', () => {
    const moment = $('diff-axis').value === 'known' ? state.knownAt : state.asOf;
    $('diff-from').value = inputValue(moment === NEVER ? Date.now() : moment);
  });
}

export { openBar as toggleCompare };
