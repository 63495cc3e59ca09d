// The Ask page: a question, and the moments to read the graph at, sent to POST ask; its
// NDJSON answer is read as it arrives: the sources first (a card per passage, labelled
// [S1], [S2], ...; the facts used, each opening the explorer on that fact; the entities,
// each opening the explorer around it), then the answer's text, its [Sn] citations
// linked to the cards. The last questions come from GET questions; choosing one fills
// the form again. Text from the graph or the model is only ever set as text.

import { apiClient, csrf, readableMessage } from './api.js';
import { $, el, notice } from './dom.js';
import { inputMoment, inputValue } from './time.js';

const root = $('ask');
const call = apiClient(root.dataset.api);
const MOMENTS = [['as-of', 'as_of'], ['known-at', 'known_at']];
const CITATION = /\[(S\d+)\]/g;
let answerText = '';
let asking = null; // the AbortController of the answer being read

const note = notice($('ask-status'));

function day(stamp) { return stamp ? stamp.slice(0, 10) : 'now'; }

function explorerLink(param, id, text) {
  const link = el('a', text);
  link.href = `${root.dataset.explore}?${param}=${encodeURIComponent(id)}`;
  return link;
}

function passageCard(passage) {
  const card = el('li', undefined, 'source');
  card.id = `source-${passage.ref}`;
  card.tabIndex = -1; // a citation's link moves the focus here
  const where = passage.document ?? (passage.name || 'A passage');
  const head = el('p', undefined, 'source-head');
  head.append(el('strong', `[${passage.ref}]`), ` ${where} · ${day(passage.said_at)}`);
  card.append(head, ...passage.excerpts.map((excerpt) => el('blockquote', excerpt)));
  return card;
}

function factItem(fact) {
  const item = el('li');
  item.append(explorerLink('fact', fact.id, fact.fact),
    el('span', ` valid ${day(fact.valid_at)} → ${day(fact.invalid_at)}`, 'muted'));
  return item;
}

function entityItem(entity) {
  const item = el('li');
  item.append(explorerLink('seed', entity.id, entity.name));
  if (entity.entity_type) item.append(el('span', ` ${entity.entity_type}`, 'muted'));
  return item;
}

function listOr(id, items, empty) {
  $(id).replaceChildren(...(items.length ? items : [el('li', empty, 'muted')]));
}

function showSources(line) {
  listOr('passages', line.passages.map(passageCard), 'No passage quoted.');
  listOr('facts', line.facts.map(factItem), 'No fact used.');
  listOr('entities', line.entities.map(entityItem), 'No entity named.');
  $('sources-card').hidden = false;
}

// The answer so far, each [Sn] that names a card a link to it.
function showAnswer() {
  const parts = [];
  let last = 0;
  for (const match of answerText.matchAll(CITATION)) {
    parts.push(answerText.slice(last, match.index));
    const card = $(`source-${match[1]}`);
    if (card) {
      const link = el('a', match[0], 'cite');
      link.href = `#${card.id}`;
      parts.push(link);
    } else {
      parts.push(match[0]);
    }
    last = match.index + match[0].length;
  }
  parts.push(answerText.slice(last));
  $('answer').replaceChildren(...parts);
}

function answerNote(message, isError) {
  $('answer-note').textContent = message;
  $('answer-note').className = isError ? 'error' : 'muted';
  $('answer-note').hidden = false;
}

const HANDLERS = {
  sources: (line) => { showSources(line); note('Writing the answer…'); },
  delta: (line) => { answerText += line.text; showAnswer(); },
  done: () => note('Answered.'),
  answer_unavailable: (line) => { answerNote(line.detail, false); note('Sources only.'); },
  error: (line) => { answerNote(line.detail, true); note('The answer stopped.', true); },
};

// The response body's lines, each parsed, as they arrive.
async function* ndjson(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    buffered += decoder.decode(value, { stream: !done });
    const lines = buffered.split('\n');
    buffered = done ? '' : lines.pop();
    for (const line of lines) if (line.trim()) yield JSON.parse(line);
    if (done) return;
  }
}

function formBody() {
  const query = $('question').value.trim();
  if (!query) throw new Error('Write a question first.');
  const body = { query };
  for (const [id, key] of MOMENTS) {
    if (!$(id).value) continue;
    body[key] = inputMoment($(id).value);
    if (!body[key]) throw new Error(`${$(id).labels[0].textContent}: give a date and time.`);
  }
  return body;
}

function clearAnswer() {
  answerText = '';
  $('answer').replaceChildren();
  $('answer-note').hidden = true;
  $('answer-card').hidden = false;
  $('sources-card').hidden = true;
}

async function send(body, signal) {
  const response = await fetch(`${root.dataset.api}/ask`, {
    method: 'POST',
    credentials: 'same-origin',
    signal,
    headers: { Accept: 'application/x-ndjson', 'Content-Type': 'application/json', 'X-CSRFToken': csrf() },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    throw new Error(readableMessage(response.status, await response.json().catch(() => ({}))));
  }
  return response;
}

async function ask(event) {
  event.preventDefault();
  let body;
  try {
    body = formBody();
  } catch (error) {
    note(error.message, true);
    return;
  }
  asking?.abort();
  const current = new AbortController();
  asking = current;
  clearAnswer();
  note('Reading the graph…');
  $('answer').setAttribute('aria-busy', 'true');
  try {
    for await (const line of ndjson(await send(body, current.signal))) HANDLERS[line.type]?.(line);
  } catch (error) {
    if (error.name !== 'AbortError') note(error.message, true);
  } finally {
    $('answer').setAttribute('aria-busy', 'false');
    if (asking === current) showHistory();
  }
}

function moments(question) {
  const said = [];
  if (question.as_of) said.push(`as of ${question.as_of.slice(0, 19).replace('T', ' ')}`);
  if (question.known_at) said.push(`as known at ${question.known_at.slice(0, 19).replace('T', ' ')}`);
  return said.length ? ` (${said.join(', ')})` : '';
}

function historyItem(question) {
  const item = el('li');
  const again = el('button', question.text, 'linkish');
  again.type = 'button';
  again.title = 'Put this question in the form again';
  again.addEventListener('click', () => {
    $('question').value = question.text;
    $('as-of').value = question.as_of ? inputValue(question.as_of) : '';
    $('known-at').value = question.known_at ? inputValue(question.known_at) : '';
    $('question').focus();
  });
  item.append(again, el('span', moments(question), 'muted'));
  return item;
}

async function showHistory() {
  try {
    listOr('history', (await call('/questions')).map(historyItem), 'No questions yet.');
  } catch (error) {
    listOr('history', [], `Could not load your questions: ${error.message}`);
  }
}

$('ask-form').addEventListener('submit', ask);
$('question').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    $('ask-form').requestSubmit();
  }
});
showHistory();
