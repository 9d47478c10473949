// What a person sees while the model runs in their browser and after: the browser, the backend and why, progress,
// then the timings (table and a histogram of the calls) and the agreement with the server's ONNX Runtime. Used by
// the standalone page (core/browser/page.py) and by the Benchmark page's component (streamlit.js). Every word
// comes from `words` (the catalog's, keyed by their English); every string goes in as textContent.
import { chooseBackend, environment, runInWorker } from "./runner.js";
import { summarize } from "./stats.js";
import STYLE from "./page.css"; // minified as text by ../bundle.mjs

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
}

export function sayer(words) {
  return (text, values) => {
    let out = (words && words[text]) || text;
    for (const [k, v] of Object.entries(values || {})) out = out.split(`{${k}}`).join(String(v));
    return out;
  };
}

function ms(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value >= 1 ? value.toFixed(2) : value.toFixed(3);
}

function rows(table, pairs) {
  for (const [name, value, numeric] of pairs) {
    table.append(el("tr", {}, el("th", {}, name), el("td", numeric ? { class: "num" } : {}, value)));
  }
}

// why WebGPU did not run, in words (kind: none, noadapter, nobuild)
function fallbackWords(say, kind) {
  if (kind === "none") return say("This browser has no WebGPU (navigator.gpu is missing), so the model ran on WASM.");
  if (kind === "noadapter") {
    return say("WebGPU gave no GPU adapter (no GPU, or the GPU is blocked or turned off), so the model ran on WASM.");
  }
  if (kind === "nobuild") return say("This page carries only the WASM build of ONNX Runtime Web, so the model ran on WASM.");
  return "";
}

function environmentTable(say, env, backend) {
  const table = el("table");
  const threads = env.cross_origin_isolated
    ? say("{count} threads (the page is cross-origin isolated)", { count: env.threads })
    : say("1 thread: the page is not cross-origin isolated, so it has no SharedArrayBuffer and ONNX Runtime Web " +
        "cannot start threads; with them it could use up to {cores} cores", { cores: env.cores });
  rows(table, [
    [say("Browser"), `${env.browser} ${env.browser_version}`.trim()],
    [say("Operating system"), env.os || "–"],
    [say("Cores the browser reports"), String(env.cores || "–")],
    [say("Backend"), backend === "webgpu" ? "WebGPU" : "WASM"],
    ["SIMD", env.simd ? say("on") : say("off")],
    [say("Threads"), threads],
    [say("GPU adapter"), env.gpu_adapter || say("none")],
  ]);
  return table;
}

function histogram(say, calls, stats) {
  const width = 640;
  const height = 200;
  const left = 44;
  const bottom = 34;
  const bins = Math.min(30, Math.max(5, Math.ceil(Math.sqrt(calls.length))));
  // from the fastest call to p99: the slowest few (beyond p99) are counted in the last bar, not drawn to scale
  const low = stats.min;
  const highest = stats.p99 > stats.min ? stats.p99 : stats.max;
  const span = highest - low || 1;
  const counts = new Array(bins).fill(0);
  for (const c of calls) counts[Math.min(bins - 1, Math.floor(((c - low) / span) * bins))]++;
  const top = Math.max(...counts);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("role", "img");
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  const plotW = width - left - 10;
  const plotH = height - bottom - 10;
  const x = (v) => left + ((v - low) / span) * plotW;
  add("rect", { x: x(stats.median_low), y: 10, width: Math.max(1, x(stats.median_high) - x(stats.median_low)), height: plotH, fill: "#dbe6ff" });
  counts.forEach((count, i) => {
    const h = top ? (count / top) * plotH : 0;
    add("rect", { x: left + (i * plotW) / bins + 1, y: 10 + plotH - h, width: plotW / bins - 2, height: h, fill: "#3b6ee8", "fill-opacity": 0.8 });
  });
  add("line", { x1: x(stats.median), x2: x(stats.median), y1: 10, y2: 10 + plotH, stroke: "#d93025", "stroke-width": 2 });
  add("line", { x1: left, x2: left + plotW, y1: 10 + plotH, y2: 10 + plotH, stroke: "#9aa5b1" });
  add("text", { x: left, y: height - 18 }, ms(stats.min));
  add("text", { x: left + plotW, y: height - 18, "text-anchor": "end" }, highest < stats.max ? `≥ ${ms(highest)}` : ms(highest));
  add("text", { x: left + plotW / 2, y: height - 4, "text-anchor": "middle" },
    say("milliseconds per call; red: the median, shaded: its 95 % CI"));
  add("text", { x: 4, y: 20 }, String(top));
  add("text", { x: 4, y: 34 }, say("calls"));
  return svg;
}

// the result a History import takes (core/browser/result.py) and data-result carries
function resultOf(meta, env, backend, fallback, worker, stats) {
  const mismatch = worker.max_abs_diff === Infinity;
  return {
    format: "onnx-workbench-browser-result", version: 1,
    model: meta.model, model_id: meta.model_id, seed: meta.seed, inputs: meta.plan_inputs,
    created_at: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    backend, median_ms: stats.median, ci_ms: [stats.median_low, stats.median_high], p90_ms: stats.p90,
    p99_ms: stats.p99, max_abs_diff: mismatch ? null : worker.max_abs_diff, outputs_differ_in_size: mismatch,
    missing_output: worker.missing_output, runtime_ms: worker.runtime_ms, load_ms: worker.load_ms, first_call_ms: worker.first_call_ms,
    warmup: worker.warmup, warmup_ms: worker.warmup_ms, iterations: meta.iterations, cut_short: worker.cut_short,
    calls_ms: worker.calls_ms,
    environment: { ...env, backend, fallback, ort_web: worker.ort_version },
  };
}

