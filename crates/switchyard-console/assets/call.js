// One call in full: what was asked and answered (thinking and tool calls rendered), the
// attempts and their waits, the body as sent and the raw reply, the request to send it
// again, and for a ReplayExhausted failure its prompt beside the nearest recorded one.

import { get } from './api.js';
import { el, show, cost, tokens, ms, time } from './dom.js';

function part(p) {
  switch (p.type) {
    case 'text':
      return el('div', { class: 'part text' }, el('pre', {}, p.text));
    case 'thinking':
      return el('details', { class: 'part thinking', open: true },
        el('summary', {}, 'thinking'), el('pre', {}, p.text || (p.state ? '(opaque state only)' : '')));
    case 'tool_call':
      return el('div', { class: 'part tool-call' },
        el('div', { class: 'label' }, `tool call ${p.namespace || ''}${p.name}`, el('span', { class: 'muted' }, ` ${p.id}`)),
        el('pre', {}, pretty(p.arguments)));
    case 'tool_result':
      return el('div', { class: 'part tool-result' },
        el('div', { class: 'label' }, `tool result for ${p.call_id}${p.is_error ? ' (error)' : ''}`),
        (p.content || []).map(part));
    case 'image':
      return el('div', { class: 'part image muted' }, `image (${p.source === 'url' ? p.url : p.media_type})`);
    default:
      return el('pre', { class: 'part' }, JSON.stringify(p, null, 2));
  }
}

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}

function messages(request) {
  const out = [];
  if (request.system) out.push(el('div', { class: 'message' }, el('div', { class: 'who' }, 'system'),
    el('pre', {}, typeof request.system === 'string' ? request.system : JSON.stringify(request.system, null, 2))));
  for (const m of request.messages || []) {
    out.push(el('div', { class: `message ${m.role}` }, el('div', { class: 'who' }, m.role), (m.content || []).map(part)));
  }
  if (request.tools && request.tools.length) {
    out.push(el('details', {}, el('summary', {}, `${request.tools.length} tools`),
      el('pre', {}, JSON.stringify(request.tools, null, 2))));
  }
  return out;
}

