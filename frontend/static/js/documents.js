// The uploads page's document manager (LightRAG WebUI's is the model): every document
// with its versions, status, episodes, facts and model cost. Editors delete one after a
// preview of what would go and what would stay, upload its next version, or retry its
// failed job; viewers see the list only. API errors are shown as their `detail`.

import { formatUsd, usageText, usageTotal } from './cost.js';
import { cell, el, notice } from './dom.js';

const integer = new Intl.NumberFormat('en-US');
const PAGE = 200; // documents listed at most

function count(n, one, many) {
  return `${integer.format(n)} ${n === 1 ? one : many}`;
}

// "3 entities and 12 facts will be removed; 40 entities stay because other documents
// mention them." from the answer of DELETE documents/{id}?dry_run=true.
export function previewSentence(preview) {
  const removed = `${count(preview.entities_deleted, 'entity', 'entities')} and `
    + `${count(preview.facts_deleted, 'fact', 'facts')} will be removed`;
  if (!preview.entities_kept) return `${removed}.`;
  const stay = preview.entities_kept === 1 ? 'stays because other documents mention it'
    : 'stay because other documents mention them';
  return `${removed}; ${count(preview.entities_kept, 'entity', 'entities')} ${stay}.`;
}

// The rest of the preview: passages shared with another document, facts other passages
// support, facts the document had ended that become current again.
export function previewDetails(preview) {
  const passages = count(preview.episodes_deleted, 'passage', 'passages');
  const parts = [preview.episodes_kept
    ? `${passages} will be deleted; ${count(preview.episodes_kept, 'passage', 'passages')}`
      + ` ${preview.episodes_kept === 1 ? 'stays because another document holds it' : 'stay because other documents hold them'} too.`
    : `${passages} will be deleted.`];
  if (preview.facts_kept) {
    parts.push(`${count(preview.facts_kept, 'fact', 'facts')}`
      + ` ${preview.facts_kept === 1 ? 'stays: other passages support it' : 'stay: other passages support them'} too.`);
  }
  if (preview.facts_restored) {
    parts.push(`${count(preview.facts_restored, 'fact', 'facts')} it had ended`
      + ` ${preview.facts_restored === 1 ? 'becomes' : 'become'} current again.`);
  }
  return parts.join(' ');
}

// "Biscuit, kitten" or "Ana, Ben … and 18 more" when the API sent only the first names.
function nameList(names, total) {
  const more = total - names.length;
  return more > 0 ? `${names.join(', ')} … and ${integer.format(more)} more` : names.join(', ');
}

function button(text, label, action, documentId) {
  const node = el('button', text);
  node.type = 'button';
  node.setAttribute('aria-label', label);
  node.dataset.action = action;
  node.dataset.document = documentId;
  return node;
}

function stamp(iso) {
  return iso ? `${iso.slice(0, 16).replace('T', ' ')} UTC` : '';
}

// The version cell: "v2 of 2", opening the history with what each version changed.
function versionCell(doc) {
  const history = el('details', undefined, 'history');
  history.dataset.document = doc.id;
  const versions = doc.versions ?? [];
  history.append(el('summary', `v${doc.version ?? 1} of ${Math.max(versions.length, 1)}`));
  const list = el('ol');
  for (const version of versions) {
    const item = el('li', undefined, version.version === doc.version ? 'current' : '');
    item.append(el('span', `v${version.version} · ${version.file_name} · ${stamp(version.uploaded_at)}`
      + (version.uploaded_by ? ` by ${version.uploaded_by}` : '')));
    item.append(el('span', version.summary ?? 'not ingested yet', 'doc-note'));
    list.append(item);
  }
  history.append(list);
  return history;
}

function costCell(doc) {
  const total = usageTotal(doc.usage ?? []);
  const cost = total.unpriced.length ? 'unknown' : formatUsd(total.cost);
  const node = el('span', total.calls ? `${cost} (${count(total.calls, 'call', 'calls')})` : cost);
  node.title = usageText(doc.usage ?? []);
  return node;
}

function statusCell(doc) {
  const node = el('span', doc.status);
  if (doc.status === 'failed' && doc.error) node.append(el('span', doc.error, 'doc-note error'));
  return node;
}

function nameCell(doc) {
  const node = el('span');
  node.append(el('span', doc.file_name, 'doc-name'), el('span', doc.kind, 'doc-note'));
  const current = (doc.versions ?? []).find((v) => v.version === doc.version);
  if (current?.summary) node.append(el('span', current.summary, 'doc-note'));
  return node;
}

