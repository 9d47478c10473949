// Build dist/graph.js: one minified IIFE exposing window.GraphView (the shared build: ../bundle.mjs).
import * as esbuild from "esbuild";
import { bundle } from "../bundle.mjs";

await bundle(esbuild, { globalName: "GraphView", outfile: "dist/graph.js", title: "graph view" });
