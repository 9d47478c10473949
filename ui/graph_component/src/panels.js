// The DOM around the canvas: toolbar (search, colour switch), legend, details and minimap. Strings from the
// model only ever go in as textContent. Every word the view shows goes through say(): its English is the key of
// the words Python passes in the reader's language (core/graph/page.py: PANEL_WORDS, one catalog for both).
import { groupPath } from "./model.js";
import CSS from "./panels.css"; // minified as text by ../bundle.mjs

export function say(words, english, values = {}) {
  const text = (words && words[english]) || english;
  return text.replace(/\{(\w+)\}/g, (all, name) => (name in values ? String(values[name]) : all));
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

export function buildPanels(root, data, colour, colourings = {}, words = {}) {
  root.classList.add("gv-root");
  const style = el("style");
  style.textContent = CSS;
  const canvas = el("canvas");
  const bar = el("div", "gv-bar");
  const title = el("div", "gv-title", say(words, "{name} · {count} nodes", { name: data.name, count: data.nodeCount.toLocaleString("en") }));
  title.title = data.notes.join("\n");
  const search = el("input");
  search.type = "search";
  search.placeholder = say(words, "Find a node by name or op");
  search.setAttribute("aria-label", say(words, "Find a node by name or op"));
  const colourSelect = el("select");
  colourSelect.setAttribute("aria-label", say(words, "Colour by"));
  const modes = [["op", say(words, "Colour: op type")], ["dtype", say(words, "Colour: dtype")]];
  for (const [name, c] of Object.entries(colourings)) modes.push([name, say(words, "Colour: {title}", { title: c.title || name })]);
  for (const [value, label] of modes) {
    const o = el("option", null, label);
    o.value = value;
    colourSelect.append(o);
  }
  colourSelect.value = colour;
  const fit = el("button", null, say(words, "Fit"));
  const collapse = el("button", null, say(words, "Collapse all"));
  bar.append(title, search, colourSelect, fit, collapse);
  const results = el("div", "gv-results");
  const legend = el("div", "gv-legend");
  const details = el("div", "gv-details");
  const minimap = el("canvas", "gv-minimap");
  minimap.width = 180;
  minimap.height = 140;
  root.append(style, canvas, bar, results, legend, details, minimap);
  return { canvas, search, colour: colourSelect, fit, collapse, results, legend, details, minimap, words };
}

export function showLegend(panels, legend, title) {
  panels.legend.textContent = "";
  panels.legend.append(el("b", null, title));
  for (const { key, colour, count } of legend) {
    const row = el("div");
    const swatch = el("i");
    swatch.style.background = colour;
    const name = key === "other" ? say(panels.words, "other") : key;
    row.append(swatch, el("b", null, name), el("span", null, count.toLocaleString("en")));
    row.querySelector("b").style.fontWeight = "400";
    panels.legend.append(row);
  }
}

export function showResults(panels, graph, found, jumpTo, query) {
  panels.results.textContent = "";
  if (query && !found.length) panels.results.append(el("button", null, say(panels.words, "no node matches")));
  for (const i of found) {
    const b = el("button", null, graph.data.n.name[i]);
    b.append(el("small", null, graph.op(i)));
    b.addEventListener("click", () => {
      panels.results.textContent = "";
      jumpTo(i);
    });
    panels.results.append(b);
  }
}

function line(parent, key, value, words) {
  const p = el("p");
  p.append(el("span", "k", `${say(words, key)} `), document.createTextNode(value));
  parent.append(p);
}

export function showDetails(panels, graph, item) {
  const d = panels.details;
  const w = panels.words;
  d.textContent = "";
  if (item == null) return;
  const { data } = graph;
  if (item >= graph.count) {
    const gi = item - graph.count;
    d.append(el("h4", null, groupPath(graph, gi).join(" › ")));
    line(d, "nodes", data.g.count[gi].toLocaleString("en"), w);
    line(d, "kind", say(w, data.g.kind[gi]), w);
    if (data.g.repeat[gi]) line(d, "repeated", data.g.repeat[gi], w);
    d.append(el("p", "k", say(w, "click the box to open it; click an open group's title to close it")));
    return;
  }
  d.append(el("h4", null, `${graph.op(item)} · ${data.n.name[item]}`));
  const g = data.n.group[item];
  if (g >= 0) line(d, "in", groupPath(graph, g).join(" › "), w);
  if (data.n.attrs[item] && !graph.pseudo[item]) line(d, "attributes", data.n.attrs[item], w);
  for (const e of graph.inEdges[item]) line(d, "input", `${data.e.tensor[e]}  ${graph.label(e)}`, w);
  for (const f of graph.folded[item] || []) {
    line(d, "weight", `${f.name}  ${f.dtype} ${f.shape}`, w);
    if (f.stats) d.append(el("p", "k", `   ${f.stats}`));
  }
  for (const e of graph.outEdges[item]) line(d, "output", `${data.e.tensor[e]}  ${graph.label(e)}`, w);
  const holder = graph.holderOf.get(item);
  if (holder !== undefined) {
    const bodies = graph.children[holder].map((c) => `${data.g.name[c]} (${data.g.count[c].toLocaleString("en")})`);
    line(d, "holds", bodies.join(", "), w);
    const how = graph.expanded[holder]
      ? "click ▸ at the node's right, or double-click it, to close them"
      : "click ▸ at the node's right, or double-click it, to open them inside the node";
    d.append(el("p", "k", say(w, how)));
  }
}
