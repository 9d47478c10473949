"""Decode time and worker peak memory against model size, for models whose weights are external data.

Run: .venv/bin/python benchmarks/decode_memory.py [--sizes-mb 100,1000] [--nodes 5000]
Builds each model in a temporary folder (weights written straight to the .data file, never held in memory),
decodes it in the worker as the Decode page does, and prints wall time and the worker's peak RSS; then does
the same for a model with many nodes and little weight. Nothing is committed or kept.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import onnx
from onnx import TensorProto, helper

from core.decode import DecodeRequest
from core.jobs import DECODE, submit

TENSOR_MB = 16


def external_model(folder: Path, size_mb: int) -> Path:
    """A chain of Adds, each with a 16 MB float32 weight stored in one external file."""
    count = max(1, size_mb // TENSOR_MB)
    elements = TENSOR_MB * 1024 * 1024 // 4
    chunk = bytes(TENSOR_MB * 1024 * 1024)
    data = folder / "big.onnx.data"
    nodes, inits = [], []
    with data.open("wb") as fh:
        for i in range(count):
            fh.write(chunk)
            tensor = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[elements])
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", data.name), ("offset", str(i * len(chunk))), ("length", str(len(chunk)))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            inits.append(tensor)
            nodes.append(helper.make_node("Add", ["x" if i == 0 else f"a{i - 1}", f"w{i}"], [f"a{i}"], name=f"add{i}"))
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
        [helper.make_tensor_value_info(f"a{count - 1}", TensorProto.FLOAT, [elements])],
        inits,
    )
    path = folder / "big.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def many_nodes_model(folder: Path, nodes: int) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.builders import chain_model, write

    return write(chain_model(nodes), folder / "many.onnx")


def measure(path: Path) -> tuple[float, float]:
    start = time.perf_counter()
    handle = submit(DECODE, DecodeRequest(path=str(path)))
    handle.result()
    return time.perf_counter() - start, handle.handle.peak_rss_bytes / 2**20  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes-mb", default="100,1000")
    parser.add_argument("--nodes", type=int, default=5000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    try:
        print(f"{'model':<36} {'weights MB':>10} {'decode s':>9} {'worker peak MB':>15}")
        for size in (int(s) for s in args.sizes_mb.split(",")):
            sub = folder / f"m{size}"
            sub.mkdir()
            path = external_model(sub, size)
            weights = (sub / "big.onnx.data").stat().st_size / 2**20
            seconds, peak = measure(path)
            print(f"{f'{size} MB external data':<36} {weights:>10,.0f} {seconds:>9.2f} {peak:>15,.0f}")
            shutil.rmtree(sub)
        path = many_nodes_model(folder, args.nodes)
        seconds, peak = measure(path)
        print(
            f"{f'{args.nodes:,} nodes, inline weights':<36} {path.stat().st_size / 2**20:>10,.1f} {seconds:>9.2f} "
            f"{peak:>15,.0f}"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
