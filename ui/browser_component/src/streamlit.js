// The Benchmark page's component (ui/browser_bench.py, st.components.v2). Its data is bytes, for this session's
// browser alone: a one-line JSON header {token, meta, words, parts, inputs, reference}, then the runtime, its
// gzipped .wasm, the model and the inputs, each at the [offset, length] the header gives. One run per token: a
// rerun with the same data (sent as a reference to the browser's cached copy) keeps what is shown; the result
// goes back to Python as the state value "result" (JSON text carrying the token), which saves it.
import { benchmark } from "./page.js";

const mounted = new WeakMap(); // parentElement -> token

export function streamlitComponent(component) {
  const { parentElement, setStateValue } = component;
  const all = component.data instanceof Uint8Array ? component.data : new Uint8Array(component.data || []);
  let end = all.indexOf(10);
  if (end < 0) end = all.length;
  const head = JSON.parse(new TextDecoder().decode(all.subarray(0, end)));
  if (mounted.get(parentElement) === head.token) return undefined;
  mounted.set(parentElement, head.token);
  parentElement.replaceChildren();
  const body = all.subarray(end + 1);
  const part = (at) => (at ? body.slice(at[0], at[0] + at[1]) : null);
  const text = (at) => new TextDecoder().decode(part(at));
  const p = head.parts;
  const root = document.createElement("div");
  root.className = "browser-bench";
  parentElement.append(root);
  benchmark(root, {
    words: head.words || {},
    meta: head.meta,
    runtimes: {
      wasm: { code: text(p.ort_wasm), wasm: part(p.wasm_wasm) },
      webgpu: p.ort_webgpu ? { code: text(p.ort_webgpu), wasm: part(p.webgpu_wasm) } : null,
    },
    model: part(p.model),
    inputs: head.inputs.map((i) => ({ ...i, bytes: part(i.at) })),
    reference: head.reference.map((r) => ({ ...r, bytes: part(r.at) })),
    standalone: false,
    onDone: (result) => setStateValue("result", JSON.stringify({ ...result, token: head.token })),
    onError: (message) => setStateValue("result", JSON.stringify({ token: head.token, error: message })),
  });
  return undefined;
}
