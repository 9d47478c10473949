// The Web Worker that runs ONNX Runtime Web, so that nothing blocks the page while the model runs. Its source is
// workerMain's text (it must use nothing from outside itself), started from a blob URL: a page opened from a
// file, or a Streamlit component, has no address to load a worker or the runtime from. The runtime (the ORT Web
// ES module bundle) arrives as text and is imported from a blob URL; its .wasm arrives gzipped and is handed to
// ORT as env.wasm.wasmBinary, so nothing is fetched.
export function workerMain() {
  const TYPED = {
    float32: Float32Array, float64: Float64Array, float16: Uint16Array, int8: Int8Array, uint8: Uint8Array,
    int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array,
    uint64: BigUint64Array, bool: Uint8Array,
  };
  const post = (message) => self.postMessage(message);
  // an ONNX model of one Identity (opset 13, 71 bytes): its session starts the runtime (compiles and instantiates
  // the .wasm), timed apart, so that the model's own session creation is not charged with it
  const PROBE = new Uint8Array([
    8, 7, 18, 0, 58, 59, 10, 16, 10, 1, 120, 18, 1, 121, 34, 8, 73, 100, 101, 110, 116, 105, 116, 121, 18, 5, 112,
    114, 111, 98, 101, 90, 15, 10, 1, 120, 18, 10, 10, 8, 8, 1, 18, 4, 10, 2, 8, 1, 98, 15, 10, 1, 121, 18, 10, 10,
    8, 8, 1, 18, 4, 10, 2, 8, 1, 66, 4, 10, 0, 16, 13,
  ]);

  async function gunzip(bytes) {
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  function half(bits) {
    const exponent = (bits >> 10) & 0x1f;
    const fraction = bits & 0x3ff;
    const sign = bits & 0x8000 ? -1 : 1;
    if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
    if (exponent === 31) return fraction ? NaN : sign * Infinity;
    return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
  }

  function numbers(tensor) {
    const data = tensor.data;
    if (tensor.type === "float16" && data instanceof Uint16Array) return Array.from(data, half);
    if (tensor.type === "string") return null;
    return Array.from(data, Number);
  }

  // the largest |server - browser| over every output the server sent; Infinity for a size mismatch or one NaN
  function difference(outputs, reference) {
    let largest = 0;
    for (const ref of reference) {
      const tensor = outputs[ref.name];
      if (!tensor) return { diff: null, missing: ref.name };
      const got = numbers(tensor);
      if (got === null) continue;
      const want = new Float32Array(ref.bytes.slice().buffer);
      if (got.length !== want.length) return { diff: Infinity, missing: "" };
      for (let i = 0; i < want.length; i++) {
        const a = want[i];
        const b = got[i];
        if (Number.isNaN(a) && Number.isNaN(b)) continue;
        const d = Math.abs(a - b);
        if (Number.isNaN(d)) return { diff: Infinity, missing: "" };
        if (d > largest) largest = d;
      }
    }
    return { diff: largest, missing: "" };
  }

  function feeds(ort, inputs) {
    const out = {};
    for (const input of inputs) {
      const Typed = TYPED[input.dtype];
      if (!Typed) throw new Error(`input ${input.name}: dtype ${input.dtype} cannot be made in the browser`);
      const buffer = input.bytes.slice().buffer; // aligned, the worker's own
      out[input.name] = new ort.Tensor(input.dtype, new Typed(buffer), input.shape);
    }
    return out;
  }

  async function run(m) {
    let stage = "runtime";
    try {
      post({ type: "progress", stage, fraction: 0.02 });
      const ort = await import(URL.createObjectURL(new Blob([m.ortCode], { type: "text/javascript" })));
      ort.env.wasm.wasmBinary = await gunzip(m.wasm);
      ort.env.wasm.numThreads = m.threads;
      ort.env.wasm.proxy = false;
      let start = performance.now();
      const probe = await ort.InferenceSession.create(PROBE, { executionProviders: [m.backend] });
      await probe.release();
      const runtimeMs = performance.now() - start;
      stage = "session";
      post({ type: "progress", stage, fraction: 0.08 });
      start = performance.now();
      const session = await ort.InferenceSession.create(m.model, {
        executionProviders: [m.backend],
        graphOptimizationLevel: "all",
      });
      const loadMs = performance.now() - start;
      const feed = feeds(ort, m.inputs);
      stage = "first";
      post({ type: "progress", stage, fraction: 0.12 });
      start = performance.now();
      const outputs = await session.run(feed);
      const firstMs = performance.now() - start;
      const compared = difference(outputs, m.reference);
      stage = "warmup";
      const warmStart = performance.now();
      for (let i = 0; i < m.warmup; i++) {
        await session.run(feed);
        if (i % 5 === 0) post({ type: "progress", stage, fraction: 0.12 + (0.08 * i) / Math.max(m.warmup, 1) });
      }
      const warmupMs = performance.now() - warmStart;
      stage = "calls";
      const calls = [];
      const began = performance.now();
      let told = began;
      while (calls.length < m.iterations && performance.now() - began < m.budgetMs) {
        start = performance.now();
        await session.run(feed);
        const now = performance.now();
        calls.push(now - start);
        if (now - told > 150) {
          told = now;
          const share = Math.max(calls.length / m.iterations, (now - began) / m.budgetMs);
          post({ type: "progress", stage, fraction: 0.2 + 0.8 * Math.min(share, 1), done: calls.length });
        }
      }
      await session.release();
      post({
        type: "done",
        result: {
          ort_version: ort.env.versions ? ort.env.versions.web || ort.env.versions.common || "" : "",
          runtime_ms: runtimeMs, load_ms: loadMs, first_call_ms: firstMs, warmup: m.warmup, warmup_ms: warmupMs, calls_ms: calls,
          cut_short: calls.length < m.iterations, max_abs_diff: compared.diff, missing_output: compared.missing,
        },
      });
    } catch (error) {
      post({ type: "error", stage, message: String((error && error.message) || error) });
    }
  }

  self.onmessage = (event) => run(event.data);
}
