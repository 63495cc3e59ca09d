// Colours that mean the same in every tenant and every session: each type of the default
// ontology has its own, and any other type the colour its name hashes to (so "Recipe" is
// the same hue wherever it appears). Communities are numbered per tenant, so their
// colours come from a palette in order.

const TYPE_COLOURS = {
  Person: '#1f77b4',
  Organization: '#d62728',
  Location: '#2ca02c',
  Product: '#9467bd',
  Event: '#e67e22',
  Project: '#17becf',
  Concept: '#8c564b',
  Document: '#e377c2',
  Entity: '#7f7f7f',
};

export const COMMUNITY_PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#e67e22', '#17becf',
  '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];

// FNV-1a over the name's UTF-16 units: stable across browsers and sessions.
function hash(name) {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i += 1) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function typeColour(type) {
  const name = type || 'Entity';
  if (Object.hasOwn(TYPE_COLOURS, name)) return TYPE_COLOURS[name];
  const h = hash(name);
  // A hue, and one of three lightnesses, so that two custom types rarely look alike.
  return `hsl(${h % 360}, 60%, ${[38, 46, 54][(h >>> 9) % 3]}%)`;
}
