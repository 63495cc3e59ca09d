// The page around the graph: its element, the API, the status line, the toasts and the
// dates shown. The DOM helpers themselves are ../dom.js's.

import { apiClient, statusMessage } from '../api.js';
import { $, el, notice } from '../dom.js';
import { NEVER } from '../time.js';

export const root = $('explorer');
export const api = apiClient(root.dataset.api, statusMessage); // errors read "404: Not found"

// The status line under the graph.
export const status = notice($('status'));

export function toast(key, message, kind = 'info') {
  let item = document.querySelector(`[data-toast="${CSS.escape(key)}"]`);
  if (!item) {
    item = el('div', '', `toast ${kind}`);
    item.dataset.toast = key;
    $('toasts').append(item);
  }
  item.className = `toast ${kind}`;
  item.textContent = message;
  clearTimeout(item.timer);
  item.timer = setTimeout(() => item.remove(), kind === 'error' ? 15000 : 5000);
}

export function fmt(moment) {
  return moment === NEVER ? 'now' : new Date(moment).toISOString().slice(0, 10);
}