function actionsCell(doc) {
  const node = el('span', undefined, 'actions');
  node.append(
    button('Delete', `Delete ${doc.file_name}`, 'delete', doc.id),
    button('Replace', `Replace ${doc.file_name} with a new version`, 'replace', doc.id),
  );
  if (doc.status === 'failed' && doc.job) node.append(button('Retry', `Retry ${doc.file_name}`, 'retry', doc.id));
  return node;
}

function row(doc, canEdit) {
  const tr = el('tr');
  tr.dataset.document = doc.id;
  tr.append(
    cell(nameCell(doc)), cell(versionCell(doc)), cell(statusCell(doc)),
    cell(integer.format(doc.episode_count ?? doc.chunk_count ?? 0), 'number'),
    cell(doc.fact_count === undefined || doc.fact_count === null ? '' : integer.format(doc.fact_count), 'number'),
    cell(costCell(doc)),
  );
  if (canEdit) tr.append(cell(actionsCell(doc)));
  return tr;
}

// A row of one muted sentence across the table.
function noteRow(text, canEdit) {
  const td = cell(text, 'muted');
  td.colSpan = canEdit ? 7 : 6;
  const tr = el('tr');
  tr.append(td);
  return tr;
}

let closeOpenPanel = null; // closes the deletion panel open now, if any

// The confirmation panel of a deletion: resolves true on Delete, false on Cancel or
// Escape, null when another deletion's panel takes its place.
function confirmDeletion(panel, doc, preview) {
  closeOpenPanel?.(null);
  const title = el('h3', `Delete ${doc.file_name}?`);
  title.id = 'delete-title';
  const sentence = el('p', previewSentence(preview), 'preview-sentence');
  sentence.id = 'delete-sentence';
  const lists = el('dl', undefined, 'preview-names');
  if (preview.entity_names_deleted.length) {
    lists.append(el('dt', 'Removed'),
      el('dd', nameList(preview.entity_names_deleted, preview.entities_deleted), 'names-deleted'));
  }
  if (preview.entity_names_kept.length) {
    lists.append(el('dt', 'Staying'),
      el('dd', nameList(preview.entity_names_kept, preview.entities_kept), 'names-kept'));
  }
  const confirm = button('Delete', `Delete ${doc.file_name} now`, 'confirm-delete', doc.id);
  confirm.id = 'delete-confirm';
  confirm.className = 'danger';
  const cancel = button('Cancel', `Cancel: keep ${doc.file_name}`, 'cancel-delete', doc.id);
  cancel.id = 'delete-cancel';
  panel.replaceChildren(title, sentence, el('p', previewDetails(preview), 'muted'), lists, confirm, ' ', cancel);
  panel.hidden = false;
  cancel.focus(); // the safe choice is the one Enter takes
  return new Promise((resolve) => {
    const listening = new AbortController();
    const done = (answer) => {
      listening.abort();
      closeOpenPanel = null;
      panel.hidden = true;
      panel.replaceChildren();
      resolve(answer);
    };
    closeOpenPanel = done;
    const { signal } = listening;
    confirm.addEventListener('click', () => done(true), { signal });
    cancel.addEventListener('click', () => done(false), { signal });
    panel.addEventListener('keydown', (event) => { if (event.key === 'Escape') done(false); }, { signal });
  });
}

function removedText(name, removed) {
  const parts = `${count(removed.episodes_deleted, 'passage', 'passages')}, `
    + `${count(removed.facts_deleted, 'fact', 'facts')} and `
    + `${count(removed.entities_deleted, 'entity', 'entities')} removed`;
  const restored = removed.facts_restored
    ? `; ${count(removed.facts_restored, 'fact', 'facts')} current again` : '';
  return `${name} deleted: ${parts}${restored}.`;
}