function resultTable(say, result, stats) {
  const table = el("table");
  const diff = result.outputs_differ_in_size
    ? say("the outputs differ in size")
    : result.max_abs_diff === null ? "–" : result.max_abs_diff === 0 ? "0" : result.max_abs_diff.toExponential(1);
  rows(table, [
    [say("Starting the runtime (compiling its WebAssembly)"), `${ms(result.runtime_ms)} ms`, true],
    [say("Session creation"), `${ms(result.load_ms)} ms`, true],
    [say("First call"), `${ms(result.first_call_ms)} ms`, true],
    [say("Warm-up calls"), `${result.warmup} (${ms(result.warmup_ms)} ms)`, true],
    [say("Timed calls"), String(stats.n), true],
    [say("Median"), `${ms(stats.median)} ms`, true],
    [say("95 % CI of the median"), `${ms(stats.median_low)} – ${ms(stats.median_high)} ms`, true],
    ["p90", `${ms(stats.p90)} ms`, true],
    ["p99", `${ms(stats.p99)} ms`, true],
    [say("Largest difference from the server's ONNX Runtime"), diff, true],
  ]);
  return table;
}

const STAGES = {
  runtime: "Starting ONNX Runtime Web",
  session: "Creating the session",
  first: "First call",
  warmup: "Warming up",
  calls: "Timing calls one by one",
};

// Run the benchmark into `root`. opts: words, meta {model, model_id, seed, plan_inputs, iterations, warmup,
// budget_ms, backend}, runtimes {wasm: {code, wasm}, webgpu: {code, wasm} | null}, model (bytes), inputs,
// reference; standalone (offer the JSON download); mark (the element given data-ready and data-result, else
// root); onDone(result), onError(message).
export async function benchmark(root, opts) {
  const say = sayer(opts.words);
  const meta = opts.meta;
  const mark = opts.mark || root; // the element that carries data-ready, data-result or data-error
  const box = el("div", { class: "bb" });
  box.append(el("style", {}, STYLE));
  root.append(box);
  if (opts.standalone) {
    box.append(el("h1", {}, say("{model} in this browser", { model: meta.model })));
    box.append(el("p", { class: "muted" }, say("ONNX Runtime Web runs the model here, on this device; the inputs " +
      "and the server's outputs came with the page, so nothing is sent anywhere.")));
  }
  const env = await environment();
  const { backend, fallback } = chooseBackend(meta.backend, env, Boolean(opts.runtimes.webgpu));
  box.append(el("h2", {}, say("This browser")));
  box.append(environmentTable(say, env, backend));
  const why = fallback || (backend === "wasm" ? env.gpu_missing : "");
  if (why) box.append(el("div", { class: "note", "data-fallback": why }, fallbackWords(say, why)));
  const status = el("div", { class: "muted" }, say(STAGES.runtime));
  const bar = el("div", { class: "bar" }, el("div"));
  box.append(status, bar);
  const runtime = backend === "webgpu" ? opts.runtimes.webgpu : opts.runtimes.wasm;
  let worker;
  try {
    worker = await runInWorker(
      {
        ortCode: runtime.code, wasm: runtime.wasm, model: opts.model, inputs: opts.inputs, reference: opts.reference,
        iterations: meta.iterations, warmup: meta.warmup, budgetMs: meta.budget_ms, backend, threads: env.threads,
      },
      (stage, fraction, done) => {
        status.textContent = stage === "calls" ? `${say(STAGES.calls)}: ${done}` : say(STAGES[stage] || stage);
        bar.firstChild.style.width = `${Math.round(fraction * 100)}%`;
      },
    );
  } catch (error) {
    status.remove();
    bar.remove();
    const message = say("ONNX Runtime Web failed while {stage}: {message}", {
      stage: say(STAGES[error.stage] || error.stage).toLowerCase(), message: error.message,
    });
    box.append(el("div", { class: "err" }, message));
    mark.setAttribute("data-error", message);
    if (opts.onError) opts.onError(message);
    return null;
  }
  status.remove();
  bar.remove();
  const stats = summarize(worker.calls_ms);
  const result = resultOf(meta, env, backend, fallback, worker, stats);
  box.append(el("h2", {}, say("Timings")));
  box.append(resultTable(say, result, stats));
  if (worker.cut_short) {
    box.append(el("div", { class: "note" }, say("The time budget ran out after {count} calls.", { count: stats.n })));
  }
  if (env.clock_step_ms > 0 && stats.median < 20 * env.clock_step_ms) {
    box.append(el("div", { class: "note" }, say("This page's clock moves in steps of {step} ms (browsers coarsen " +
      "it; more so on a page that is not cross-origin isolated), so calls this short are timed only roughly.",
    { step: ms(env.clock_step_ms) })));
  }
  if (stats.n > 1) box.append(histogram(say, worker.calls_ms, stats));
  if (opts.standalone) {
    box.append(el("h2", {}, say("Keep the result")));
    const button = el("button", { type: "button" }, say("Download the result (JSON)"));
    button.addEventListener("click", () => {
      const blob = new Blob([JSON.stringify(result, null, 1)], { type: "application/json" });
      const link = el("a", { href: URL.createObjectURL(blob), download: `${meta.model}-browser.json` });
      link.click();
    });
    box.append(button, el("p", { class: "muted" }, say("Import it in ONNX Workbench's History page, or with " +
      "python -m core history --import FILE, to see it beside the server's runs.")));
  }
  mark.setAttribute("data-result", JSON.stringify(result));
  mark.setAttribute("data-ready", "true");
  if (opts.onDone) opts.onDone(result);
  return result;
}
