"""The GPU runtime's sessions checked in its own Python (benchmarks/gpu_check.py runs it; not a test, no sandbox):
TensorRT's engine build timed apart from its runs, with its engine and timing caches in the cache folder, CUDA
with and without IO binding, Tune's CUDA-graph candidate as Tune calls it, the server Deploy writes for that
candidate answering through its CUDA graph (FastAPI's test client, no socket), and the runtime's own torch (a CUDA
build, which PyTorch eager on CUDA needs).

Run: .runtimes/gpu/bin/python benchmarks/gpu_sessions.py MODEL.onnx CACHE_DIR
Prints one JSON object: what each check found, or why it could not run.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.runtime.provider_options import SETUPS, session_providers, tensorrt_cache

RUNS = 50


def _feed(session: Any) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    feed = {}
    for spec in session.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in spec.shape]
        feed[spec.name] = rng.standard_normal(shape).astype(np.float32)
    return feed


def _median_ms(call: Any, runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def tensorrt(model: str, cache_dir: str) -> dict[str, Any]:
    """The engine built (its time), cached (its files), loaded again from the cache (its time), and run."""
    import onnxruntime as ort

    folder = tensorrt_cache(cache_dir)
    for old in folder.iterdir():  # a cold build, so that its time is the build's
        old.unlink()
    providers = session_providers(["TensorrtExecutionProvider", "CPUExecutionProvider"], cache_dir)
    start = time.perf_counter()
    session = ort.InferenceSession(model, providers=providers)
    feed = _feed(session)
    session.run(None, feed)  # TensorRT builds its engine at the first run of a shape
    built_s = time.perf_counter() - start
    files = sorted(p.name for p in folder.iterdir())
    start = time.perf_counter()
    again = ort.InferenceSession(model, providers=providers)
    again.run(None, feed)
    cached_s = time.perf_counter() - start
    return {
        "providers": session.get_providers(),
        "engine_build_s": built_s,
        "from_cache_s": cached_s,
        "cache_files": files,
        "engine_cached": any(name.endswith(".engine") for name in files),
        "timing_cached": any("timing" in name for name in files),
        "run_ms": _median_ms(lambda: again.run(None, feed)),
    }


def cuda_io_binding(model: str) -> dict[str, Any]:
    """CUDA's median run, and the same with inputs and outputs bound on the GPU (IO binding), the outputs compared."""
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(
        model, providers=session_providers(["CUDAExecutionProvider", "CPUExecutionProvider"])
    )
    feed = _feed(session)
    plain = session.run(None, feed)
    binding = session.io_binding()
    for name, value in feed.items():
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value, "cuda", 0))
    for output in session.get_outputs():
        binding.bind_output(output.name, "cuda", 0)
    session.run_with_iobinding(binding)
    bound = binding.copy_outputs_to_cpu()
    return {
        "providers": session.get_providers(),
        "run_ms": _median_ms(lambda: session.run(None, feed)),
        "io_binding_ms": _median_ms(lambda: session.run_with_iobinding(binding)),
        "max_abs_diff": float(max(np.max(np.abs(a - b)) for a, b in zip(plain, bound, strict=True))),
    }


def cuda_graph(model: str) -> dict[str, Any]:
    """Tune's CUDA-graph candidate as Tune opens and calls it (core.tune.sessions: ``enable_cuda_graph`` with IO
    binding, outputs allocated once), beside CUDA with IO binding alone, the outputs compared with a plain run."""
    import numpy as np

    from core.runtime.session_config import SessionConfig
    from core.tune.sessions import _call, open_session

    bound = SessionConfig(providers=("CUDAExecutionProvider", "CPUExecutionProvider"), io_binding=True, runtime="gpu")
    graphed = dataclasses.replace(bound, cuda_graph=True)
    session, _load_ms = open_session(model, bound)
    feed = _feed(session)
    plain = session.run(None, feed)
    calls = {}
    for name, config in (("bound", bound), ("graphed", graphed)):
        opened = session if config is bound else open_session(model, config)[0]
        calls[name] = _call(opened, config, feed)
    got = calls["graphed"]()  # the first call captures the graph; those after replay it
    return {
        "io_binding_ms": _median_ms(calls["bound"]),
        "cuda_graph_ms": _median_ms(calls["graphed"]),
        "max_abs_diff": float(max(np.max(np.abs(a - b)) for a, b in zip(plain, got, strict=True))),
    }


