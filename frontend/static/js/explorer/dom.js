// The page around the graph: its elements, the API, the status line and the toasts.

import { apiClient, statusMessage } from '../api.js';
import { NEVER } from '../time.js';

export const root = document.getElementById('explorer');
export const api = apiClient(root.dataset.api, statusMessage); // errors read "404: Not found"
export const $ = (id) => document.getElementById(id);

export function text(tag, content, className) {
  const element = document.createElement(tag);
  if (content !== undefined) element.textContent = content;
  if (className) element.className = className;
  return element;
}

export function status(message) { $('status').textContent = message; }

export function toast(key, message, kind = 'info') {
  let item = document.querySelector(`[data-toast="${CSS.escape(key)}"]`);
  if (!item) {
    item = text('div', '', `toast ${kind}`);
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
