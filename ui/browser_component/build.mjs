// Build dist/: bench.js, one minified IIFE exposing window.BrowserBench (src/), with a banner carrying the sha256
// of the sources and the lock file (tests/unit/test_browser_bench.py recomputes it, so a stale bundle fails the
// tests); and the only runtime files of onnxruntime-web that are used, copied from node_modules: the WASM build
// (ort.wasm.bundle.min.mjs and its ort-wasm-simd-threaded.wasm) and the WebGPU build (ort.webgpu.bundle.min.mjs
// and its ort-wasm-simd-threaded.asyncify.wasm), the .wasm gzipped (the browser unpacks them with
// DecompressionStream): 14 MB and 27 MB as shipped, 3.7 MB and 6.6 MB here.
import { createHash } from "node:crypto";
import { copyFileSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

export function sourceHash() {
  const files = ["build.mjs", "package.json", "package-lock.json"]
    .concat(readdirSync("src").filter((f) => f.endsWith(".js")).map((f) => `src/${f}`))
    .sort();
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(file));
    hash.update("\0");
  }
  return hash.digest("hex");
}

const ORT = "node_modules/onnxruntime-web/dist";
copyFileSync(`${ORT}/ort.wasm.bundle.min.mjs`, "dist/ort.wasm.mjs");
copyFileSync(`${ORT}/ort.webgpu.bundle.min.mjs`, "dist/ort.webgpu.mjs");
// gzip level 9, no name and mtime 0 in the header: the same bytes on every build
writeFileSync("dist/ort.wasm.wasm.gz", gzipSync(readFileSync(`${ORT}/ort-wasm-simd-threaded.wasm`), { level: 9 }));
writeFileSync(
  "dist/ort.webgpu.wasm.gz",
  gzipSync(readFileSync(`${ORT}/ort-wasm-simd-threaded.asyncify.wasm`), { level: 9 }),
);

await build({
  entryPoints: ["src/index.js"],
  bundle: true,
  minify: true,
  format: "iife",
  globalName: "BrowserBench",
  target: ["es2020"],
  outfile: "dist/bench.js",
  legalComments: "none",
  banner: { js: `/* onnx-workbench browser bench; sources sha256 ${sourceHash()} */` },
});
