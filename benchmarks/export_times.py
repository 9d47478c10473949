"""Export wall time per sample and exporter: cold (first export in a fresh process) and warm (the next one).

Run: .venv/bin/python benchmarks/export_times.py [--samples tinycnn,transformer] [--warm 3]
Each (sample, exporter) pair runs in its own process, so "cold" includes the exporter's first-call cost
(imports, registries) but not the Python and torch import. Verification is not included: only
torch.onnx.export itself is timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, tempfile, time, warnings, logging
sys.path.insert(0, {root!r})
logging.disable(logging.WARNING)
warnings.simplefilter("ignore")
import torch
from core.model import zoo
from core.export import ExportOptions, export_example_shapes
from core.model.torchload import example_tensors
name, exporter, warm = {name!r}, {exporter!r}, {warm}
sample = zoo.SAMPLES[name]
options = ExportOptions(input_shapes={{k: list(v) for k, v in sample.inputs.items()}},
                        dynamic_axes={{k: {{str(a): l for a, l in d.items()}} for k, d in sample.dynamic_axes.items()}})
model = zoo.build_model(name)
args = tuple(example_tensors(export_example_shapes(options, exporter), {{}}))
names = list(sample.inputs)
def once(path):
    start = time.perf_counter()
    if exporter == "dynamo":
        torch.onnx.export(model, args, path, dynamo=True, opset_version=18, input_names=names,
                          dynamic_shapes=tuple(sample.dynamic_axes.get(n) or None for n in names), verbose=False)
    else:
        torch.onnx.export(model, args, path, dynamo=False, opset_version=18, input_names=names,
                          dynamic_axes=sample.dynamic_axes)
    return time.perf_counter() - start
folder = tempfile.mkdtemp()
times = [once(f"{{folder}}/m{{i}}.onnx") for i in range(warm + 1)]
print(json.dumps({{"cold": times[0], "warm": times[1:]}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", default="tinycnn,classifier,mlp,transformer,resnet")
    parser.add_argument("--warm", type=int, default=3, help="warm exports after the cold one")
    args = parser.parse_args()
    print(f"{'sample':<12} {'exporter':<8} {'cold s':>8} {'warm s (median)':>16} {'cold/warm':>10}")
    for name in args.samples.split(","):
        for exporter in ("legacy", "dynamo"):
            code = CHILD.format(root=str(ROOT), name=name, exporter=exporter, warm=args.warm)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
            if out.returncode != 0:
                print(f"{name:<12} {exporter:<8} failed: {out.stderr.strip().splitlines()[-1][:80]}")
                continue
            data = json.loads(out.stdout.strip().splitlines()[-1])
            warm = statistics.median(data["warm"])
            print(f"{name:<12} {exporter:<8} {data['cold']:>8.2f} {warm:>16.2f} {data['cold'] / warm:>10.1f}")


if __name__ == "__main__":
    main()
