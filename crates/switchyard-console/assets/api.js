// Fetches from /console/api/, with the admin key when the gateway asks for one. The key
// lives in this tab's sessionStorage only (never a cookie: no other site can make the
// browser send it).

const STORE = 'switchyard-console-key';
let waiting = null;

export function forgetKey() {
  sessionStorage.removeItem(STORE);
}

export function hasKey() {
  return sessionStorage.getItem(STORE) !== null;
}

function askKey(reason) {
  if (waiting) return waiting;
  const dialog = document.getElementById('key-dialog');
  const form = document.getElementById('key-form');
  const input = document.getElementById('key-input');
  document.getElementById('key-reason').textContent = reason;
  waiting = new Promise((resolve) => {
    form.onsubmit = (e) => {
      e.preventDefault();
      sessionStorage.setItem(STORE, input.value.trim());
      input.value = '';
      dialog.close();
      waiting = null;
      resolve();
    };
  });
  dialog.showModal();
  input.focus();
  return waiting;
}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
  }
}

async function request(path) {
  const headers = {};
  const key = sessionStorage.getItem(STORE);
  if (key) headers.Authorization = `Bearer ${key}`;
  return fetch(path, { headers, cache: 'no-store' });
}

// GET a console endpoint; asks for the key on 401 and tries again.
export async function get(path, { text = false } = {}) {
  for (;;) {
    const r = await request(path);
    if (r.status === 401) {
      const body = await r.json().catch(() => null);
      forgetKey();
      await askKey((body && body.error && body.error.message) || 'An admin key is needed.');
      continue;
    }
    if (!r.ok) {
      throw new ApiError(r.status, await r.json().catch(() => null));
    }
    document.getElementById('forget-key').hidden = !hasKey();
    return text ? r.text() : r.json();
  }
}

// A query string from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
