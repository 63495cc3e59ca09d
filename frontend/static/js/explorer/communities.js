// Colour by community, and why nothing is coloured: a tenant has no communities until
// they are first detected (after its first upload finishes), so the toolbar says that,
// or that detection is running, instead of greying every node without a word.

import { $ } from '../dom.js';
import { api } from './page.js';
import { cy } from './graph.js';
import { loadGraph } from './elements.js';

const ACTIVE = ['queued', 'running'];

// Why a tenant has no communities, from its latest jobs (newest first).
function reason(recent) {
  const detection = recent.find((job) => job.kind === 'communities');
  if (detection && ACTIVE.includes(detection.status)) return 'Detecting communities…';
  if (recent.some((job) => job.kind.startsWith('ingest') && ACTIVE.includes(job.status))) {
    return 'No communities yet: they are detected when the uploads in progress finish.';
  }
  if (detection?.status === 'failed') {
    return `No communities: their detection failed (${detection.error ?? 'see the jobs'}).`;
  }
  if (detection?.status === 'completed') {
    return 'No communities: the last detection found no group of connected entities.';
  }
  return 'No communities yet: they are detected after the first upload finishes.';
}

function hint(message) {
  const element = $('community-hint');
  element.textContent = message;
  element.hidden = !message;
}

// Says why there are no communities while colouring by community is on (and nothing
// once there are some).
export async function explainCommunities() {
  if (!$('by-community').checked) {
    hint('');
    return;
  }
  try {
    const [found, recent] = await Promise.all([api('/communities?limit=1'), api('/jobs?limit=50')]);
    if ($('by-community').checked) hint(found.length ? '' : reason(recent));
  } catch (error) {
    hint(`Could not read the communities: ${error.message}`);
  }
}

// A live change of a detection job: say it runs, and once it has ended, colour the
// nodes by what it found.
export async function communityJob(job) {
  if (ACTIVE.includes(job.status)) {
    if (!$('community-hint').hidden) hint('Detecting communities…');
    return;
  }
  if (job.status === 'completed') await loadGraph().catch(() => {});
  await explainCommunities();
}

export function setupCommunities() {
  $('by-community').addEventListener('change', () => {
    cy.nodes().toggleClass('by-community', $('by-community').checked);
    explainCommunities();
  });
  // A browser may restore the box ticked on reload.
  if ($('by-community').checked) explainCommunities();
}
