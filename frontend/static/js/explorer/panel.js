// The side panel: an entity's summary, its facts by relation (one row per fact, as known at
// the chosen system time) and the passages that mention it; a fact's four times and its
// history. Text from the graph is set as text only.

import { ms, NEVER } from '../time.js';
import { state } from './state.js';
import { $, el } from '../dom.js';
import { api, fmt } from './page.js';
import { cy } from './graph.js';

function validityBar(fact) {
  const { start } = state.span;
  const end = Date.now();
  const bar = el('span', '', 'validity');
  const fill = el('span', '', 'fill');
  const from = Math.max(0, (fact.valid_at - start) / (end - start));
  const to = Math.min(1, ((fact.invalid_at === NEVER ? end : fact.invalid_at) - start) / (end - start));
  fill.style.left = `${(from * 100).toFixed(1)}%`;
  fill.style.width = `${Math.max(1, (to - from) * 100).toFixed(1)}%`;
  if (fact.expired_at !== NEVER) fill.classList.add('retired');
  bar.append(fill);
  bar.title = `valid ${fmt(fact.valid_at)} → ${fmt(fact.invalid_at)}; known ${fmt(fact.created_at)} → ${fmt(fact.expired_at)}`;
  return bar;
}

// A fact's versions: the stored fact, and each revision of it (the same statement with
// its validity closed, `revision_of` the one before). They share the chain's first fact.
function lineageOf(id) {
  const seen = new Set([id]);
  let root = id;
  for (let up = state.facts.get(id)?.revision_of; up && state.facts.has(up) && !seen.has(up);
    up = state.facts.get(up).revision_of) {
    seen.add(up);
    root = up;
  }
  return root;
}

// The version of a lineage that was believed at system time `knownAt`: the one whose
// known interval holds it, else (none yet, or retracted then) none.
function believedAt(versions, knownAt) {
  return versions.find(([, fact]) => fact.created_at <= knownAt && knownAt < fact.expired_at) ?? null;
}

// An entity's facts by relation, one row per fact lineage: its version as known at the
// chosen system time, with its validity bar, marked when at the chosen valid time it is
// not yet true or already over; the earlier versions open from the row.
function factRows(entity) {
  const knownAt = state.knownAt === NEVER ? Date.now() : state.knownAt;
  const lineages = new Map();
  for (const [id, fact] of state.facts) {
    if (fact.source !== entity && fact.target !== entity) continue;
    const root = lineageOf(id);
    const versions = lineages.get(root) ?? [];
    versions.push([id, fact]);
    lineages.set(root, versions);
  }
  const byRelation = new Map();
  for (const versions of lineages.values()) {
    const row = believedAt(versions, knownAt);
    if (!row) continue;
    versions.sort(([, a], [, b]) => a.created_at - b.created_at);
    const list = byRelation.get(row[1].relation) ?? [];
    list.push([row, versions]);
    byRelation.set(row[1].relation, list);
  }
  const section = el('div', '', 'entity-facts');
  for (const [relation, rows] of byRelation) {
    section.append(el('h3', relation));
    const list = el('ul', '', 'facts');
    for (const [[id, fact], versions] of rows) list.append(factRow(id, fact, versions));
    section.append(list);
  }
  if (!byRelation.size) section.append(el('p', 'No facts known at this moment.', 'muted'));
  if (state.asOf !== NEVER) section.prepend(el('p', `As of ${fmt(state.asOf)}:`, 'muted as-of'));
  return section;
}

// Where a fact stands at the valid time in view: not yet true, true, or over.
function standing(fact) {
  const asOf = state.asOf === NEVER ? Date.now() : state.asOf;
  if (fact.valid_at > asOf) return ['not-yet', `not yet valid: from ${fmt(fact.valid_at)}`];
  if (fact.invalid_at <= asOf) return ['ended', `ended ${fmt(fact.invalid_at)}`];
  return ['holds', ''];
}

