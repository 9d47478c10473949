// A layout per open group (as Model Explorer does): each open group, and each open node that holds bodies,
// is laid out on its own, then takes its place in its parent as one box, so open groups never overlap. Inside
// a container, an item's layer is its longest path from the top (edges that go back in file order are left
// out, so cycles through closed groups cannot loop), items in a layer are ordered by where their inputs sit
// and packed side by side, and each layer is as tall as its tallest item.

const LAYER_GAP = 30;
const GAP = 24;
const CHAR = 7.8; // a character of the 12px bold label, generously
const PAD = 12; // inside an open group's frame
const TITLE = 20; // an open group's title line
export const HEADER = 36; // an open node's own box, at the top of the frame holding its bodies
export const BADGE = 18; // the ▸/▾ at the right of a node that holds bodies

export function itemSize(graph, item) {
  if (item >= graph.count) {
    const gi = item - graph.count;
    const text = Math.max(graph.data.g.name[gi].length + 4, 14, graph.data.g.repeat[gi].length * 0.85);
    return [Math.min(340, Math.max(140, text * CHAR + 28)), 48];
  }
  const op = graph.op(item);
  const extra = graph.pseudo[item] ? graph.data.n.name[item].length : graph.data.n.attrs[item].length * 0.85;
  const badge = graph.holderOf.has(item) ? BADGE : 0;
  return [Math.min(300, Math.max(90, Math.max(op.length, extra) * CHAR + 24)) + badge, 36];
}

// The container an item sits in: -1 (the graph) or an open group.
function containerOf(graph, item) {
  return item >= graph.count ? graph.data.g.parent[item - graph.count] : graph.data.n.group[item];
}

// What stands for open group g in its parent: the node that holds it, or the group's own compound item.
function standIn(graph, gi) {
  return graph.owner[gi] >= 0 ? graph.owner[gi] : graph.count + gi;
}

// Each edge between two items, lifted to the children of the innermost container holding both ends (for the
// layout), and the edges to draw: an edge into an open node's bodies from outside it (a value a branch
// captures from the graph around it) is drawn to that node, where the node's own inputs arrive.
function liftedEdges(graph, visible) {
  const parent = graph.data.g.parent;
  const byContainer = new Map();
  const drawn = new Map();
  const chain = (item) => {
    const out = [];
    for (let c = containerOf(graph, item); c >= 0; c = parent[c]) out.push(c);
    return out;
  };
  for (const { s, t, edge } of visible.edges) {
    const cs = chain(s);
    const ct = new Set(chain(t));
    let lca = -1;
    let below = -1; // the child of lca on s's side
    for (const c of cs) {
      if (ct.has(c)) {
        lca = c;
        break;
      }
      below = c;
    }
    const ls = below < 0 ? s : standIn(graph, below);
    let lt = t;
    let into = t;
    for (let c = containerOf(graph, t); c !== lca && c >= 0; c = parent[c]) {
      lt = standIn(graph, c);
      if (graph.owner[c] >= 0) into = graph.owner[c];
    }
    if (into !== s && !drawn.has(s * (graph.count + graph.groupCount) + into)) {
      drawn.set(s * (graph.count + graph.groupCount) + into, { s, t: into, edge });
    }
    if (ls === lt) continue;
    if (!byContainer.has(lca)) byContainer.set(lca, []);
    byContainer.get(lca).push([ls, lt]);
  }
  return { byContainer, drawn: [...drawn.values()] };
}

