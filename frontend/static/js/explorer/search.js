// The search box: suggestions as one types, chosen with the mouse or the keyboard.

import { $, el } from '../dom.js';
import { api, status } from './page.js';
import { seed } from './elements.js';

export function setupSearch() {
  const input = $('entity-search');
  const list = $('suggestions');
  let timer = null;
  let active = -1;
  const choose = (item) => {
    list.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    input.value = item.dataset.name;
    seed(item.dataset.id);
  };
  const mark = (index) => {
    const items = [...list.children];
    active = Math.max(-1, Math.min(items.length - 1, index));
    items.forEach((item, i) => item.setAttribute('aria-selected', String(i === active)));
    if (active >= 0) input.setAttribute('aria-activedescendant', items[active].id);
  };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    const q = input.value.trim();
    if (!q) { list.hidden = true; return; }
    timer = setTimeout(async () => {
      try {
        const found = await api(`/entities?q=${encodeURIComponent(q)}&limit=8`);
        list.replaceChildren(...found.map((entity, i) => {
          const item = el('li', entity.name);
          item.append(el('span', ` ${entity.entity_type ?? ''}`, 'muted'));
          item.id = `suggestion-${i}`;
          item.setAttribute('role', 'option');
          item.dataset.id = entity.id;
          item.dataset.name = entity.name;
          item.addEventListener('mousedown', (event) => { event.preventDefault(); choose(item); });
          return item;
        }));
        list.hidden = found.length === 0;
        input.setAttribute('aria-expanded', String(found.length > 0));
        mark(found.length ? 0 : -1);
      } catch (error) {
        status(error.message);
      }
    }, 150);
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'ArrowDown') { mark(active + 1); event.preventDefault(); }
    else if (event.key === 'ArrowUp') { mark(active - 1); event.preventDefault(); }
    else if (event.key === 'Enter' && active >= 0 && !list.hidden) { choose(list.children[active]); event.preventDefault(); }
    else if (event.key === 'Escape') { list.hidden = true; input.setAttribute('aria-expanded', 'false'); }
  });
}
