// What model calls use and cost, as the uploads page shows it: a job's usage rows
// summed, the tenant's months, and the estimate of an upload to confirm before it is
// sent. A model without a price has cost null: shown as unknown, never as $0.

import { el } from './dom.js';

const integer = new Intl.NumberFormat('en-US');

export function formatUsd(value) {
  if (value === null || value === undefined) return 'unknown';
  if (value === 0) return '$0';
  return value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

// A job's or a document's usage rows (one per model) added up.
export function usageTotal(rows = []) {
  const total = { calls: 0, input: 0, output: 0, cost: 0, unpriced: [] };
  for (const row of rows) {
    total.calls += row.calls ?? 0;
    total.input += row.input_tokens ?? 0;
    total.output += row.output_tokens ?? 0;
    if (row.cost_usd === null || row.cost_usd === undefined) total.unpriced.push(row.model);
    else total.cost += row.cost_usd;
  }
  return total;
}

function costText(cost, unpriced) {
  if (!unpriced.length) return formatUsd(cost);
  const known = cost ? `${formatUsd(cost)} + ` : '';
  return `${known}unknown (no price for ${unpriced.join(', ')})`;
}

// "3 calls · 12,345 in / 1,234 out tokens · $0.0123"; "no model calls" offline.
export function usageText(rows) {
  const total = usageTotal(rows);
  if (!total.calls) return 'no model calls · $0';
  const calls = `${integer.format(total.calls)} call${total.calls === 1 ? '' : 's'}`;
  const tokens = `${integer.format(total.input)} in / ${integer.format(total.output)} out tokens`;
  return `${calls} · ${tokens} · ${costText(total.cost, total.unpriced)}`;
}

function row(values, header = false) {
  const tr = el('tr');
  values.forEach((value, index) => {
    const td = el(header && index === 0 ? 'th' : 'td', value);
    if (header && index === 0) td.scope = 'row';
    tr.append(td);
  });
  return tr;
}

// The tenant's months (GET usage), newest first, into `tbody`.
export function renderMonths(tbody, months) {
  tbody.replaceChildren(...months.map((m) => row([
    m.month, integer.format(m.jobs), integer.format(m.calls), integer.format(m.input_tokens),
    integer.format(m.output_tokens), costText(m.cost_usd, m.unpriced_models ?? []),
  ], true)));
}

function estimateRows(estimate) {
  const { total } = estimate;
  return [
    ['Model', estimate.model ?? 'none: offline extraction'],
    ['Chunks', integer.format(total.chunks)],
    ['Expected model calls', integer.format(total.calls)],
    ['Input tokens', integer.format(total.input_tokens)],
    ['Output tokens (estimated)', integer.format(total.output_tokens)],
    ['Estimated cost', formatUsd(total.cost_usd)],
  ];
}

// Shows the dry run's `estimate` of `fileName` in `panel` and resolves true on Confirm,
// false on Cancel (or Escape). The panel is hidden again either way.
export function confirmEstimate(panel, fileName, estimate) {
  const title = el('h2', `Ingest ${fileName}?`);
  title.id = 'estimate-title';
  const why = el('p', `It is large: about ${integer.format(estimate.total.input_tokens)} input tokens,`
    + ` over the ${integer.format(estimate.confirm_above_tokens)} that need a confirmation.`);
  const table = el('table', undefined, 'estimate-table');
  const body = el('tbody');
  body.append(...estimateRows(estimate).map((values) => row(values, true)));
  table.append(body);
  const confirm = el('button', 'Confirm and upload');
  confirm.type = 'button';
  confirm.id = 'estimate-confirm';
  const cancel = el('button', 'Cancel');
  cancel.type = 'button';
  cancel.id = 'estimate-cancel';
  panel.replaceChildren(title, why, table, confirm, ' ', cancel);
  panel.hidden = false;
  confirm.focus();
  return new Promise((resolve) => {
    const done = (answer) => {
      panel.hidden = true;
      panel.replaceChildren();
      resolve(answer);
    };
    confirm.addEventListener('click', () => done(true));
    cancel.addEventListener('click', () => done(false));
    panel.addEventListener('keydown', (event) => { if (event.key === 'Escape') done(false); });
  });
}
