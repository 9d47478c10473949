// The graph view: mount(element, data, options) draws the graph that core/graph/page.py's browser_data
// describes into element. Used by the self-contained HTML page and by the Streamlit component (streamlit.js).
// options: color (the first colour mode: op, dtype or a colouring's name), colourings ({name: {title, keys,
// order, colours, scale}}, more colour modes from Python), selected (a node name to open on), onSelect(name)
// (called when the person selects a node, by a click or a search), words (the view's words in the reader's
// language, keyed by their English: core/graph/page.py's panel_words).
import { colourKeys } from "./colors.js";
import { clip, draw, minimapImage } from "./draw.js";
import { BADGE, layout } from "./layout.js";
import { expandAncestors, groupPath, initialExpansion, readGraph, visibleGraph } from "./model.js";
import { buildPanels, say, showDetails, showLegend, showResults } from "./panels.js";

export { streamlitComponent } from "./streamlit.js";

const COLLAPSE_ABOVE = 300; // graphs with more nodes open with their groups collapsed

function timings() {
  window.__graphTimings ||= {};
  window.__graphTimings.expand ||= [];
  window.__graphTimings.mounts ||= 0;
  return window.__graphTimings;
}

export function mount(root, data, options = {}) {
  const t = timings();
  if (t.dataReceived == null) t.dataReceived = performance.now();
  t.mounts += 1;
  const colourings = options.colourings || {};
  const modeOf = (by) => (by === "op" || by === "dtype" || Object.hasOwn(colourings, by) ? by : "op");
  const words = options.words || {};
  const titleOf = (by) =>
    by === "op" ? say(words, "op type") : by === "dtype" ? say(words, "dtype") : colourings[by].title || by;
  const onSelect = options.onSelect || (() => {});
  const graph = readGraph(data);
  graph.words = words;
  initialExpansion(graph, COLLAPSE_ABOVE);
  root.textContent = "";
  root.setAttribute("data-nodes", String(data.nodeCount));
  const panels = buildPanels(root, data, modeOf(options.color || "op"), colourings, words);
  const canvas = panels.canvas;
  const ctx = canvas.getContext("2d");
  const view = { graph, k: 1, tx: 0, ty: 0, dpr: window.devicePixelRatio || 1, selected: null, width: 0, height: 0 };
  let frame = 0;
  let minimap = null;

  function relayout() {
    const visible = visibleGraph(graph);
    const { box, frames, open, drawn } = layout(graph, visible);
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (const b of [...box.values(), ...frames]) {
      minX = Math.min(minX, b.x); minY = Math.min(minY, b.y);
      maxX = Math.max(maxX, b.x + b.w); maxY = Math.max(maxY, b.y + b.h);
    }
    view.layoutState = { visible, box, frames, open, drawn, bounds: { minX, minY, maxX, maxY } };
    root.setAttribute("data-visible", String(visible.items.length));
    minimap = null;
  }

  function recolour(by) {
    view.colours = colourKeys(graph, by, colourings);
    showLegend(panels, view.colours.legend, titleOf(by));
    root.setAttribute("data-colour", by);
    minimap = null;
  }

  function resize() {
    const r = root.getBoundingClientRect();
    view.width = Math.max(200, r.width);
    view.height = Math.max(200, r.height);
    canvas.width = Math.round(view.width * view.dpr);
    canvas.height = Math.round(view.height * view.dpr);
    canvas.style.width = `${view.width}px`;
    canvas.style.height = `${view.height}px`;
  }

  function render() {
    const start = performance.now();
    frame = 0;
    draw(ctx, view);
    renderMinimap();
    t.frames = (t.frames || []).slice(-199);
    t.frames.push(performance.now() - start); // how long each frame took to draw (the benchmark reads them)
  }
  function request() {
    if (!frame) frame = requestAnimationFrame(render);
  }

  function renderMinimap() {
    const mm = panels.minimap;
    if (!minimap) minimap = minimapImage(mm, view);
    const mctx = mm.getContext("2d");
    mctx.putImageData(minimap.image, 0, 0);
    const { scale: s, ox, oy } = minimap;
    mctx.strokeStyle = "#e8590c";
    mctx.lineWidth = 1.5;
    mctx.strokeRect(ox - (view.tx / view.k) * s, oy - (view.ty / view.k) * s, (view.width / view.k) * s, (view.height / view.k) * s);
  }

  // the whole graph on screen (the Fit button); with ``readable``, as it first opens: a graph too tall or
  // wide to fit with readable labels opens readable at its top instead (the minimap shows the rest)
  function fit(readable = false) {
    const { minX, minY, maxX, maxY } = view.layoutState.bounds;
    const across = (view.width - 40) / (maxX - minX || 1);
    let k = Math.min(1.4, across, (view.height - 90) / (maxY - minY || 1));
    if (readable && k < 0.75) k = Math.max(0.75, Math.min(1, across));
    view.k = Math.max(k, 0.01);
    let left = minX;
    let right = maxX;
    const bottom = minY + (view.height - 90) / view.k;
    if (readable && maxY > bottom) {
      // opened at its top, the rest below: centre what the first screen shows (a detector's input and first
      // convolutions sit right of the middle of branches that spread wide further down, and opened against the
      // right edge under the legend, with the left half of the view empty)
      left = Infinity;
      right = -Infinity;
      for (const b of view.layoutState.box.values()) {
        if (b.y > bottom) continue;
        left = Math.min(left, b.x);
        right = Math.max(right, b.x + b.w);
      }
      if (!Number.isFinite(left)) [left, right] = [minX, maxX];
    }
    const wide = (right - left) * view.k > view.width - 40;
    view.tx = wide ? 20 - left * view.k : view.width / 2 - ((left + right) / 2) * view.k;
    view.ty = 70 - minY * view.k;
    request();
  }

  function centreOn(item) {
    const b = view.layoutState.box.get(item);
    view.k = Math.max(view.k, 1.2);
    view.tx = view.width / 2 - (b.x + b.w / 2) * view.k;
    view.ty = view.height / 2 - (b.y + b.h / 2) * view.k;
  }

  function select(item) {
    view.selected = item;
    if (item != null && item < graph.count) root.setAttribute("data-selected", data.n.name[item]);
    else root.removeAttribute("data-selected");
    showDetails(panels, graph, item);
    request();
  }

  function toggleGroup(gi, open) {
    const start = performance.now();
    graph.expanded[gi] = open ? 1 : 0;
    if (open && graph.owner[gi] >= 0) {
      // a node's bodies open together (an If's two branches side by side)
      for (const child of graph.children[gi]) graph.expanded[child] = 1;
    }
    relayout();
    const holder = graph.owner[gi];
    const item = holder >= 0 ? holder : open ? view.layoutState.visible.rep[graph.firstNode[gi]] : graph.count + gi;
    const frame = open ? view.layoutState.frames.find((f) => f.group === gi) : null;
    if (frame) reveal(frame);
    else if (view.layoutState.box.has(item) && !onScreen(item)) centreOn(item);
    select(holder >= 0 ? holder : open ? null : graph.count + gi);
    render();
    t.expand.push(performance.now() - start);
    root.setAttribute("data-expanded", String(t.expand.length));
  }

  // pan so that an opened frame is in view: centred when it fits, else its top-left corner on screen
  function reveal(f) {
    const sx = f.x * view.k + view.tx;
    const sy = f.y * view.k + view.ty;
    const w = f.w * view.k;
    const h = f.h * view.k;
    if (sx < 0 || sx + w > view.width) view.tx = w <= view.width - 40 ? (view.width - w) / 2 - f.x * view.k : 20 - f.x * view.k;
    if (sy < 50 || sy + h > view.height) view.ty = h <= view.height - 80 ? (view.height - h) / 2 - f.y * view.k : 60 - f.y * view.k;
  }

  function onScreen(item) {
    const b = view.layoutState.box.get(item);
    const sx = b.x * view.k + view.tx;
    const sy = b.y * view.k + view.ty;
    return sx > 0 && sy > 0 && sx < view.width && sy < view.height;
  }

  function jumpTo(node) {
    expandAncestors(graph, node);
    relayout();
    centreOn(node);
    select(node);
  }

  // what lies under a point: a node or closed group (the badge of a node holding bodies opens or closes
  // them), or the title of an open group (closes it)
  function hit(px, py) {
    const x = (px - view.tx) / view.k;
    const y = (py - view.ty) / view.k;
    const { box, frames, visible } = view.layoutState;
    for (const it of visible.items) {
      const b = box.get(it);
      if (x >= b.x && x <= b.x + b.w && y >= b.y && y <= b.y + b.h) {
        const holder = it < graph.count ? graph.holderOf.get(it) : undefined;
        if (holder !== undefined && x >= b.x + b.w - BADGE - 4) return { toggle: holder };
        return { item: it };
      }
    }
    for (let i = frames.length - 1; i >= 0; i--) {
      const f = frames[i];
      if (f.owner != null) continue;
      if (x >= f.x && x <= f.x + f.w && y >= f.y && y <= f.y + 16 / Math.min(1, view.k)) return { frame: f.group };
    }
    return null;
  }

  // pointer: drag pans, a click selects a node, opens a collapsed group, or closes a group by its title
  let drag = null;
  canvas.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, tx: view.tx, ty: view.ty, moved: false };
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x;
    const dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
    view.tx = drag.tx + dx;
    view.ty = drag.ty + dy;
    request();
  });
  canvas.addEventListener("pointerup", (ev) => {
    const click = drag && !drag.moved;
    drag = null;
    if (!click) return;
    const r = canvas.getBoundingClientRect();
    const found = hit(ev.clientX - r.left, ev.clientY - r.top);
    if (!found) select(null);
    else if (found.frame != null) toggleGroup(found.frame, false);
    else if (found.toggle != null) toggleGroup(found.toggle, !graph.expanded[found.toggle]);
    else if (found.item >= graph.count) toggleGroup(found.item - graph.count, true);
    else {
      select(found.item);
      onSelect(data.n.name[found.item]);
    }
  });
  canvas.addEventListener("dblclick", (ev) => {
    // a double click on a node that holds bodies opens or closes them
    const r = canvas.getBoundingClientRect();
    const found = hit(ev.clientX - r.left, ev.clientY - r.top);
    const holder = found && found.item != null ? graph.holderOf.get(found.item) : undefined;
    if (holder !== undefined) toggleGroup(holder, !graph.expanded[holder]);
  });
  canvas.addEventListener(
    "wheel",
    (ev) => {
      ev.preventDefault();
      const r = canvas.getBoundingClientRect();
      const px = ev.clientX - r.left;
      const py = ev.clientY - r.top;
      const k = Math.min(6, Math.max(0.01, view.k * Math.exp(-ev.deltaY * 0.0015)));
      view.tx = px - ((px - view.tx) * k) / view.k;
      view.ty = py - ((py - view.ty) * k) / view.k;
      view.k = k;
      request();
    },
    { passive: false },
  );
  panels.minimap.addEventListener("pointerdown", (ev) => {
    const r = panels.minimap.getBoundingClientRect();
    const wx = ((ev.clientX - r.left) * (panels.minimap.width / r.width) - minimap.ox) / minimap.scale;
    const wy = ((ev.clientY - r.top) * (panels.minimap.height / r.height) - minimap.oy) / minimap.scale;
    view.tx = view.width / 2 - wx * view.k;
    view.ty = view.height / 2 - wy * view.k;
    request();
  });

  panels.search.addEventListener("input", () => {
    const q = panels.search.value.trim().toLowerCase();
    const found = [];
    if (q) {
      for (let i = 0; i < graph.count && found.length < 30; i++) {
        if (data.n.name[i].toLowerCase().includes(q) || graph.op(i).toLowerCase() === q) found.push(i);
      }
    }
    showResults(panels, graph, found, (i) => {
      jumpTo(i);
      onSelect(data.n.name[i]);
    }, q);
  });
  panels.search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && panels.results.firstChild) panels.results.firstChild.click();
  });
  panels.colour.addEventListener("change", () => {
    recolour(panels.colour.value);
    request();
  });
  panels.fit.addEventListener("click", () => fit());
  panels.collapse.addEventListener("click", () => {
    graph.expanded.fill(0);
    relayout();
    select(null);
    fit();
  });
  const observer = new ResizeObserver(() => {
    resize();
    request();
  });
  observer.observe(root);

  resize();
  relayout();
  recolour(modeOf(options.color || "op"));
  fit(true);
  const opening = options.selected ? data.n.name.indexOf(options.selected) : -1;
  if (opening >= 0) jumpTo(opening);
  render();
  t.firstFrame = performance.now();
  t.firstFrameMs = t.firstFrame - t.dataReceived;
  root.setAttribute("data-ready", "true");
  return {
    select: (name) => {
      const i = data.n.name.indexOf(name);
      if (i >= 0) jumpTo(i);
    },
    // a colour mode by name (op, dtype or a colouring's); an unknown one is op type
    setColor: (by) => {
      panels.colour.value = modeOf(by);
      recolour(modeOf(by));
      request();
    },
    // stop drawing and observing: the element is being emptied or reused for another graph
    destroy: () => {
      observer.disconnect();
      if (frame) cancelAnimationFrame(frame);
      frame = 0;
    },
    expandGroup: (path) => {
      for (let gi = 0; gi < graph.groupCount; gi++) if (groupPath(graph, gi).join("/") === path) toggleGroup(gi, true);
    },
    // every group open: the whole graph laid out and drawn (timed, for the benchmark)
    expandAll: () => {
      const start = performance.now();
      graph.expanded.fill(1);
      relayout();
      fit();
      render();
      t.expandAll = performance.now() - start;
    },
    // every open frame on screen, for tests: its group's path, the node holding it (for a node's bodies),
    // and its parent frame's path
    frames: () =>
      view.layoutState.frames.map((f) => ({
        path: groupPath(graph, f.group).join("/"),
        parent: data.g.parent[f.group] >= 0 ? groupPath(graph, data.g.parent[f.group]).join("/") : "",
        owner: f.owner != null ? data.n.name[f.owner] : "",
        x: f.x * view.k + view.tx,
        y: f.y * view.k + view.ty,
        w: f.w * view.k,
        h: f.h * view.k,
      })),
    // where an item is on screen, for tests and benchmarks: a node by name or a group by its path
    screenBox: (nameOrPath) => {
      let item = data.n.name.indexOf(nameOrPath);
      if (item < 0) {
        for (let gi = 0; gi < graph.groupCount; gi++) if (groupPath(graph, gi).join("/") === nameOrPath) item = graph.count + gi;
      }
      // a node inside a closed group or node: where that group or node is
      if (item >= 0 && item < graph.count && !view.layoutState.box.has(item)) item = view.layoutState.visible.rep[item];
      const b = view.layoutState.box.get(item);
      if (!b) return null;
      return { x: b.x * view.k + view.tx, y: b.y * view.k + view.ty, w: b.w * view.k, h: b.h * view.k };
    },
    clip,
  };
}