function factRow(id, fact, versions) {
  const item = el('li');
  item.dataset.fact = id;
  const [where, said] = standing(fact);
  item.dataset.standing = where;
  item.classList.add(where);
  const link = el('button', fact.data.fact, 'linkish');
  link.type = 'button';
  link.addEventListener('click', () => showFact(id));
  item.append(link);
  if (said) item.append(el('span', ` (${said})`, 'standing muted'));
  item.append(validityBar(fact));
  if (versions.length > 1) {
    const more = el('details', '', 'versions');
    more.append(el('summary', `${versions.length} versions`));
    const list = el('ol');
    for (const [versionId, version] of versions) {
      const step = el('li');
      const open = el('button', `${fmt(version.valid_at)} → ${fmt(version.invalid_at)}`, 'linkish');
      open.type = 'button';
      open.addEventListener('click', () => showFact(versionId));
      step.append(open, el('span', ` known ${fmt(version.created_at)} → ${fmt(version.expired_at)}`, 'muted'));
      if (versionId === id) step.classList.add('current');
      list.append(step);
    }
    more.append(list);
    item.append(more);
  }
  return item;
}

// What a passage says, for a person: a JSON episode (a fact added through the API, or
// structured data) reads as the statements it holds when it holds any, else as it is.
function passageText(passage) {
  if (passage.source !== 'json') return passage.content;
  try {
    const facts = JSON.parse(passage.content)?.facts;
    const said = Array.isArray(facts) ? facts.map((f) => f?.fact).filter((f) => typeof f === 'string') : [];
    return said.length ? said.join(' ') : passage.content;
  } catch {
    return passage.content;
  }
}

// What the panel shows, so that moving a slider can redraw an entity's rows.
let shownEntity = null;

export function refreshPanel() {
  if (!shownEntity) return;
  const rows = $('detail').querySelector('.entity-facts');
  if (rows) rows.replaceWith(factRows(shownEntity));
}

export async function showEntity(id) {
  shownEntity = id;
  const panel = $('detail');
  const node = cy.getElementById(id);
  panel.replaceChildren(el('h2', node.data('label') ?? id), el('p', node.data('type') ?? '', 'muted'));
  try {
    const [entity, passages] = await Promise.all([
      api(`/entities/${encodeURIComponent(id)}`),
      api(`/entities/${encodeURIComponent(id)}/episodes?limit=10`),
    ]);
    if (shownEntity !== id) return;
    if (entity.summary) panel.append(el('p', entity.summary));
    const aliases = (entity.aliases ?? []).map((a) => (typeof a === 'string' ? a : a.name)).filter(Boolean);
    if (aliases.length) panel.append(el('p', `Also known as: ${aliases.join(', ')}`, 'muted'));
    panel.append(factRows(id));
    if (passages.length) {
      panel.append(el('h3', 'Mentioned in'));
      const list = el('ul', '', 'passages');
      for (const passage of passages) {
        const item = el('li');
        const where = passage.source_description || passage.source || '';
        item.append(el('span', `${fmt(ms(passage.valid_at))} · ${where}`, 'muted'),
          el('blockquote', passageText(passage)));
        list.append(item);
      }
      panel.append(list);
    }
  } catch (error) {
    panel.append(el('p', `Could not load the details: ${error.message}`, 'error'));
  }
}

export async function showFact(id) {
  shownEntity = null;
  const panel = $('detail');
  const edge = cy.getElementById(id);
  panel.replaceChildren(el('h2', edge.data('relation') ?? 'Fact'), el('p', edge.data('fact') ?? ''));
  const fact = state.facts.get(id);
  if (fact) {
    const times = el('dl', '', 'times');
    for (const [label, value] of [['valid from', fact.valid_at], ['valid until', fact.invalid_at],
      ['known from', fact.created_at], ['retired', fact.expired_at]]) {
      times.append(el('dt', label), el('dd', value === NEVER ? '—' : new Date(value).toISOString()));
    }
    panel.append(times, validityBar(fact));
  }
  try {
    const chain = await api(`/facts/${encodeURIComponent(id)}/history`);
    panel.append(el('h3', 'History'));
    const list = el('ol', '', 'chain');
    for (const step of chain) {
      const item = el('li', `${step.fact} (valid ${fmt(ms(step.valid_at))} → ${fmt(ms(step.invalid_at))};`
        + ` known ${fmt(ms(step.created_at))} → ${fmt(ms(step.expired_at))})`);
      if (step.id === id) item.classList.add('current');
      list.append(item);
    }
    panel.append(list);
  } catch (error) {
    panel.append(el('p', `Could not load the history: ${error.message}`, 'error'));
  }
}
