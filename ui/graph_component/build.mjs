// Build dist/graph.js: one minified IIFE exposing window.GraphView, with a banner carrying the sha256 of the
// sources and the lock file (tests/unit/test_graph_view.py recomputes it, so a stale bundle fails the tests).
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
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

await build({
  entryPoints: ["src/index.js"],
  bundle: true,
  minify: true,
  format: "iife",
  globalName: "GraphView",
  target: ["es2020"],
  outfile: "dist/graph.js",
  legalComments: "none",
  banner: { js: `/* onnx-workbench graph view; sources sha256 ${sourceHash()} */` },
});