export function layout(graph, visible) {
  const { count, expanded, data } = graph;
  const kids = new Map([[-1, []]]); // container -> its children: visible items and open groups' compounds
  const order = new Map(); // child -> file-order key
  for (const it of visible.items) {
    const c = containerOf(graph, it);
    if (!kids.has(c)) kids.set(c, []);
    kids.get(c).push(it);
    order.set(it, visible.first.get(it));
  }
  for (let gi = 0; gi < graph.groupCount; gi++) {
    if (!expanded[gi] || !isShown(graph, gi)) continue;
    if (!kids.has(gi)) kids.set(gi, []);
    if (graph.owner[gi] >= 0) continue; // an open node's bodies are drawn inside that node
    const p = data.g.parent[gi];
    if (!kids.has(p)) kids.set(p, []);
    kids.get(p).push(count + gi);
    order.set(count + gi, graph.firstNode[gi]);
  }
  const { byContainer: edges, drawn } = liftedEdges(graph, visible);
  const rel = new Map(); // child -> {x, y, w, h} inside its container
  const size = new Map(); // container -> [w, h] of its content
  const place = (c) => {
    const members = kids.get(c) || [];
    for (const it of members) {
      if (it >= count) {
        if (expanded[it - count]) place(it - count);
      } else if (graph.holderOf.has(it) && expanded[graph.holderOf.get(it)]) place(graph.holderOf.get(it));
    }
    size.set(c, arrange(graph, members, edges.get(c) || [], order, size, rel));
  };
  place(-1);
  const box = new Map();
  const frames = [];
  const open = new Map(); // a node whose bodies are open -> its whole frame
  const put = (c, ox, oy) => {
    for (const it of kids.get(c) || []) {
      const r = rel.get(it);
      const x = ox + r.x;
      const y = oy + r.y;
      if (it >= count && expanded[it - count]) {
        frames.push({ group: it - count, x, y, w: r.w, h: r.h });
        put(it - count, x + PAD, y + TITLE);
        continue;
      }
      const holder = it < count ? graph.holderOf.get(it) : undefined;
      if (holder !== undefined && expanded[holder]) {
        const frame = { group: holder, owner: it, x, y, w: r.w, h: r.h };
        frames.push(frame);
        open.set(it, frame);
        box.set(it, { x, y, w: r.w, h: HEADER });
        put(holder, x + PAD, y + HEADER + PAD);
        continue;
      }
      box.set(it, { x, y, w: r.w, h: r.h });
    }
  };
  put(-1, 0, 0);
  return { box, frames, open, drawn };
}

// Whether group gi is open and every group above it is open too.
function isShown(graph, gi) {
  for (let g = gi; g >= 0; g = graph.data.g.parent[g]) if (!graph.expanded[g]) return false;
  return true;
}

function childSize(graph, it, size) {
  const { count, expanded } = graph;
  if (it >= count && expanded[it - count]) {
    const [w, h] = size.get(it - count);
    const title = Math.min(360, (graph.data.g.name[it - count].length + 10) * 7);
    return [Math.max(w + 2 * PAD, 140, title), h + TITLE + PAD];
  }
  const holder = it < count ? graph.holderOf.get(it) : undefined;
  if (holder !== undefined && expanded[holder]) {
    const [w, h] = size.get(holder);
    return [Math.max(w + 2 * PAD, itemSize(graph, it)[0]), HEADER + h + 2 * PAD];
  }
  return itemSize(graph, it);
}

// Lay out one container's children in layers; their places go in rel, relative to the container's content.
function arrange(graph, members, edges, order, size, rel) {
  const items = [...members].sort((a, b) => order.get(a) - order.get(b));
  const preds = new Map(items.map((it) => [it, []]));
  const seen = new Set();
  for (const [s, t] of edges) {
    const key = `${s}:${t}`;
    if (order.get(s) < order.get(t) && !seen.has(key)) {
      seen.add(key);
      preds.get(t).push(s);
    }
  }
  const layer = new Map();
  let depth = 0;
  for (const it of items) {
    let l = 0;
    for (const p of preds.get(it)) l = Math.max(l, layer.get(p) + 1);
    layer.set(it, l);
    depth = Math.max(depth, l);
  }
  const rows = Array.from({ length: items.length ? depth + 1 : 0 }, () => []);
  for (const it of items) rows[layer.get(it)].push(it);
  let y = 0;
  let minX = Infinity;
  let maxX = -Infinity;
  for (const row of rows) {
    const height = placeRow(graph, row, y, preds, rel, size);
    for (const it of row) {
      minX = Math.min(minX, rel.get(it).x);
      maxX = Math.max(maxX, rel.get(it).x + rel.get(it).w);
    }
    y += height + LAYER_GAP;
  }
  if (!items.length) return [0, 0];
  for (const it of items) rel.get(it).x -= minX;
  return [maxX - minX, y - LAYER_GAP];
}

function placeRow(graph, row, y, preds, rel, size) {
  const wanted = new Map();
  for (const it of row) {
    const ps = preds.get(it);
    let sum = 0;
    for (const p of ps) sum += rel.get(p).x + rel.get(p).w / 2;
    wanted.set(it, ps.length ? sum / ps.length : 0);
  }
  row.sort((a, b) => wanted.get(a) - wanted.get(b));
  let right = -Infinity;
  let drift = 0;
  let height = 48;
  const placed = [];
  for (const it of row) {
    const [w, h] = childSize(graph, it, size);
    const x = Math.max(wanted.get(it) - w / 2, right + GAP);
    right = x + w;
    drift += wanted.get(it) - (x + w / 2);
    height = Math.max(height, h);
    placed.push({ it, x, w, h });
  }
  const shift = row.length ? drift / row.length : 0;
  for (const { it, x, w, h } of placed) rel.set(it, { x: x + shift, y: y + Math.max(0, (48 - h) / 2), w, h });
  return height;
}
