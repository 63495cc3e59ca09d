// The side panel: an entity's summary, facts by relation and the passages that mention
// it; a fact's four times and its history. Text from the graph is set as text only.

import { ms, NEVER } from '../time.js';
import { state } from './state.js';
import { $, api, fmt, text } from './dom.js';
import { cy } from './graph.js';

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

export async function showEntity(id) {
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

export async function showFact(id) {
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
