// The DOM helpers every page's script imports: find an element, build one holding text,
// a table cell, and a status line's notices. Text is only ever set as text, never as HTML.

// The element with this id.
export const $ = (id) => document.getElementById(id);

// A new <tag> holding `content` as text (none when undefined), of class `className`.
export function el(tag, content, className) {
  const element = document.createElement(tag);
  if (content !== undefined) element.textContent = content;
  if (className) element.className = className;
  return element;
}

// A <td> holding `content`: a node as it is, anything else as text ('' for none).
export function cell(content, className) {
  const td = el('td', undefined, className);
  if (content instanceof Node) td.append(content); else td.textContent = content ?? '';
  return td;
}

// The notices of one status line: note(message, isError) shows `message` in `element`,
// marked as an error (class "error") when `isError`.
export function notice(element) {
  return function note(message, isError = false) {
    element.textContent = message;
    element.classList.toggle('error', isError);
  };
}
