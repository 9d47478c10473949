// The standalone page (python -m core browser-bench): everything is in the page, base64 in <script
// type="application/json"> elements (core/browser/page.py); nothing is fetched. The page's root element
// (<html>) carries data-ready="true" and data-result (JSON) when done, data-error when it failed.
import { benchmark } from "./page.js";

function bytes(base64) {
  const text = atob(base64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

function json(id) {
  const node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : null;
}

export function mountPage(root) {
  const data = json("bench-data");
  const runtimes = json("bench-runtimes");
  const decoded = (r) => (r ? { code: new TextDecoder().decode(bytes(r.code)), wasm: bytes(r.wasm) } : null);
  return benchmark(root, {
    words: json("bench-words") || {},
    meta: data.meta,
    runtimes: { wasm: decoded(runtimes.wasm), webgpu: decoded(runtimes.webgpu) },
    model: bytes(data.model),
    inputs: data.inputs.map((i) => ({ ...i, bytes: bytes(i.data) })),
    reference: data.reference.map((r) => ({ ...r, bytes: bytes(r.data) })),
    standalone: true,
    mark: document.documentElement,
  });
}
