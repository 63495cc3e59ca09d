// The tenant page's import form (owners, empty tenants): send the export file, then
// follow its job until it completes or fails, saying which in words.

import { apiClient } from './api.js';
import { $, notice } from './dom.js';

const form = $('import-form');
const call = apiClient(form.dataset.api);
const say = notice($('import-status'));

async function follow(jobId) {
  for (;;) {
    const job = await call(`/jobs/${encodeURIComponent(jobId)}`);
    if (job.status === 'completed') {
      const records = (job.counts?.records ?? 0).toLocaleString();
      say(`Imported ${records} records. Reloading…`);
      window.location.reload();
      return;
    }
    if (job.status === 'failed') {
      say(`The import failed and nothing was kept: ${job.error}`);
      form.querySelector('button').disabled = false;
      return;
    }
    const done = job.total ? ` (${job.progress.toLocaleString()} of ${job.total.toLocaleString()} records)` : '';
    say(`${job.status === 'queued' ? 'Waiting to import' : 'Importing'}${done}…`);
    await new Promise((resolve) => { setTimeout(resolve, 1000); });
  }
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const file = $('import-file').files[0];
  if (!file) {
    say('Choose an export file first (.jsonl or .jsonl.gz).');
    return;
  }
  const body = new FormData();
  body.append('file', file);
  form.querySelector('button').disabled = true;
  say(`Sending ${file.name}…`);
  try {
    const queued = await call('/import', { method: 'POST', body });
    await follow(queued.job_id);
  } catch (error) {
    say(error.message);
    form.querySelector('button').disabled = false;
  }
});
