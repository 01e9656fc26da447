// The conversation turns the gateway keeps (Responses with `store`, Anthropic threads):
// one page at a time from the server, filtered by key and kind; a turn opens its JSON as
// kept, with a link to the turn before it.

import { get, query } from './api.js';
import { el, show } from './dom.js';

const LIMIT = 50;

function go(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  location.hash = `#/conversations?${q}`;
}

// Seconds since the epoch → `2026-12-03 11:40:00` (UTC).
function when(secs) {
  return new Date(secs * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, '');
}

// A key's name; `(none)` for turns kept without keys (what `key=` takes for them).
function keyName(k) {
  return k === '' ? '(none)' : k;
}

function turnHref(kind, id, key) {
  return `#/conversation/${encodeURIComponent(kind)}/${encodeURIComponent(id)}?${new URLSearchParams({ key: keyName(key) })}`;
}

function filterForm(p) {
  const form = el('form', { class: 'filters', id: 'conversation-filters' },
    el('label', {}, 'Key', el('input', { name: 'key', value: p.key, placeholder: 'key name or (none)' })),
    el('label', {}, 'Kind',
      el('select', { name: 'kind' },
        el('option', { value: '' }, 'any'),
        ['response', 'thread'].map((k) => el('option', { value: k, selected: k === p.kind }, k)))),
    el('button', { type: 'submit' }, 'Filter'),
    el('button', { type: 'button', onclick: () => go({}) }, 'Clear'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = {};
    for (const [k, v] of new FormData(form)) next[k] = v;
    go(next);
  });
  form.addEventListener('change', (e) => {
    if (e.target.tagName === 'SELECT') form.requestSubmit();
  });
  return form;
}

const dash = () => el('span', { class: 'muted' }, '–');

export async function showConversations(main, params) {
  const p = { key: params.get('key') || '', kind: params.get('kind') || '' };
  const offset = Number(params.get('offset')) || 0;
  const page = await get(`/console/api/conversations${query({ ...p, offset, limit: LIMIT })}`);
  const title = el('h1', {}, 'Kept conversations');
  if (!page.kept) {
    show(main, title, el('p', { class: 'muted', id: 'not-kept' }, page.message));
    return;
  }
  const rows = page.turns.map((t) => el('tr', { 'data-id': t.id },
    el('td', {}, t.kind),
    el('td', {}, el('a', { href: turnHref(t.kind, t.id, t.key) }, t.id)),
    el('td', {}, keyName(t.key)),
    el('td', {}, t.previous ? el('a', { href: turnHref(t.kind, t.previous, t.key) }, t.previous) : dash()),
    el('td', {}, when(t.created)),
    el('td', {}, when(t.expires)),
    el('td', { class: 'num' }, String(t.input_items)),
    el('td', { class: 'num' }, String(t.output_items)),
    el('td', {}, t.model || dash()),
    el('td', {}, t.upstream || dash())));
  const last = Math.min(offset + page.turns.length, page.total);
  const pager = el('div', { class: 'pager' },
    el('button', { disabled: offset === 0, onclick: () => go({ ...p, offset: Math.max(0, offset - LIMIT) }) }, '← Newer'),
    el('span', { id: 'page-info' }, page.total === 0 ? 'no kept turns match'
      : `${(offset + 1).toLocaleString('en')}–${last.toLocaleString('en')} of ${page.total.toLocaleString('en')}`),
    el('button', { disabled: last >= page.total, onclick: () => go({ ...p, offset: offset + LIMIT }) }, 'Older →'));
  show(main, title, filterForm(p),
    el('table', { class: 'calls', id: 'conversations' },
      el('thead', {}, el('tr', {},
        ['Kind', 'Id', 'Key', 'Previous', 'Kept (UTC)', 'Expires (UTC)', 'In', 'Out', 'Model', 'Kept upstream too']
          .map((h) => el('th', {}, h)))),
      el('tbody', {}, rows)),
    pager);
}

export async function showConversation(main, kind, id, params) {
  const key = params.get('key') || '(none)';
  const t = await get(`/console/api/conversations/${encodeURIComponent(kind)}/${encodeURIComponent(id)}${query({ key })}`);
  const facts = [
    ['Kind', t.kind],
    ['Key', keyName(t.key)],
    ['Previous', t.previous ? el('a', { href: turnHref(t.kind, t.previous, t.key) }, t.previous) : '–'],
    ['Kept', `${when(t.created)} UTC`],
    ['Expires', `${when(t.expires)} UTC`],
    ['Items', `${t.input_items} in, ${t.output_items} out`],
    ['Model', t.model || '–'],
    ['Kept upstream too', t.upstream || '–'],
  ];
  show(main,
    el('p', {}, el('a', { href: '#/conversations' }, '← Kept conversations')),
    el('h1', {}, `${t.kind} ${t.id}`),
    el('dl', { class: 'facts' }, facts.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
    el('h2', {}, 'The turn as kept'),
    el('pre', { id: 'turn' }, JSON.stringify(t.turn, null, 2)));
}
