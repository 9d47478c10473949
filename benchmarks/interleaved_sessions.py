"""ONNX Runtime sessions timed alone and interleaved one call each (as core.runtime.harness and Tune's stages time
them), with their intra-op threads allowed to spin while they wait for work (ONNX Runtime's default) and not
(``session.intra_op.allow_spinning = 0``).

Found on 2 December 2026: Tune's stage of optimization levels measured ocr_cls at 17–31 ms a call where the same
configurations take 6–13 ms alone, and the harness's CPU time per call was twice the wall time (two threads busy
for the whole call). Several sessions alive in one process on two cores slow each other while their threads
spin; with spinning off, interleaved calls take what they take alone, and a session alone is ~15 % slower.
Nothing in the app uses this yet: the harness and Tune still measure with ONNX Runtime's defaults.

Run (on a quiet machine): nice -n 19 .venv/bin/python benchmarks/interleaved_sessions.py [--rounds 30]
Prints, per model and spinning on/off: each level's median alone, then interleaved, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import onnxruntime as ort

from tests.builders import exported_sample
from tests.real_models import real_model

LEVELS = {
    "ALL": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "EXTENDED": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "BASIC": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "DISABLE_ALL": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}


MODES = {  # how a session's intra-op threads wait for work
    "spin": {},  # ONNX Runtime's default: they spin for a while after each call
    "stop": {"session.force_spinning_stop": "1"},  # they spin during a call and stop when it returns
    "never": {"session.intra_op.allow_spinning": "0"},  # they never spin
}


def _session(path: str, level: Any, mode: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    for key, value in MODES[mode].items():
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _timed(session: ort.InferenceSession, feed: dict[str, np.ndarray]) -> float:
    start = time.perf_counter()
    session.run(None, feed)
    return (time.perf_counter() - start) * 1e3


def measure(path: str, feed: dict[str, np.ndarray], mode: str, rounds: int) -> tuple[list[float], list[float]]:
    """Each level's median alone (its calls back to back), then interleaved (one call each, rotated order)."""
    sessions = [_session(path, level, mode) for level in LEVELS.values()]
    for session in sessions:
        for _warm in range(5):
            session.run(None, feed)
    alone = [statistics.median(_timed(s, feed) for _call in range(rounds)) for s in sessions]
    calls: list[list[float]] = [[] for _s in sessions]
    for k in range(rounds):
        order = list(range(len(sessions)))
        order = order[k % len(order) :] + order[: k % len(order)]
        for i in order:
            calls[i].append(_timed(sessions[i], feed))
    return alone, [statistics.median(c) for c in calls]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        models = [
            ("tinycnn 1×3×112×112", str(exported_sample("tinycnn", Path(tmp))), "input", (1, 3, 112, 112)),
            ("ocr_cls 1×3×224×224", str(real_model("ocr_cls")), "x", (1, 3, 224, 224)),
        ]
        print(f"{'model':<22} {'spinning':<9} " + " ".join(f"{name:>22}" for name in LEVELS))
        for name, path, input_name, shape in models:
            feed = {input_name: rng.standard_normal(shape).astype(np.float32)}
            for mode in MODES:
                alone, mixed = measure(path, feed, mode, args.rounds)
                cells = " ".join(f"{a:6.2f} → {m:6.2f} ({m / a:4.2f}×)" for a, m in zip(alone, mixed, strict=True))
                print(f"{name:<22} {mode:<9} {cells}")
        print("each cell: median ms alone → interleaved (interleaved / alone)")


if __name__ == "__main__":
    main()
