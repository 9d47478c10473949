// The Streamlit side (ui/graph_canvas.py, st.components.v2). Two elements make one graph:
//  - the view: data is bytes, a one-line JSON header {key, digest, height} then the graph's JSON (browser_data
//    plus colourings). Streamlit calls the default export when the element mounts and again, on the same
//    parentElement, whenever its data (or the theme) change; a rerun with the same bytes is sent as a
//    reference to the browser's cached copy. The view is mounted once per parentElement and digest: a call
//    with the same digest keeps the drawn graph, its layout, zoom and open groups.
//  - the control: tiny JSON {key, colour, selected}, sent every rerun, applied to the view with that key only
//    when a value changes, so colour and selection from Python never resend the graph.
import { mount } from "./index.js";

const mounted = new WeakMap(); // parentElement -> {digest, key, api, root, applied}

function registry() {
  window.__graphCanvas ||= { views: new Map(), wanted: new Map() };
  return window.__graphCanvas;
}

function header(bytes) {
  let end = bytes.indexOf(10);
  if (end < 0) end = bytes.length;
  return { meta: JSON.parse(new TextDecoder().decode(bytes.subarray(0, end))), rest: bytes.subarray(end + 1) };
}

// apply what Python wants (colour, selected) where it differs from what was last applied
function apply(state, wanted) {
  if (!wanted) return;
  if (wanted.colour !== state.applied.colour) {
    state.applied.colour = wanted.colour;
    state.api.setColor(wanted.colour);
  }
  if (wanted.selected !== state.applied.selected) {
    state.applied.selected = wanted.selected;
    // a node the person just clicked comes back from Python as selected: it is already shown, leave the view be
    const shown = state.root.getAttribute("data-selected") || "";
    if (wanted.selected && wanted.selected !== shown) state.api.select(wanted.selected);
  }
}

export function streamlitComponent(component) {
  const { parentElement, setStateValue } = component;
  const bytes = component.data instanceof Uint8Array ? component.data : new Uint8Array(component.data || []);
  const { meta, rest } = header(bytes);
  const reg = registry();
  const t = (window.__graphTimings ||= {});
  t.calls = (t.calls || 0) + 1;
  let state = mounted.get(parentElement);
  if (state && state.digest === meta.digest && state.key === meta.key) return () => release(parentElement);
  if (state) {
    state.api.destroy();
    state.root.remove();
    if (reg.views.get(state.key) === state) reg.views.delete(state.key);
  }
  t.dataReceived = performance.now();
  const payload = JSON.parse(new TextDecoder().decode(rest));
  const root = document.createElement("div");
  root.className = "graph-canvas";
  root.style.height = `${meta.height}px`;
  root.style.border = "1px solid #d6dce6";
  root.style.borderRadius = "8px";
  parentElement.appendChild(root);
  const wanted = reg.wanted.get(meta.key) || {};
  const api = mount(root, payload.graph, {
    colourings: payload.colourings,
    words: payload.words || {},
    color: wanted.colour || "op",
    selected: wanted.selected || "",
    onSelect: (name) => setStateValue("selected", name),
  });
  state = { digest: meta.digest, key: meta.key, api, root, applied: { colour: wanted.colour, selected: wanted.selected } };
  state.want = (w) => apply(state, w);
  mounted.set(parentElement, state);
  reg.views.set(meta.key, state);
  window.__graphView = api; // the last mounted view, for tests and benchmarks (as on the HTML page)
  return () => release(parentElement);
}

function release(parentElement) {
  const state = mounted.get(parentElement);
  if (!state) return;
  state.api.destroy();
  state.root.remove();
  mounted.delete(parentElement);
  const reg = registry();
  if (reg.views.get(state.key) === state) reg.views.delete(state.key);
}

// The control element's module (CONTROL_JS in ui/graph_canvas.py) is a few lines, not this bundle: it records
// {key, colour, selected} in window.__graphCanvas.wanted and calls views.get(key).want(...) when it is there.
