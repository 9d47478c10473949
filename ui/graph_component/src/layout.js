// A layered layout of the visible graph: each item's layer is its longest path from the top (edges that go
// back in file order are left out, so cycles through collapsed groups cannot loop), then items in a layer are
// ordered by where their inputs sit and packed side by side.

export const ROW = 78;
const GAP = 24;
const CHAR = 7.8; // a character of the 12px bold label, generously

export function itemSize(graph, item) {
  if (item >= graph.count) {
    const gi = item - graph.count;
    const text = Math.max(graph.data.g.name[gi].length + 4, 14, graph.data.g.repeat[gi].length * 0.85);
    return [Math.min(340, Math.max(140, text * CHAR + 28)), 48];
  }
  const op = graph.op(item);
  const extra = graph.pseudo[item] ? graph.data.n.name[item].length : graph.data.n.attrs[item].length * 0.85;
  return [Math.min(300, Math.max(90, Math.max(op.length, extra) * CHAR + 24)), 36];
}

export function layout(graph, visible) {
  const { items, first, edges } = visible;
  const preds = new Map(items.map((it) => [it, []]));
  for (const { s, t } of edges) if (first.get(s) < first.get(t)) preds.get(t).push(s);
  const layer = new Map();
  let depth = 0;
  for (const it of items) {
    let l = 0;
    for (const p of preds.get(it)) l = Math.max(l, layer.get(p) + 1);
    layer.set(it, l);
    depth = Math.max(depth, l);
  }
  const rows = Array.from({ length: depth + 1 }, () => []);
  for (const it of items) rows[layer.get(it)].push(it);
  const box = new Map(); // item -> {x, y, w, h} (x, y: top-left)
  for (let l = 0; l <= depth; l++) placeRow(graph, rows[l], l, preds, box);
  return { box, depth };
}

function placeRow(graph, row, l, preds, box) {
  const wanted = new Map();
  for (const it of row) {
    const ps = preds.get(it);
    let sum = 0;
    for (const p of ps) sum += box.get(p).x + box.get(p).w / 2;
    wanted.set(it, ps.length ? sum / ps.length : 0);
  }
  row.sort((a, b) => wanted.get(a) - wanted.get(b));
  let right = -Infinity;
  let drift = 0;
  const placed = [];
  for (const it of row) {
    const [w, h] = itemSize(graph, it);
    const x = Math.max(wanted.get(it) - w / 2, right + GAP);
    right = x + w;
    drift += wanted.get(it) - (x + w / 2);
    placed.push({ it, x, w, h });
  }
  const shift = row.length ? drift / row.length : 0;
  for (const { it, x, w, h } of placed) box.set(it, { x: x + shift, y: l * ROW + (48 - h) / 2, w, h });
}

// Frames of expanded groups around their visible members; outer groups get wider margins.
export function groupFrames(graph, visible, box) {
  const { count, data } = graph;
  const bounds = new Map();
  for (const it of visible.items) {
    const b = box.get(it);
    let gi = it >= count ? data.g.parent[it - count] : data.n.group[it];
    for (; gi >= 0; gi = data.g.parent[gi]) {
      const f = bounds.get(gi);
      if (!f) bounds.set(gi, { x0: b.x, y0: b.y, x1: b.x + b.w, y1: b.y + b.h, height: 0 });
      else {
        f.x0 = Math.min(f.x0, b.x);
        f.y0 = Math.min(f.y0, b.y);
        f.x1 = Math.max(f.x1, b.x + b.w);
        f.y1 = Math.max(f.y1, b.y + b.h);
      }
    }
  }
  const ids = [...bounds.keys()].sort((a, b) => b - a); // children have larger ids than their parents
  for (const gi of ids) {
    const p = data.g.parent[gi];
    if (p >= 0 && bounds.has(p)) bounds.get(p).height = Math.max(bounds.get(p).height, bounds.get(gi).height + 1);
  }
  const frames = [];
  for (const gi of ids.reverse()) {
    const f = bounds.get(gi);
    const pad = 8 + 7 * f.height;
    frames.push({ group: gi, x: f.x0 - pad, y: f.y0 - pad - 12, w: f.x1 - f.x0 + 2 * pad, h: f.y1 - f.y0 + 2 * pad + 12 });
  }
  return frames; // outermost first
}
