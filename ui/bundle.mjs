// The build both browser bundles share (graph_component/build.mjs and browser_component/build.mjs call it): one
// minified IIFE from src/index.js, its CSS (src/*.css, imported as text) minified too, with a banner carrying the
// sha256 of the sources, the lock file and this script (tests/bundles.py recomputes it, so a stale bundle fails the
// tests). Each component passes its own esbuild, the one its lock file pins.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";

const SOURCES = [".js", ".css"];

export function sourceHash() {
  const files = ["build.mjs", "../bundle.mjs", "package.json", "package-lock.json"]
    .concat(readdirSync("src").filter((f) => SOURCES.some((ending) => f.endsWith(ending))).map((f) => `src/${f}`))
    .sort();
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(file));
    hash.update("\0");
  }
  return hash.digest("hex");
}

// `import CSS from "./x.css"` gives the stylesheet, minified, as a string the component puts in a <style>
function minifiedCssText(esbuild) {
  return {
    name: "minified-css-text",
    setup(plugin) {
      plugin.onLoad({ filter: /\.css$/ }, async (args) => {
        const css = await esbuild.transform(readFileSync(args.path, "utf8"), { loader: "css", minify: true });
        return { contents: css.code.trim(), loader: "text" };
      });
    },
  };
}

export async function bundle(esbuild, { globalName, outfile, title }) {
  await esbuild.build({
    entryPoints: ["src/index.js"],
    bundle: true,
    minify: true,
    format: "iife",
    globalName,
    target: ["es2020"],
    outfile,
    legalComments: "none",
    plugins: [minifiedCssText(esbuild)],
    banner: { js: `/* onnx-workbench ${title}; sources sha256 ${sourceHash()} */` },
  });
}
