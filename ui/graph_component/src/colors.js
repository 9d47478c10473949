// Colour keys: by op type (the most frequent ops get their own colour) or by dtype (fixed colours).

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

export function colourKeys(graph, by) {
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
