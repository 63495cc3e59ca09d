// The retention page: the tenant's policy, a preview of what a policy would remove now
// (shown before it can be saved), a run on demand, the archives and the history.

import { apiClient } from './api.js';
import { $, cell, el, notice } from './dom.js';

const root = $('retention');
const call = apiClient(root.dataset.api);
const LABELS = {
  facts: 'facts', episodes: 'episodes', documents: 'documents', entities: 'entities',
  facts_unlinked: 'facts kept, losing an episode',
};
let previewed = null; // the policy last previewed, as JSON: only it can be saved

const note = notice($('retention-status'));

function days(input) {
  return input.value === '' ? null : Number(input.value);
}

function formPolicy() {
  const mode = root.querySelector('input[name=mode]:checked').value;
  return { mode, facts_ended_days: days($('facts-days')), episodes_days: days($('episodes-days')) };
}

function describe(policy) {
  if (policy.mode !== 'drop') return 'keep everything';
  const parts = [];
  if (policy.facts_ended_days) parts.push(`facts ended over ${policy.facts_ended_days} days ago`);
  if (policy.episodes_days) parts.push(`episodes stored over ${policy.episodes_days} days ago`);
  return `drop ${parts.join(' and ')}`;
}

function showPolicy(policy) {
  $('current-policy').textContent = describe(policy);
  root.querySelector(`input[name=mode][value=${policy.mode}]`).checked = true;
  $('facts-days').value = policy.facts_ended_days ?? '';
  $('episodes-days').value = policy.episodes_days ?? '';
}

function showPreview(preview) {
  const counts = Object.entries(LABELS).map(([key, label]) => {
    const div = el('div');
    const dd = el('dd', String(preview.counts[key] ?? 0));
    dd.dataset.count = key;
    div.append(el('dt', label), dd);
    return div;
  });
  $('preview-counts').replaceChildren(...counts);
  const { facts, episodes, documents, entities } = preview.sample;
  $('preview-sample').replaceChildren(
    ...facts.map((f) => el('li', `fact: ${f.fact} (ended ${f.expired_at})`)),
    ...episodes.map((e) => el('li', `episode: ${e.excerpt} (stored ${e.created_at})`)),
    ...documents.map((d) => el('li', `document: ${d.file_name}`)),
    ...entities.map((e) => el('li', `entity: ${e.name}`)),
  );
  $('preview-card').hidden = false;
}

function showArchives(archives) {
  $('archives').replaceChildren(...(archives.length ? archives.map((a) => {
    const li = el('li');
    const link = el('a', a.name);
    link.href = `${root.dataset.api}/retention/archives/${encodeURIComponent(a.name)}`;
    link.download = a.name;
    li.append(link, ` (${a.size} bytes)`);
    return li;
  }) : [el('li', 'No archives yet.')]));
}

function showHistory(history) {
  $('history').replaceChildren(...history.map((entry) => {
    const row = el('tr');
    const what = entry.action === 'retention_run'
      ? `run: removed ${Object.entries(entry.after?.counts ?? {}).map(([k, v]) => `${v} ${k}`).join(', ')}`
        + (entry.after?.archive ? `; archive ${entry.after.archive}` : '')
      : `policy: ${describe(entry.before ?? {})} → ${describe(entry.after ?? {})}`;
    row.append(...[entry.at, entry.actor, what].map((text) => cell(text)));
    return row;
  }));
}

async function refresh() {
  const [state, archives] = await Promise.all([call('/retention'), call('/retention/archives')]);
  showPolicy(state.policy);
  showHistory(state.history);
  showArchives(archives);
}

async function preview() {
  const policy = formPolicy();
  const query = new URLSearchParams({ mode: policy.mode });
  if (policy.facts_ended_days !== null) query.set('facts_ended_days', policy.facts_ended_days);
  if (policy.episodes_days !== null) query.set('episodes_days', policy.episodes_days);
  try {
    showPreview(await call(`/retention/preview?${query}`));
    previewed = JSON.stringify(policy);
    $('save').disabled = false;
    note('Preview ready: save the policy to switch it on.');
  } catch (error) {
    note(error.message, true);
  }
}

async function save() {
  const policy = formPolicy();
  if (JSON.stringify(policy) !== previewed) {
    note('The form changed since the preview: preview it again before saving.', true);
    $('save').disabled = true;
    return;
  }
  try {
    await call('/retention', {
      method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(policy),
    });
    note('Policy saved.');
    await refresh();
  } catch (error) {
    note(error.message, true);
  }
}

async function waitFor(jobId) {
  for (let i = 0; i < 120; i += 1) {
    const job = await call(`/jobs/${encodeURIComponent(jobId)}`);
    if (!['queued', 'running'].includes(job.status)) return job;
    await new Promise((resolve) => { setTimeout(resolve, 500); });
  }
  return { status: 'still running' };
}

async function run() {
  note('Running…');
  try {
    const queued = await call('/retention/run', { method: 'POST' });
    const job = await waitFor(queued.job_id);
    note(job.status === 'completed'
      ? `Run completed${job.result?.archive ? `: archived to ${job.result.archive}` : ': nothing to remove'}.`
      : `Run ${job.status}${job.error ? `: ${job.error}` : ''}`, job.status !== 'completed');
    await refresh();
  } catch (error) {
    note(error.message, true);
  }
}

root.querySelectorAll('#policy-form input').forEach((input) => {
  input.addEventListener('input', () => { $('save').disabled = true; });
});
$('preview').addEventListener('click', preview);
$('save').addEventListener('click', save);
$('run').addEventListener('click', run);
refresh().catch((error) => note(error.message, true));
