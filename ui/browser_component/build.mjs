// Build dist/: bench.js, one minified IIFE exposing window.BrowserBench (the shared build: ../bundle.mjs); and the
// only runtime files of onnxruntime-web that are used, copied from node_modules: the WASM build
// (ort.wasm.bundle.min.mjs and its ort-wasm-simd-threaded.wasm) and the WebGPU build (ort.webgpu.bundle.min.mjs
// and its ort-wasm-simd-threaded.asyncify.wasm), the .wasm gzipped (the browser unpacks them with
// DecompressionStream): 14 MB and 27 MB as shipped, 3.7 MB and 6.6 MB here.
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";
import { bundle } from "../bundle.mjs";

const ORT = "node_modules/onnxruntime-web/dist";
copyFileSync(`${ORT}/ort.wasm.bundle.min.mjs`, "dist/ort.wasm.mjs");
copyFileSync(`${ORT}/ort.webgpu.bundle.min.mjs`, "dist/ort.webgpu.mjs");
// gzip level 9, no name and mtime 0 in the header: the same bytes on every build
writeFileSync("dist/ort.wasm.wasm.gz", gzipSync(readFileSync(`${ORT}/ort-wasm-simd-threaded.wasm`), { level: 9 }));
writeFileSync(
  "dist/ort.webgpu.wasm.gz",
  gzipSync(readFileSync(`${ORT}/ort-wasm-simd-threaded.asyncify.wasm`), { level: 9 }),
);

await bundle(esbuild, { globalName: "BrowserBench", outfile: "dist/bench.js", title: "browser bench" });
