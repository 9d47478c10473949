// The main thread's part: what this browser is (environment), which backend runs (WebGPU only with an adapter and
// its build at hand, else WASM, said in words), and the worker started and listened to.
import { workerMain } from "./worker.js";

// a tiny module using SIMD instructions (i8x16.splat, i8x16.popcnt; wasm-feature-detect's probe): true where WebAssembly SIMD is on
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

function browserName() {
  const data = navigator.userAgentData;
  const ua = navigator.userAgent || "";
  if (data && data.brands) {
    const brand = data.brands.find((b) => !/Not.A.Brand|Chromium/i.test(b.brand)) ||
      data.brands.find((b) => /Chromium/i.test(b.brand));
    if (brand) return { name: brand.brand, version: brand.version };
  }
  for (const [name, pattern] of [
    ["Edge", /Edg\/([\d.]+)/], ["Firefox", /Firefox\/([\d.]+)/], ["Chrome", /Chrome\/([\d.]+)/],
    ["Safari", /Version\/([\d.]+).*Safari/],
  ]) {
    const found = ua.match(pattern);
    if (found) return { name, version: found[1] };
  }
  return { name: "browser", version: "" };
}

function osName() {
  const data = navigator.userAgentData;
  if (data && data.platform) return data.platform;
  const ua = navigator.userAgent || "";
  for (const [name, pattern] of [
    ["Android", /Android/], ["iOS", /iPhone|iPad/], ["Windows", /Windows/], ["macOS", /Mac OS X/], ["Linux", /Linux/],
  ]) {
    if (pattern.test(ua)) return name;
  }
  return navigator.platform || "";
}

// the GPU adapter's name, or why there is none (kind: "none" no WebGPU at all, "noadapter" WebGPU without one)
async function gpuAdapter() {
  if (!navigator.gpu) return { adapter: "", why: "none" };
  try {
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) return { adapter: "", why: "noadapter" };
    const info = adapter.info || (adapter.requestAdapterInfo ? await adapter.requestAdapterInfo() : {});
    const name = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(" ");
    return { adapter: name || "WebGPU adapter", why: "" };
  } catch (error) {
    return { adapter: "", why: "noadapter" };
  }
}

// the clock's step: the smallest difference performance.now() shows (browsers coarsen it, to 0.1 ms in Chromium
// on a page that is not cross-origin isolated), so that calls near it can be said to be measured coarsely
function clockStep() {
  let step = Infinity;
  const end = performance.now() + 5;
  let last = performance.now();
  while (last < end) {
    const now = performance.now();
    if (now > last) {
      step = Math.min(step, now - last);
      last = now;
    }
  }
  return Number.isFinite(step) ? step : 0;
}

export async function environment() {
  const { name, version } = browserName();
  const isolated = self.crossOriginIsolated === true;
  const cores = navigator.hardwareConcurrency || 0;
  const gpu = await gpuAdapter();
  return {
    browser: name, browser_version: version, os: osName(), cores, user_agent: navigator.userAgent || "",
    simd: WebAssembly.validate(SIMD_PROBE), cross_origin_isolated: isolated,
    threads: isolated && cores > 1 ? Math.min(cores - 1, 4) : 1, gpu_adapter: gpu.adapter, gpu_missing: gpu.why,
    clock_step_ms: clockStep(),
  };
}

// the backend that runs: "webgpu" when asked for, with its build at hand and an adapter; else "wasm"
export function chooseBackend(wanted, env, hasWebgpuBuild) {
  if (wanted !== "webgpu") return { backend: "wasm", fallback: "" };
  if (env.gpu_missing) return { backend: "wasm", fallback: env.gpu_missing };
  if (!hasWebgpuBuild) return { backend: "wasm", fallback: "nobuild" };
  return { backend: "webgpu", fallback: "" };
}

// run the model in a worker; onProgress(stage, fraction, done) as it goes; resolves to the worker's result
export function runInWorker(message, onProgress) {
  const source = `(${workerMain.toString()})();`;
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const worker = new Worker(url);
  return new Promise((resolve, reject) => {
    worker.onmessage = (event) => {
      const m = event.data;
      if (m.type === "progress") onProgress(m.stage, m.fraction, m.done || 0);
      else {
        worker.terminate();
        URL.revokeObjectURL(url);
        if (m.type === "done") resolve(m.result);
        else reject(Object.assign(new Error(m.message), { stage: m.stage }));
      }
    };
    worker.onerror = (event) => {
      worker.terminate();
      reject(Object.assign(new Error(event.message || "the worker failed"), { stage: "runtime" }));
    };
    worker.postMessage(message);
  });
}
