// Small DOM and formatting helpers shared by the views. Text is always set as text
// (never as HTML), so nothing recorded can become markup.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// Replaces what `node` shows with `children` (nested lists flattened, nulls left out).
export function show(node, ...children) {
  clear(node).append(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

// A cost in USD; null means unknown (the model has no price), never 0.
export function cost(usd) {
  if (usd === null || usd === undefined) return el('span', { class: 'unknown' }, 'unknown');
  if (usd === 0) return '$0';
  if (usd < 0.01) return `$${usd.toPrecision(2)}`;
  return `$${usd.toFixed(usd < 10 ? 4 : 2)}`;
}

export function tokens(n) {
  return n === null || n === undefined ? '–' : n.toLocaleString('en');
}

export function ms(v) {
  if (v === null || v === undefined) return '–';
  return v < 1000 ? `${v.toFixed(0)} ms` : `${(v / 1000).toFixed(2)} s`;
}

// `2026-12-03T11:40:00.123456Z` → `2026-12-03 11:40:00`.
export function time(t) {
  return t ? t.replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '–';
}

export function errorBox(e) {
  return el('p', { class: 'error' }, e.message || String(e));
}
