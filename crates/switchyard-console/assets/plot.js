// A stacked bar chart as inline SVG: one bar per bucket, one colour per group. Drawn
// here, in a few dozen lines, rather than with a charting library.

const NS = 'http://www.w3.org/2000/svg';
const COLOURS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

function svg(tag, attrs, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

export function colour(i) {
  return COLOURS[i % COLOURS.length];
}

// buckets: ['2026-12-03', …]; groups: ['mock/echo', …]; value(bucket, group) → number.
export function stackedBars({ buckets, groups, value, format, width = 900, height = 300 }) {
  const pad = { left: 90, right: 10, top: 10, bottom: 40 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const totals = buckets.map((b) => groups.reduce((s, g) => s + value(b, g), 0));
  const max = Math.max(...totals, 0) || 1;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'plot', role: 'img' });
  for (let i = 0; i <= 4; i += 1) {
    const y = pad.top + h - (h * i) / 4;
    root.append(svg('line', { x1: pad.left, x2: pad.left + w, y1: y, y2: y, class: 'grid' }));
    root.append(svg('text', { x: pad.left - 6, y: y + 4, 'text-anchor': 'end', class: 'axis' }, format((max * i) / 4)));
  }
  const step = w / Math.max(buckets.length, 1);
  const bar = Math.max(1, Math.min(48, step * 0.8));
  const every = Math.ceil(buckets.length / 10);
  buckets.forEach((b, i) => {
    let y = pad.top + h;
    groups.forEach((g, j) => {
      const v = value(b, g);
      if (v <= 0) return;
      const bh = (v / max) * h;
      y -= bh;
      const rect = svg('rect', { x: pad.left + i * step + (step - bar) / 2, y, width: bar, height: bh, fill: colour(j) });
      rect.append(svg('title', {}, `${b} · ${g || '(none)'}: ${format(v)}`));
      root.append(rect);
    });
    if (i % every === 0) {
      root.append(svg('text', { x: pad.left + i * step + step / 2, y: height - pad.bottom + 16, 'text-anchor': 'middle', class: 'axis' }, b.replace('T', ' ') + (b.length === 13 ? 'h' : '')));
    }
  });
  return root;
}
