// Budgets and their use: each gateway key's budget_usd in its current period, and the
// run's own budget: from its run.yaml.

import { get } from './api.js';
import { el, show, cost, tokens } from './dom.js';

function meter(used, limit) {
  const share = limit > 0 ? Math.min(1, used / limit) : 1;
  const m = el('meter', { min: '0', max: '1', value: String(share), low: '0.7', high: '0.9', optimum: '0' });
  return el('span', {}, m, ` ${(share * 100).toFixed(1)}%`);
}

export async function showBudgets(main) {
  const d = await get('/console/api/budgets');
  const keys = d.keys.length
    ? el('table', { class: 'budgets', id: 'key-budgets' },
      el('thead', {}, el('tr', {}, ['Key', 'Budget', 'Period', 'Since', 'Spent', 'Left', 'Use'].map((h) => el('th', {}, h)))),
      el('tbody', {}, d.keys.map((k) => el('tr', {},
        el('td', {}, k.key), el('td', { class: 'num' }, cost(k.budget_usd)), el('td', {}, k.period),
        el('td', {}, k.since || 'all time'), el('td', { class: 'num' }, cost(k.spent_usd)),
        el('td', { class: 'num' }, cost(k.left_usd)), el('td', {}, meter(k.spent_usd, k.budget_usd))))))
    : el('p', { class: 'muted' }, 'No gateway key has a budget_usd (or this is not a gateway).');
  let run = el('p', { class: 'muted' }, 'The run config has no budget: section (or this is not a run directory).');
  if (d.run) {
    const r = d.run;
    const rows = [];
    if (r.max_usd != null) rows.push(['Dollars', cost(r.spent_usd), cost(r.max_usd), meter(r.spent_usd, r.max_usd)]);
    if (r.max_calls != null) rows.push(['Calls', tokens(r.calls), tokens(r.max_calls), meter(r.calls, r.max_calls)]);
    if (r.max_tokens != null) rows.push(['Tokens', tokens(r.tokens), tokens(r.max_tokens), meter(r.tokens, r.max_tokens)]);
    run = el('div', {},
      el('table', { class: 'budgets', id: 'run-budget' },
        el('thead', {}, el('tr', {}, ['', 'Used', 'Budget', 'Use'].map((h) => el('th', {}, h)))),
        el('tbody', {}, rows.map((cells) => el('tr', {}, cells.map((c) => el('td', {}, c)))))),
      r.exclude_roles.length ? el('p', { class: 'muted' }, `Not counted: roles ${r.exclude_roles.join(', ')}`) : null);
  }
  show(main, el('h1', {}, 'Budgets'), el('h2', {}, 'Gateway keys'), keys, el('h2', {}, 'The run'), run);
}
