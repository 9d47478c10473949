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
  for (const [node, name, shape, dtype, stats] of n.folded) (folded[node] ||= []).push({ name, shape, dtype, stats });
  const pseudo = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    const op = data.ops[n.op[i]];
    if (op === "Input" || op === "Output") pseudo[i] = 1;
  }
  // "node" groups hold the bodies of one node (If/Loop/Scan branches, a function's body): drawn inside it
  const owner = g.owner || new Array(groupCount).fill(-1);
  const holderOf = new Map(); // node -> its "node" group
  for (let i = 0; i < groupCount; i++) if (owner[i] >= 0) holderOf.set(owner[i], i);
  const firstNode = new Int32Array(groupCount).fill(count); // the first node (file order) inside each group
  for (let i = count - 1; i >= 0; i--) for (let gi = n.group[i]; gi >= 0; gi = g.parent[gi]) firstNode[gi] = i;
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
    owner,
    holderOf,
    firstNode,
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

// Items: a node is item i (< count), a collapsed group is item count + g. The nodes inside a closed "node"
// group are shown by the node that holds them.
export function visibleGraph(graph) {
  const { count, groupCount, data, expanded, owner } = graph;
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
    const closed = gi >= 0 ? top[gi] : -1;
    const item = closed < 0 ? i : owner[closed] >= 0 ? owner[closed] : count + closed;
    rep[i] = item;
    if (!first.has(item)) first.set(item, i);
  }
  for (const [item, node] of first) if (item < count && node !== item) first.set(item, item); // a holder's own place
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
