// Spend over time by model, key or role, as stacked bars, with the totals beside.

import { get, query } from './api.js';
import { el, show, cost, tokens } from './dom.js';
import { stackedBars } from './plot.js';

const MOST_GROUPS = 8;

function choose(name, options, value, p) {
  return el('label', {}, name,
    el('select', {
      name,
      onchange: (e) => { location.hash = `#/spend${query({ ...p, [name]: e.target.value })}`; },
    }, options.map((o) => el('option', { value: o, selected: o === value }, o))));
}

export async function showSpend(main, params) {
  const p = {
    by: params.get('by') || 'model',
    bucket: params.get('bucket') || 'day',
    metric: params.get('metric') || 'cost',
  };
  const d = await get(`/console/api/spend${query({ by: p.by, bucket: p.bucket })}`);
  const field = { cost: 'cost_usd', calls: 'calls', tokens: 'tokens' }[p.metric] || 'cost_usd';
  const totals = new Map();
  for (const pt of d.points) {
    const t = totals.get(pt.group) || { cost_usd: 0, calls: 0, tokens: 0, unknown_cost_calls: 0 };
    for (const k of Object.keys(t)) t[k] += pt[k];
    totals.set(pt.group, t);
  }
  // The dearest groups by the metric, the rest as one.
  const ranked = [...totals.entries()].sort((a, b) => b[1][field] - a[1][field]).map(([g]) => g);
  const shown = ranked.slice(0, MOST_GROUPS);
  const other = ranked.length > MOST_GROUPS ? '(other)' : null;
  const groups = other ? [...shown, other] : shown;
  const cells = new Map();
  const buckets = [];
  for (const pt of d.points) {
    if (!cells.has(pt.bucket)) { cells.set(pt.bucket, new Map()); buckets.push(pt.bucket); }
    const g = shown.includes(pt.group) ? pt.group : other;
    const row = cells.get(pt.bucket);
    row.set(g, (row.get(g) || 0) + pt[field]);
  }
  const format = p.metric === 'cost' ? (v) => `$${v < 1 ? v.toPrecision(2) : v.toFixed(2)}` : (v) => Math.round(v).toLocaleString('en');
  const plot = buckets.length
    ? stackedBars({ buckets, groups, value: (b, g) => cells.get(b).get(g) || 0, format })
    : el('p', { class: 'muted' }, 'no calls');
  const legend = el('ul', { class: 'legend' }, groups.map((g, i) => el('li', {},
    el('span', { class: `swatch c${i % 10}` }), g || '(none)')));
  const table = el('table', { class: 'totals' },
    el('thead', {}, el('tr', {}, [p.by, 'Calls', 'Tokens', 'Cost', 'Calls of unknown cost'].map((h) => el('th', {}, h)))),
    el('tbody', {}, ranked.map((g) => {
      const t = totals.get(g);
      return el('tr', {}, el('td', {}, g || '(none)'), el('td', { class: 'num' }, tokens(t.calls)),
        el('td', { class: 'num' }, tokens(t.tokens)),
        el('td', { class: 'num' }, t.calls === t.unknown_cost_calls ? cost(null) : cost(t.cost_usd)),
        el('td', { class: 'num' }, t.unknown_cost_calls ? tokens(t.unknown_cost_calls) : '–'));
    })));
  show(main, 
    el('h1', {}, 'Spend over time'),
    el('form', { class: 'filters' },
      choose('by', ['model', 'key', 'role'], p.by, p),
      choose('bucket', ['hour', 'day'], p.bucket, p),
      choose('metric', ['cost', 'calls', 'tokens'], p.metric, p)),
    el('div', { id: 'spend-plot' }, plot), legend,
    el('p', { class: 'muted' }, 'Calls of unknown cost (models without a price) add nothing to the dollars; they are counted apart.'),
    table);
}