function facts(r) {
  const u = r.usage;
  const rows = [
    ['Time', time(r.timings.started_at)],
    ['Role', r.role || '–'],
    ['Key', r.client_key || '–'],
    ['Reference', r.route ? `${r.reference} (route ${r.route})` : r.reference],
    ['Backend / model', `${r.backend} / ${r.model}`],
    ['Dialect', r.client_dialect && r.client_dialect !== r.dialect ? `${r.client_dialect} → ${r.dialect}` : (r.dialect || '–')],
    ['Streamed', r.stream ? 'yes' : 'no'],
    ['Status', r.error ? `error: ${r.error.kind}` : (r.cache_hit ? `ok (cache hit of call ${r.cache_hit})` : 'ok')],
    ['Tokens', u ? `${tokens(u.input)} in (${tokens(u.cached_input)} cached), ${tokens(u.output)} out (${tokens(u.reasoning)} reasoning)${r.usage_estimated ? ' — estimated' : ''}` : 'no usage'],
    ['Cost', cost(r.cost_usd)],
    ['Latency', `${ms(r.timings.duration_ms)}${r.timings.first_byte_ms != null ? `, first byte ${ms(r.timings.first_byte_ms)}` : ''}`],
  ];
  return el('dl', { class: 'facts' }, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function attempts(list) {
  return el('table', { class: 'attempts' },
    el('thead', {}, el('tr', {}, ['#', 'Waited before', 'Started', 'Took', 'Status', 'Error'].map((h) => el('th', {}, h)))),
    el('tbody', {}, list.map((a) => el('tr', {},
      el('td', {}, String(a.number)), el('td', { class: 'num' }, ms(a.wait_before_ms)),
      el('td', {}, time(a.started_at)), el('td', { class: 'num' }, ms(a.duration_ms)),
      el('td', {}, a.status == null ? '–' : String(a.status)),
      el('td', {}, a.error_kind ? `${a.error_kind}: ${a.error || ''}` : '')))));
}

function shellQuote(s) {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function replay(r) {
  if (!r.available) return el('p', { class: 'muted' }, r.why);
  const url = `${location.origin}${r.path}`;
  const curl = `curl -sS${r.stream ? 'N' : ''} ${shellQuote(url)} \\\n  -H 'content-type: application/json' \\\n  -H "authorization: Bearer $SWITCHYARD_KEY" \\\n  --data-binary @- <<'JSON'\n${r.body}\nJSON`;
  const text = el('textarea', { id: 'replay-curl', readonly: true, rows: 8 }, curl);
  const done = el('span', { class: 'muted', id: 'copied' });
  const copy = async (value) => {
    try {
      await navigator.clipboard.writeText(value);
    } catch {
      text.value = value;
      text.select();
      document.execCommand('copy');
    }
    done.textContent = ' copied';
  };
  return el('div', {},
    el('p', { class: 'muted' }, 'The body as sent, its model set to the reference, to the gateway\'s endpoint for its dialect (set SWITCHYARD_KEY when the gateway has keys).'),
    text,
    el('div', {},
      el('button', { type: 'button', id: 'copy-curl', onclick: () => copy(curl) }, 'Copy as curl'), ' ',
      el('button', { type: 'button', onclick: () => copy(r.body) }, 'Copy JSON body'), done));
}

function nearest(n) {
  if (n.missing) return el('p', { class: 'muted' }, `Nearest recorded call ${n.number}: ${n.missing}`);
  const rows = n.rows.map((row) => el('tr', { class: row.op },
    el('td', {}, row.left === null ? '' : el('pre', {}, row.left)),
    el('td', {}, row.right === null ? '' : el('pre', {}, row.right))));
  return el('div', {},
    n.short ? el('p', {}, n.short) : null,
    el('table', { class: 'diff', id: 'replay-diff' },
      el('thead', {}, el('tr', {}, el('th', {}, `Recorded call ${n.number}`), el('th', {}, 'This request'))),
      el('tbody', {}, rows)));
}

function section(title, ...body) {
  return el('section', {}, el('h2', {}, title), ...body);
}

export async function showCall(main, id) {
  const d = await get(`/console/api/calls/${encodeURIComponent(id)}`);
  const r = d.record;
  const raw = el('pre', { class: 'raw' }, 'loading…');
  const rawBox = el('details', { id: 'raw' }, el('summary', {}, 'Raw reply bytes, exactly as received'), raw);
  rawBox.addEventListener('toggle', async () => {
    if (!rawBox.open || raw.dataset.loaded) return;
    raw.dataset.loaded = '1';
    try {
      raw.textContent = await get(`/console/api/calls/${encodeURIComponent(id)}/raw`, { text: true });
    } catch (e) {
      raw.textContent = e.message;
    }
  });
  show(main, 
    el('p', {}, el('a', { href: '#/calls' }, '← Calls')),
    el('h1', {}, `Call ${d.id}`),
    facts(r),
    r.error ? section('Error', el('p', { class: 'error' }, `${r.error.kind}: ${r.error.message}`)) : null,
    d.nearest ? section('Replay diff: the nearest recorded call', nearest(d.nearest)) : null,
    section('Request', messages(r.request),
      Object.keys(r.parameters || {}).length ? el('pre', {}, JSON.stringify(r.parameters, null, 2)) : null),
    section('Reply', r.reply ? el('div', { id: 'reply' }, (r.reply.content || []).map(part),
      el('p', { class: 'muted' }, `finish: ${r.reply.finish}${r.reply.id ? ` · id ${r.reply.id}` : ''}`)) : el('p', { class: 'muted' }, 'no reply')),
    section('Attempts', attempts(r.attempts || [])),
    section('Send it again', replay(d.replay)),
    section('As sent and received',
      el('details', {}, el('summary', {}, 'Request body as sent'), el('pre', {}, r.body ? JSON.stringify(r.body, null, 2) : '(none)')),
      rawBox,
      el('details', {}, el('summary', {}, 'The whole record'), el('pre', {}, JSON.stringify(r, null, 2)))));
}
