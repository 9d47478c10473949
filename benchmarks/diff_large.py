"""The structural diff of a 30,000-node model: wall time and the worker's peak memory.

Run: .venv/bin/python benchmarks/diff_large.py [--layers 1500] [--hidden 32]
Builds tests/graph_models.py's transformer-like stack (20 nodes a layer, 1,500 layers: 30,003 nodes), and three
B versions of it: ten weights scaled (names kept); every node and activation renamed, as a re-export would (matched
by position); and both saved with their weights as external data (read through a memory map). Each diff runs as the
DIFF job in the worker, as the page and ``python -m core diff`` run it (wall time and peak memory), and once in
this process for its CPU time, which the shared machine's load does not inflate. Nothing is committed or kept.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import onnx
from onnx import numpy_helper

from core.diff import DiffRequest
from core.diff.differ import diff_models
from core.jobs import DIFF, submit
from tests.graph_models import transformer_like


def _scaled(model: onnx.ModelProto, count: int = 10) -> onnx.ModelProto:
    b = onnx.ModelProto()
    b.CopyFrom(model)
    for w in list(b.graph.initializer)[2 : 2 + count * 7 : 7]:
        w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * 1.01 + 0.001, w.name))
    return b


def _renamed(model: onnx.ModelProto) -> onnx.ModelProto:
    b = onnx.ModelProto()
    b.CopyFrom(model)
    keep = {v.name for v in b.graph.input} | {v.name for v in b.graph.output} | {t.name for t in b.graph.initializer}
    names: dict[str, str] = {}
    for i, node in enumerate(b.graph.node):
        node.name = f"/{node.op_type}_{i}"
        for out in node.output:
            if out not in keep:
                names.setdefault(out, f"/{node.op_type}_{i}_output_{len(names)}")
    for node in b.graph.node:
        node.input[:] = [names.get(t, t) for t in node.input]
        node.output[:] = [names.get(t, t) for t in node.output]
    return b


def _measure(a: Path, b: Path) -> tuple[float, float, float, float, str]:
    """The job's wall time (in the worker, with its start), its own time, its peak memory, and the CPU time of the
    same diff run in this process (what a quiet machine would take: the shared machine's load leaves it out)."""
    cpu = time.process_time()
    diff_models(DiffRequest(path_a=str(a), path_b=str(b)))
    cpu = time.process_time() - cpu
    start = time.perf_counter()
    handle = submit(DIFF, DiffRequest(path_a=str(a), path_b=str(b)))
    report = handle.result()
    wall = time.perf_counter() - start
    peak = handle.handle.peak_rss_bytes / 2**20  # type: ignore[attr-defined]
    said = f"{len(report.added)} added, {len(report.removed)} removed, {len(report.changed)} changed"
    return wall, report.seconds, peak, cpu, said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1500)
    parser.add_argument("--hidden", type=int, default=32)
    args = parser.parse_args()
    model = transformer_like(args.layers, args.hidden)
    for w in model.graph.initializer:  # zeros in the builder: values that differ, so a change is measurable
        w.CopyFrom(numpy_helper.from_array(np.random.default_rng(len(w.name)).random(w.dims, np.float32), w.name))
    with tempfile.TemporaryDirectory(prefix="diff-bench-") as tmp:
        folder = Path(tmp)
        a = folder / "a.onnx"
        onnx.save(model, a)
        cases = {"ten weights scaled": _scaled(model), "every node renamed": _renamed(model)}
        paths = {}
        for name, b in cases.items():
            paths[name] = folder / f"{name.replace(' ', '_')}.onnx"
            onnx.save(b, paths[name])
        external = folder / "external"
        external.mkdir()
        for name, m in (("a", model), ("b", cases["ten weights scaled"])):
            onnx.save(
                m, external / f"{name}.onnx", save_as_external_data=True, location=f"{name}.data", size_threshold=0
            )
        print(f"{len(model.graph.node):,} nodes, {a.stat().st_size / 2**20:,.0f} MB a model")
        print(f"{'B':<36} {'wall s':>7} {'in job s':>9} {'CPU s':>6} {'worker peak MB':>15}  found")
        rows = [(n, a, p) for n, p in paths.items()]
        rows.append(("ten weights scaled, external data", external / "a.onnx", external / "b.onnx"))
        for name, pa, pb in rows:
            wall, seconds, peak, cpu, said = _measure(pa, pb)
            print(f"{name:<36} {wall:>7.2f} {seconds:>9.2f} {cpu:>6.2f} {peak:>15,.0f}  {said}")


if __name__ == "__main__":
    main()
