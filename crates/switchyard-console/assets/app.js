// The console's entry: a view per location hash (#/calls?…, #/call/ID, #/spend,
// #/budgets, #/conversations?…, #/conversation/KIND/ID?key=…), the store's name in the
// header.

import { get, forgetKey } from './api.js';
import { clear, errorBox } from './dom.js';
import { showCalls } from './calls.js';
import { showCall } from './call.js';
import { showSpend } from './spend.js';
import { showBudgets } from './budgets.js';
import { showConversations, showConversation } from './conversations.js';

const main = document.getElementById('main');
let summary = null;

async function loadSummary() {
  if (!summary) {
    summary = await get('/console/api/summary');
    document.getElementById('source').textContent =
      `${summary.source} · ${summary.calls.toLocaleString('en')} calls`;
  }
  return summary;
}

async function route() {
  const hash = location.hash.replace(/^#\/?/, '') || 'calls';
  const [path, search] = hash.split('?');
  const params = new URLSearchParams(search || '');
  const [view, id, second] = path.split('/');
  const tab = { call: 'calls', conversation: 'conversations' }[view] || view;
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.dataset.tab === tab);
  }
  try {
    const s = await loadSummary();
    if (view === 'call' && id) await showCall(main, decodeURIComponent(id));
    else if (view === 'spend') await showSpend(main, params);
    else if (view === 'budgets') await showBudgets(main);
    else if (view === 'conversations') await showConversations(main, params);
    else if (view === 'conversation' && second) await showConversation(main, decodeURIComponent(id), decodeURIComponent(second), params);
    else await showCalls(main, params, s);
  } catch (e) {
    clear(main).append(errorBox(e));
  }
}

document.getElementById('forget-key').addEventListener('click', () => {
  forgetKey();
  location.reload();
});
window.addEventListener('hashchange', route);
route();
