// Colour keys: by op type (the most frequent ops get their own colour), by dtype (fixed colours), or by a
// colouring from Python ({title, keys: {nodeName: category}, order, colours, scale, marked}): its categories in its
// order (else by count), its colours (else the palette, or a light-to-dark red heat scale when it is a scale).

const PALETTE = [
  "#8ab4f8", "#f6ae77", "#93d6a3", "#f28b96", "#c3a6f0", "#f7d774", "#7fd3d3", "#e6a3cf", "#b8d36f",
  "#a7b7cc", "#f5b3b3", "#9fc6e7", "#d9c089", "#a3e0c4", "#d2a6a6", "#b3b3e6", "#e8c39e", "#9ed99e", "#c7c7c7",
];
const DTYPES = {
  fp32: "#8ab4f8", fp16: "#f6ae77", bf16: "#f7d774", fp64: "#6f9be0", int8: "#f28b96", uint8: "#e6a3cf",
  qdq: "#c3a6f0", int64: "#b8c4d0", int32: "#a7d0c8", bool: "#93d6a3", "?": "#dddddd",
};
export const OTHER = "#d9d9d9";
export const IO_COLOUR = "#eef1f6";
export const NONE = "—"; // the category of a node a colouring does not name
const NONE_COLOUR = "#ffffff"; // white boxes stand out on the tinted group frames
const HEAT = [
  [255, 236, 224],
  [252, 187, 161],
  [251, 106, 74],
  [203, 24, 29],
  [103, 0, 13],
];

// bin i of n on the heat scale, light (fast) to dark red (slow)
export function heat(i, n) {
  const t = n <= 1 ? 1 : i / (n - 1);
  const f = t * (HEAT.length - 1);
  const lo = Math.min(HEAT.length - 2, Math.floor(f));
  const w = f - lo;
  const c = HEAT[lo].map((v, j) => Math.round(v + (HEAT[lo + 1][j] - v) * w));
  return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

export function colourKeys(graph, by, colourings = {}) {
  const custom = by !== "op" && by !== "dtype" ? colourings[by] : null;
  if (custom) return customKeys(graph, custom);
  const { count, data, pseudo } = graph;
  const keyOf = (i) => (by === "dtype" ? data.dtypes[data.n.dtype[i]] || "?" : graph.op(i));
  const counts = new Map();
  for (let i = 0; i < count; i++) if (!pseudo[i]) counts.set(keyOf(i), (counts.get(keyOf(i)) || 0) + 1);
  const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const colour = new Map();
  const legend = [];
  let other = 0;
  ranked.forEach(([key, n], rank) => {
    let c = by === "dtype" ? DTYPES[key] : PALETTE[rank];
    if (by === "dtype" && !c) c = PALETTE[(rank + 9) % PALETTE.length];
    if (c) {
      colour.set(key, c);
      legend.push({ key, colour: c, count: n });
    } else other += n;
  });
  if (other) legend.push({ key: "other", colour: OTHER, count: other });
  const nodeColour = new Array(count);
  for (let i = 0; i < count; i++) nodeColour[i] = pseudo[i] ? IO_COLOUR : colour.get(keyOf(i)) || OTHER;
  return { nodeColour, legend, groupColour: dominant(graph, nodeColour) };
}

function customKeys(graph, colouring) {
  const { count, data, pseudo } = graph;
  const keys = colouring.keys || {};
  const category = new Array(count);
  const counts = new Map();
  for (let i = 0; i < count; i++) {
    if (pseudo[i]) continue;
    const name = data.n.name[i];
    const c = Object.prototype.hasOwnProperty.call(keys, name) ? String(keys[name]) : NONE;
    category[i] = c;
    counts.set(c, (counts.get(c) || 0) + 1);
  }
  // the legend: the given order first (a scale keeps every bin, even an empty one), then the rest by count
  const ordered = (colouring.order || []).map(String).filter((c) => c !== NONE && (colouring.scale || counts.has(c)));
  const given = new Set(ordered);
  const rest = [...counts.entries()]
    .filter(([c]) => c !== NONE && !given.has(c))
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([c]) => c);
  const categories = [...ordered, ...rest];
  const colours = colouring.colours || {};
  const colour = new Map();
  const legend = [];
  categories.forEach((c, rank) => {
    let col = colours[c];
    if (!col) col = colouring.scale && rank < ordered.length ? heat(rank, ordered.length) : PALETTE[rank % PALETTE.length];
    colour.set(c, col);
    legend.push({ key: c, colour: col, count: counts.get(c) || 0 });
  });
  if (counts.has(NONE)) {
    // the nodes the colouring does not name, under the name it gives them ("kept as it is", "inside a body")
    colour.set(NONE, NONE_COLOUR);
    legend.push({ key: String(colouring.rest || NONE), colour: NONE_COLOUR, count: counts.get(NONE) });
  }
  const nodeColour = new Array(count);
  for (let i = 0; i < count; i++) nodeColour[i] = pseudo[i] ? IO_COLOUR : colour.get(category[i]);
  const groupColour = dominant(graph, nodeColour);
  return { nodeColour, legend, groupColour: marking(graph, category, colour, colouring.marked, groupColour) };
}

// A closed group that holds a node of a marked category (a diff's "added" or "changed") takes that category's
// colour, the first one of ``marked`` it holds, whatever most of its nodes are: a change is never hidden in it.
function marking(graph, category, colour, marked, groupColour) {
  if (!marked || !marked.length) return groupColour;
  const rank = new Map(marked.map((c, r) => [String(c), r]));
  const best = new Array(graph.groupCount).fill(marked.length);
  for (let i = 0; i < graph.count; i++) {
    const r = rank.get(category[i]);
    if (r === undefined) continue;
    for (let gi = graph.data.n.group[i]; gi >= 0; gi = graph.data.g.parent[gi]) best[gi] = Math.min(best[gi], r);
  }
  return groupColour.map((c, gi) => (best[gi] < marked.length ? colour.get(String(marked[best[gi]])) || c : c));
}

// The most frequent colour inside each group, for its collapsed box.
function dominant(graph, nodeColour) {
  const tallies = Array.from({ length: graph.groupCount }, () => new Map());
  for (let i = 0; i < graph.count; i++) {
    for (let gi = graph.data.n.group[i]; gi >= 0; gi = graph.data.g.parent[gi]) {
      const t = tallies[gi];
      t.set(nodeColour[i], (t.get(nodeColour[i]) || 0) + 1);
    }
  }
  return tallies.map((t) => [...t.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] || OTHER);
}