// Starts the manager in `root` (the uploads page) with the page's API client `call`.
// `onQueued(jobId, fileName)` is told of each job it queues (a new version, a retry).
// Returns {refresh, nameOf}: reload the list soon (calls close together load it once);
// the file name of a listed document, by id.
export function documentManager(root, call, { onQueued } = {}) {
  const tbody = root.querySelector('#documents');
  const status = root.querySelector('#documents-status');
  const panel = root.querySelector('#delete-preview');
  const picker = root.querySelector('#replace-file');
  const canEdit = root.dataset.canEdit === 'true';
  const shown = new Map(); // document id -> the row's document
  let replacing = null; // the document whose next version the picker is choosing

  const note = notice(status);

  let rendered = null; // the list as last rendered: an unchanged one is left alone
  function render(docs) {
    const key = JSON.stringify(docs);
    if (key === rendered) return; // (a row rebuilt under the pointer would lose the click)
    rendered = key;
    const open = new Set([...tbody.querySelectorAll('details[open]')].map((d) => d.dataset.document));
    const focused = document.activeElement;
    const focus = tbody.contains(focused) && focused.dataset.action
      ? `[data-action="${focused.dataset.action}"][data-document="${focused.dataset.document}"]` : null;
    shown.clear();
    for (const doc of docs) shown.set(doc.id, doc);
    const rows = docs.length ? docs.map((doc) => row(doc, canEdit)) : [noteRow('No documents yet.', canEdit)];
    if (docs.length === PAGE) {
      rows.push(noteRow(`The newest ${PAGE} documents are shown; GET documents?offset=${PAGE} lists the rest.`, canEdit));
    }
    tbody.replaceChildren(...rows);
    for (const details of tbody.querySelectorAll('details')) details.open = open.has(details.dataset.document);
    if (focus) tbody.querySelector(focus)?.focus();
  }

  let loading = null;
  let again = false;
  function load() {
    if (loading) { again = true; return loading; }
    loading = call(`/documents?limit=${PAGE}`)
      .then(render)
      .catch((error) => note(`The documents could not be loaded: ${error.message}`, true))
      .finally(() => {
        loading = null;
        if (again) { again = false; load(); }
      });
    return loading;
  }

  let timer = null;
  function refresh() {
    if (timer) return;
    timer = setTimeout(() => { timer = null; load(); }, 300);
  }

  async function remove(doc, trigger) {
    note(`Checking what deleting ${doc.file_name} would remove…`);
    let preview;
    try {
      preview = await call(`/documents/${encodeURIComponent(doc.id)}?dry_run=true`, { method: 'DELETE' });
    } catch (error) {
      note(`${doc.file_name}: ${error.message}`, true);
      return;
    }
    note(`Confirm or cancel the deletion of ${doc.file_name} below.`);
    const confirmed = await confirmDeletion(panel, doc, preview);
    if (confirmed === null) return; // another deletion's panel took its place
    if (!confirmed) {
      note(`${doc.file_name} kept: deletion cancelled.`);
      if (trigger.isConnected) trigger.focus();
      return;
    }
    try {
      const removed = await call(`/documents/${encodeURIComponent(doc.id)}`, { method: 'DELETE' });
      note(removedText(doc.file_name, removed));
    } catch (error) {
      note(`${doc.file_name} was not deleted: ${error.message}`, true);
    }
    await load();
    root.querySelector('#documents-title').focus();
  }

  async function replace(doc, file) {
    const form = new FormData();
    form.append('files', file, file.name);
    note(`Uploading ${file.name} as the next version of ${doc.file_name}…`);
    try {
      const queued = await call(`/documents/${encodeURIComponent(doc.id)}/versions`, { method: 'POST', body: form });
      if (queued.duplicate) note(`${file.name} is the same file as the current version of ${doc.file_name}: nothing new to ingest.`);
      else {
        note(`${doc.file_name}: version ${queued.version} queued.`);
        onQueued?.(queued.job_id, doc.file_name);
      }
    } catch (error) {
      note(`${doc.file_name} was not replaced: ${error.message}`, true);
    }
    load();
  }

  async function retry(doc) {
    note(`Retrying ${doc.file_name}…`);
    try {
      await call(`/jobs/${encodeURIComponent(doc.job)}/retry`, { method: 'POST' });
      note(`${doc.file_name}: queued again.`);
      onQueued?.(doc.job, doc.file_name);
    } catch (error) {
      note(`${doc.file_name} could not be retried: ${error.message}`, true);
    }
    load();
  }

  if (canEdit) {
    tbody.addEventListener('click', (event) => {
      const target = event.target.closest('button[data-action]');
      const doc = target && shown.get(target.dataset.document);
      if (!doc) return;
      if (target.dataset.action === 'delete') remove(doc, target);
      if (target.dataset.action === 'retry') retry(doc);
      if (target.dataset.action === 'replace') {
        replacing = doc;
        picker.click();
      }
    });
    picker.addEventListener('change', () => {
      const [file] = picker.files;
      picker.value = '';
      if (file && replacing) replace(replacing, file);
    });
  }

  load();
  return { refresh, nameOf: (id) => shown.get(id)?.file_name };
}
