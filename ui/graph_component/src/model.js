// The graph as the renderer holds it: columns from Python (core/graph/page.py browser_data), groups that
// collapse and expand, and the visible graph (nodes and collapsed groups) with its edges.

export function readGraph(data) {
  const n = data.n;
  const g = data.g;
  const count = n.name.length;
  const groupCount = g.name.length;
  const children = Array.from({ length: groupCount }, () => []);
  for (let i = 0; i < groupCount; i++) if (g.parent[i] >= 0) children[g.parent[i]].push(i);
  const folded = Array.from({ length: count }, () => null);
  for (const [node, name, shape, dtype] of n.folded) (folded[node] ||= []).push({ name, shape, dtype });
  const pseudo = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    const op = data.ops[n.op[i]];
    if (op === "Input" || op === "Output") pseudo[i] = 1;
  }
  const inEdges = Array.from({ length: count }, () => []);
  const outEdges = Array.from({ length: count }, () => []);
  for (let e = 0; e < data.e.s.length; e++) {
    outEdges[data.e.s[e]].push(e);
    inEdges[data.e.t[e]].push(e);
  }
  return {
    data,
    count,
    groupCount,
    children,
    folded,
    pseudo,
    inEdges,
    outEdges,
    expanded: new Uint8Array(groupCount),
    op: (i) => data.ops[n.op[i]],
    label: (e) => data.labels[data.e.label[e]],
  };
}

export function groupPath(graph, group) {
  const names = [];
  for (let gi = group; gi >= 0; gi = graph.data.g.parent[gi]) names.unshift(graph.data.g.name[gi]);
  return names;
}

// Open every group (small graphs) or only the top ones' parents (large graphs stay collapsed).
export function initialExpansion(graph, threshold) {
  graph.expanded.fill(graph.data.nodeCount <= threshold ? 1 : 0);
}

export function expandAncestors(graph, node) {
  for (let gi = graph.data.n.group[node]; gi >= 0; gi = graph.data.g.parent[gi]) graph.expanded[gi] = 1;
}

// Items: a node is item i (< count), a collapsed group is item count + g.
export function visibleGraph(graph) {
  const { count, groupCount, data, expanded } = graph;
  const parent = data.g.parent;
  const top = new Int32Array(groupCount); // the outermost collapsed group at or above g, or -1
  for (let gi = 0; gi < groupCount; gi++) {
    const above = parent[gi] >= 0 ? top[parent[gi]] : -1;
    top[gi] = above >= 0 ? above : expanded[gi] ? -1 : gi;
  }
  const rep = new Int32Array(count);
  const first = new Map(); // item -> its first node (file order)
  for (let i = 0; i < count; i++) {
    const gi = data.n.group[i];
    const item = gi >= 0 && top[gi] >= 0 ? count + top[gi] : i;
    rep[i] = item;
    if (!first.has(item)) first.set(item, i);
  }
  const items = [...first.keys()].sort((a, b) => first.get(a) - first.get(b));
  const edgeMap = new Map();
  const span = count + groupCount;
  for (let e = 0; e < data.e.s.length; e++) {
    const s = rep[data.e.s[e]];
    const t = rep[data.e.t[e]];
    if (s === t) continue;
    const key = s * span + t;
    if (!edgeMap.has(key)) edgeMap.set(key, { s, t, edge: e });
  }
  return { items, rep, first, edges: [...edgeMap.values()] };
}
