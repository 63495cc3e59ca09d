// The uploads page: drop files or paste text, then follow every job's progress live;
// the documents ingested are managed in documents.js. Errors from the API are shown as
// the person-readable `detail` they carry.

import { apiClient } from './api.js';
import { confirmEstimate, renderMonths, usageText } from './cost.js';
import { documentManager } from './documents.js';
import { $, cell, el, notice } from './dom.js';
import { connectSocket } from './socket.js';

const root = $('uploads');
const call = apiClient(root.dataset.api); // errors read as the API's `detail`
const rows = new Map(); // job id -> <tr>
const names = new Map(); // job id -> what it ingests

function render(job) {
  const id = String(job.id);
  let row = rows.get(id);
  if (!row) {
    row = el('tr');
    row.dataset.job = id;
    rows.set(id, row);
    $('jobs').prepend(row);
  }
  const bar = el('progress');
  bar.max = Math.max(1, job.total ?? 0);
  bar.value = job.progress ?? 0;
  bar.setAttribute('aria-label', `progress of ${names.get(id) ?? id}`);
  const progress = el('span');
  progress.append(bar, el('span', ` ${job.progress ?? 0}/${job.total ?? 0}`));
  const details = el('span');
  const failures = (job.failures ?? []).map((f) => f.error ?? JSON.stringify(f));
  const extractor = job.result?.extractor ? `extracted by ${job.result.extractor}` : '';
  details.textContent = [extractor, job.error, ...failures, ...(job.notes ?? [])]
    .filter(Boolean).join(' · ');
  if ((job.status === 'failed' || job.status === 'paused') && root.querySelector('#drop')) {
    const retry = el('button', 'Retry');
    retry.type = 'button';
    retry.addEventListener('click', async () => {
      try {
        await call(`/jobs/${encodeURIComponent(id)}/retry`, { method: 'POST' });
        refresh(id);
      } catch (error) { details.textContent = error.message; }
    });
    details.append(' ', retry);
  }
  if (job.file_name && !names.has(id)) names.set(id, job.file_name); // live updates carry no name
  const what = names.get(id) ?? documents.nameOf(job.document) ?? job.document ?? job.episode ?? job.kind;
  const usage = cell(usageText(job.usage));
  usage.className = 'usage';
  row.replaceChildren(cell(what), cell(job.status), cell(progress), usage, cell(details));
  if (job.status === 'completed' || job.status === 'failed') loadMonths();
}

const note = notice($('upload-status'));

function formOf(file) {
  const form = new FormData();
  form.append('files', file, file.name);
  return form;
}

// A dry run first: an upload over the tenant's threshold of input tokens is sent only
// once the person confirms its estimate.
async function confirmed(file) {
  const estimate = await call('/documents?dry_run=true', { method: 'POST', body: formOf(file) });
  if (!estimate.needs_confirmation) return true;
  note(`${file.name} is large: confirm or cancel below.`);
  return confirmEstimate($('estimate'), file.name, estimate);
}

async function upload(files) {
  for (const file of files) {
    note(`Checking ${file.name}…`);
    try {
      if (!await confirmed(file)) { note(`${file.name} not uploaded: cancelled.`); continue; }
      note(`Uploading ${file.name}…`);
      const [queued] = await call('/documents', { method: 'POST', body: formOf(file) });
      documents.refresh();
      if (queued.duplicate) { note(`${file.name} was uploaded before: nothing new to ingest.`); continue; }
      queue(queued.job_id, file.name);
      note(queued.version > 1 ? `${file.name} queued as version ${queued.version}.` : `${file.name} queued.`);
    } catch (error) {
      note(`${file.name}: ${error.message}`, true);
    }
  }
}

// A job just queued, here or by the document manager: shown at once, followed live.
function queue(id, name) {
  names.set(id, name);
  render({ id, status: 'queued', progress: 0, total: 0 });
  refresh(id);
}

async function refresh(id) {
  try { render(await call(`/jobs/${encodeURIComponent(id)}`)); } catch { /* shown by the socket later */ }
}

async function sendPasted() {
  const text = $('pasted').value;
  if (!text.trim()) { note('Paste something first.', true); return; }
  if ($('pasted-kind').value === 'message') {
    try {
      const queued = await call('/episodes', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ content: text, source: 'message', name: 'pasted conversation' }),
      });
      names.set(queued.job_id, 'pasted conversation');
      render({ id: queued.job_id, status: 'queued', progress: 0, total: 1 });
      refresh(queued.job_id);
      $('pasted').value = '';
      note('Conversation queued.');
    } catch (error) {
      note(error.message, true);
    }
  } else {
    await upload([new File([text], `pasted-${new Date().toISOString().slice(0, 19)}.txt`, { type: 'text/plain' })]);
    $('pasted').value = '';
  }
}

function setupDrop() {
  const drop = $('drop');
  if (!drop) return;
  drop.addEventListener('dragover', (event) => { event.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    drop.classList.remove('over');
    upload([...event.dataTransfer.files]);
  });
  drop.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' || event.key === ' ') { $('files').click(); event.preventDefault(); }
  });
  $('files').addEventListener('change', () => { upload([...$('files').files]); $('files').value = ''; });
  $('send-pasted').addEventListener('click', sendPasted);
}

function follow() {
  connectSocket(root.dataset.socket, {
    onMessage(message) {
      if (message.type === 'live.ready') { loadJobs(); documents.refresh(); }
      if (message.type === 'change' && message.table === 'job') {
        if (message.action !== 'DELETE') render({ ...message.data, id: message.record });
        else { rows.get(String(message.record))?.remove(); rows.delete(String(message.record)); }
        documents.refresh(); // a job's document changes with it (status, episodes, versions)
      }
    },
  });
}

let monthsLoading = null;

// The tenant's model use per month; one request at a time, however many jobs end.
function loadMonths() {
  monthsLoading ??= call('/usage?months=6')
    .then((months) => renderMonths($('usage-months'), months))
    .catch((error) => note(error.message, true))
    .finally(() => { monthsLoading = null; });
}

async function loadJobs() {
  try {
    const jobs = await call('/jobs?limit=50');
    for (const job of jobs.reverse()) render(job);
  } catch (error) {
    note(error.message, true);
  }
}

const documents = documentManager(root, call, { onQueued: queue });
setupDrop();
follow();
loadMonths();
