// The calls table: filters and sort in the location hash, one page fetched from the
// server at a time (the store may hold millions of calls).

import { get, query } from './api.js';
import { el, show, cost, tokens, ms, time } from './dom.js';

const FILTERS = ['status', 'kind', 'reference', 'role', 'key', 'q', 'since', 'until'];
const LIMIT = 50;

function go(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  location.hash = `#/calls?${q}`;
}

function current(params) {
  const p = {};
  for (const k of [...FILTERS, 'sort', 'order', 'offset']) p[k] = params.get(k) || '';
  return p;
}

function select(name, label, options, value) {
  return el('label', {}, label,
    el('select', { name },
      el('option', { value: '' }, 'any'),
      options.map(([v, text]) => el('option', { value: v, selected: v === value }, text))));
}

function countsOf(map) {
  return Object.entries(map || {}).map(([k, n]) => [k === '' ? '(none)' : k, `${k === '' ? '(none)' : k} (${n})`]);
}

function filterForm(p, summary) {
  const form = el('form', { class: 'filters', id: 'filters' },
    select('status', 'Status', [['ok', 'ok'], ['error', 'error']], p.status),
    select('kind', 'Error kind', countsOf(summary.kinds), p.kind),
    select('reference', 'Reference', countsOf(summary.references), p.reference),
    select('role', 'Role', countsOf(summary.roles), p.role),
    select('key', 'Key', countsOf(summary.keys), p.key),
    el('label', {}, 'Search', el('input', { name: 'q', value: p.q, placeholder: 'reference or model' })),
    el('label', {}, 'Since', el('input', { name: 'since', value: p.since, placeholder: '2026-12-03' })),
    el('label', {}, 'Until', el('input', { name: 'until', value: p.until, placeholder: '2026-12-04T00' })),
    el('button', { type: 'submit' }, 'Filter'),
    el('button', { type: 'button', onclick: () => go({}) }, 'Clear'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = { sort: p.sort, order: p.order };
    for (const [k, v] of new FormData(form)) next[k] = v;
    go(next);
  });
  form.addEventListener('change', (e) => {
    if (e.target.tagName === 'SELECT') form.requestSubmit();
  });
  return form;
}

function header(label, sortKey, p) {
  if (!sortKey) return el('th', {}, label);
  const active = (p.sort || 'time') === sortKey;
  const desc = (p.order || 'desc') === 'desc';
  const arrow = active ? (desc ? ' ▼' : ' ▲') : '';
  return el('th', { class: 'sortable' },
    el('a', {
      href: '#', 'data-sort': sortKey,
      onclick: (e) => {
        e.preventDefault();
        go({ ...p, sort: sortKey, order: active && desc ? 'asc' : 'desc', offset: '' });
      },
    }, label + arrow));
}

function statusCell(c) {
  if (c.status === 'ok') return el('td', { class: 'ok' }, c.cache_hit ? 'ok (cache)' : 'ok');
  return el('td', { class: 'err' }, c.error_kind || 'error');
}

export async function showCalls(main, params, summary) {
  const p = current(params);
  const offset = Number(p.offset) || 0;
  const page = await get(`/console/api/calls${query({ ...p, offset, limit: LIMIT })}`);
  const rows = page.calls.map((c) => el('tr', { 'data-id': c.id },
    el('td', {}, el('a', { href: `#/call/${encodeURIComponent(c.id)}` }, c.id)),
    el('td', {}, time(c.time)),
    el('td', {}, c.role || el('span', { class: 'muted' }, '–')),
    el('td', {}, c.key || el('span', { class: 'muted' }, '–')),
    el('td', {}, c.reference),
    el('td', {}, c.client_dialect && c.client_dialect !== c.dialect ? `${c.client_dialect}→${c.dialect}` : (c.dialect || '–')),
    statusCell(c),
    el('td', { class: 'num' }, tokens(c.input_tokens)),
    el('td', { class: 'num' }, tokens(c.output_tokens)),
    el('td', { class: 'num' }, cost(c.cost_usd)),
    el('td', { class: 'num' }, ms(c.latency_ms)),
    el('td', { class: 'num' }, String(c.attempts))));
  const last = Math.min(offset + page.calls.length, page.total);
  const pager = el('div', { class: 'pager' },
    el('button', { disabled: offset === 0, onclick: () => go({ ...p, offset: Math.max(0, offset - LIMIT) }) }, '← Newer'),
    el('span', { id: 'page-info' }, page.total === 0 ? 'no calls match'
      : `${(offset + 1).toLocaleString('en')}–${last.toLocaleString('en')} of ${page.total.toLocaleString('en')}`),
    el('button', { disabled: last >= page.total, onclick: () => go({ ...p, offset: offset + LIMIT }) }, 'Older →'));
  show(main, 
    filterForm(p, summary),
    el('table', { class: 'calls', id: 'calls' },
      el('thead', {}, el('tr', {},
        header('#'), header('Time', 'time', p), header('Role'), header('Key'), header('Reference'),
        header('Dialect'), header('Status'), header('In', 'tokens', p), header('Out'),
        header('Cost', 'cost', p), header('Latency', 'latency', p), header('Attempts'))),
      el('tbody', {}, rows)),
    pager);
}