def _served_feed(signature: dict[str, Any], batch: int, rng: Any) -> dict[str, Any]:
    """Inputs for the served model at ``batch`` (its first axis where any size is taken; 1 for every other such)."""
    import numpy as np

    feed = {}
    for spec in signature["inputs"]:
        shape = [(batch if k == 0 else 1) if d is None else d for k, d in enumerate(spec["shape"] or [1])]
        kind = np.dtype(spec["dtype"]).kind
        feed[spec["name"]] = (rng.standard_normal(shape) if kind == "f" else np.zeros(shape)).astype(spec["dtype"])
    return feed


def served_cuda_graph(model: str) -> dict[str, Any]:
    """Deploy's server for Tune's CUDA-graph configuration, in this Python: the first request captures the graph, the
    next of its shapes replays it, one of another batch (where the batch is open) runs without it; every answer
    compared with a plain CUDA session's, and what /health says."""
    import importlib.util
    import tempfile

    import numpy as np
    import onnxruntime as ort
    from fastapi.testclient import TestClient

    from core.deploy import DeployRequest
    from core.deploy.server import generate_server
    from core.runtime.session_config import SessionConfig

    graphed = SessionConfig(providers=("CUDAExecutionProvider", "CPUExecutionProvider"), io_binding=True,
                            cuda_graph=True, runtime="gpu")  # fmt: skip
    plain = ort.InferenceSession(model, providers=session_providers(["CUDAExecutionProvider", "CPUExecutionProvider"]))
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="gpu-served-") as tmp:
        request = DeployRequest(model=model, out_dir=f"{tmp}/server", tuned=graphed, runtime="gpu", zip=False)
        out = Path(generate_server(request).out_dir)
        signature = json.loads((out / "signature.json").read_text())
        spec = importlib.util.spec_from_file_location("served_gpu_check", out / "app.py")
        assert spec is not None and spec.loader is not None
        app = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(app)
        open_batch = all(s["shape"] and s["shape"][0] is None for s in signature["inputs"])
        diffs = []
        with TestClient(app.app) as client:
            for batch in (1, 1, 2) if open_batch else (1, 1):
                feed = _served_feed(signature, batch, rng)
                answer = client.post("/predict", json={"inputs": {k: v.tolist() for k, v in feed.items()}})
                if answer.status_code != 200:
                    return {"error": f"/predict answered {answer.status_code}: {answer.text[:300]}"}
                got = answer.json()["outputs"]
                for output, expected in zip(signature["outputs"], plain.run(None, feed), strict=True):
                    diffs.append(float(np.max(np.abs(np.asarray(got[output["name"]], dtype=np.float64) - expected))))
            health = client.get("/health").json()
    return {"providers": health["providers"], "cuda_graph": health.get("cuda_graph", {}), "other_batch": open_batch,
            "max_abs_diff": max(diffs)}  # fmt: skip


def own_torch() -> dict[str, Any]:
    """The runtime's torch: its version, the CUDA it is built for, whether it is its own (not .venv's), sees a GPU."""
    import torch

    own = Path(torch.__file__).resolve().is_relative_to(Path(sys.prefix).resolve())
    sees = bool(torch.cuda.is_available())
    return {"version": torch.__version__, "cuda": torch.version.cuda or "", "own": own, "sees_gpu": sees}


def main() -> int:
    model, cache_dir = sys.argv[1], sys.argv[2]
    found: dict[str, Any] = {"setups": sorted(SETUPS)}
    checks = (
        ("tensorrt", lambda: tensorrt(model, cache_dir)),
        ("cuda", lambda: cuda_io_binding(model)),
        ("cuda_graph", lambda: cuda_graph(model)),
        ("served_cuda_graph", lambda: served_cuda_graph(model)),
        ("torch", own_torch),
    )
    for name, check in checks:
        try:
            found[name] = check()
        except Exception as exc:  # a check that cannot run says why; the others still run
            found[name] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
