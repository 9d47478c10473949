"""The GPU, checked end to end in at most five minutes, on a machine with an NVIDIA GPU and the GPU runtime.

Run: make runtime-gpu && .venv/bin/python benchmarks/gpu_check.py [--budget 300]

It checks, with the TinyCNN sample: the GPU runtime's providers; the partition of the sample on CUDA and on
TensorRT (the app's job, in its sandbox shown the GPU: nodes per provider, declined nodes, Memcpy copies); a
benchmark of CUDA against the CPU provider (the app's job, --strict: nothing may quietly run on the CPU); PyTorch
eager on CUDA beside it (bench --eager-device cuda without --runtime: routed to the GPU runtime's worker, whose torch
is a CUDA build, with eager's GPU memory at a call's peak); and, in the runtime's own Python
(benchmarks/gpu_sessions.py), TensorRT's engine build timed apart from its runs with its engine and timing caches in
the app's cache folder, CUDA with and without IO binding, Tune's CUDA-graph candidate (enable_cuda_graph with IO
binding) as Tune opens and calls it, the server Deploy writes for that candidate capturing its graph at the first
request and replaying it after (another batch run without it), and the runtime's own torch. It prints one table and
exits 1 when a check failed. Without a GPU, or without `make runtime-gpu`, it says so and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.cli import main as cli_main
from core.cli.common import provider_names
from core.runtime.runtimes import describe, runtime_named, runtime_names
from core.settings import load_settings

GPU_RUNTIME = "gpu"
BUDGET_S = 300.0


@dataclass(frozen=True)
class Row:
    """One check: what it checked, ok / FAILED / skipped, what it found, and how long it took."""

    check: str
    outcome: str
    found: str
    seconds: float


def gpu_present(smi: Callable[[], str] | None = None) -> tuple[bool, str]:
    """(whether an NVIDIA GPU is here, what says so or why not): nvidia-smi's list of GPUs."""
    if smi is None and shutil.which("nvidia-smi") is None:
        return False, "nvidia-smi is not installed"
    try:
        listed = (
            smi()
            if smi is not None
            else subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False).stdout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"nvidia-smi did not answer: {exc}"
    gpus = [line for line in listed.splitlines() if line.startswith("GPU ")]
    return (True, "; ".join(gpus)) if gpus else (False, "nvidia-smi lists no GPU")


def table(rows: list[Row]) -> str:
    """The rows as a plain table, one line each."""
    width = max([len(r.check) for r in rows] + [5])
    lines = [f"{'check':<{width}}  {'outcome':<7}  {'s':>6}  found"]
    lines += [f"{r.check:<{width}}  {r.outcome:<7}  {r.seconds:>6.1f}  {r.found}" for r in rows]
    return "\n".join(lines)


def _cli_json(*args: str) -> tuple[int, Any, str]:
    """``python -m core ARGS --json`` in this process: (exit code, its JSON or None, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main([*args, "--json"])
    try:
        return code, json.loads(out.getvalue()), err.getvalue()
    except ValueError:
        return code, None, err.getvalue()


def _timed(check: str, work: Callable[[], tuple[bool, str]]) -> Row:
    start = time.monotonic()
    try:
        ok, found = work()
    except Exception as exc:  # a check that breaks is a failed check, the others still run
        ok, found = False, f"{type(exc).__name__}: {exc}"[:300]
    return Row(check, "ok" if ok else "FAILED", found, time.monotonic() - start)


def _partition(model: str, provider: str) -> tuple[bool, str]:
    code, data, err = _cli_json("partition", model, "--runtime", GPU_RUNTIME, "--providers", f"{provider},cpu")
    if code != 0 or data is None:
        return False, err.strip()[-300:]
    full = (provider_names(provider) or [provider])[0]  # cuda -> CUDAExecutionProvider
    on_gpu = data["providers"].get(full, 0)
    copies = ", ".join(c["name"] for c in data["copies"]) or "none"
    said = f"{on_gpu} of {data['node_count']} nodes on {provider}, {len(data['declined'])} declined, copies: {copies}"
    return on_gpu > 0 and not data["warnings"], said + "".join(f"; {w}" for w in data["warnings"])


def _bench(model: str, budget_s: float) -> tuple[bool, str]:
    code, data, err = _cli_json(
        "bench", model, "--runtime", GPU_RUNTIME, "--providers", "cuda,cpu", "--levels", "all", "--no-eager",
        "--iters", "200", "--warmup", "20", "--budget", f"{budget_s:.0f}", "--no-save",
    )  # fmt: skip
    if code != 0 or data is None:
        return False, err.strip()[-300:]
    medians = ", ".join(
        f"{r['label']}: {r['median_ms']:.3f} ms ({r['median_low_ms']:.3f}–{r['median_high_ms']:.3f})"
        for r in data["results"]
    )
    return True, medians


def _eager_cuda(model: str) -> tuple[bool, str]:
    """PyTorch eager on CUDA beside ORT's CUDA provider (bench --eager-device cuda, no --runtime: routed to the GPU
    runtime's worker, its torch a CUDA build), with eager's GPU memory at a call's peak (``gpu_peak_mb``)."""
    code, data, err = _cli_json(
        "bench", model, "--torch", "sample:tinycnn", "--levels", "all", "--eager-device", "cuda", "--iters", "100",
        "--warmup", "10", "--no-save",
    )  # fmt: skip
    if code != 0 or data is None:
        return False, err.strip()[-300:]
    if data["settings"].get("runtime") != GPU_RUNTIME:
        return False, f"run by the runtime {data['settings'].get('runtime', 'default')}, not {GPU_RUNTIME}"
    said = ", ".join(
        f"{r['label']}: {r['median_ms']:.3f} ms" + (f", peak {r['gpu_peak_mb']:,.0f} MiB" if r["gpu_peak_mb"] else "")
        for r in data["results"]
    )  # the GPU memory eager held at a call's peak, as torch counts it (ORT tells none: its note says so)
    eager = [r for r in data["results"] if r["engine"] == "eager"]
    return bool(eager) and all(r["gpu_peak_mb"] for r in eager), said


def _strict(model: str) -> tuple[bool, str]:
    code, _data, err = _cli_json(
        "bench", model, "--runtime", GPU_RUNTIME, "--providers", "cuda", "--levels", "all", "--no-eager", "--iters",
        "20", "--warmup", "2", "--strict", "--no-save",
    )  # fmt: skip
    return code in (0, 2), "every node on CUDA" if code == 0 else f"refused: {err.strip()[-200:]}"


def _sessions(model: str, cache_dir: str, timeout_s: float) -> dict[str, Any]:
    python = runtime_named(GPU_RUNTIME).python
    script = str(Path(__file__).with_name("gpu_sessions.py"))
    done = subprocess.run(
        [python, script, model, cache_dir], capture_output=True, text=True, timeout=timeout_s, check=False
    )
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {"error": done.stderr.strip()[-500:]}


def _session_rows(found: dict[str, Any], seconds: float) -> list[Row]:
    trt, cuda = found.get("tensorrt", found), found.get("cuda", found)
    rows = []
    if "error" in trt:
        rows.append(Row("TensorRT engine and caches", "FAILED", trt["error"], seconds))
    else:
        cached = trt["engine_cached"] and trt["timing_cached"]
        rows.append(Row(
            "TensorRT engine and caches", "ok" if cached else "FAILED",
            f"built in {trt['engine_build_s']:.1f} s, loaded from the cache in {trt['from_cache_s']:.1f} s, run "
            f"{trt['run_ms']:.3f} ms; cache: {', '.join(trt['cache_files']) or 'empty'}", seconds,
        ))  # fmt: skip
    if "error" in cuda:
        rows.append(Row("CUDA IO binding", "FAILED", cuda["error"], 0.0))
    else:
        same = cuda["max_abs_diff"] < 1e-4
        rows.append(Row(
            "CUDA IO binding", "ok" if same else "FAILED",
            f"run {cuda['run_ms']:.3f} ms, with IO binding {cuda['io_binding_ms']:.3f} ms, outputs differ by "
            f"{cuda['max_abs_diff']:.1e}", 0.0,
        ))  # fmt: skip
    graph = found.get("cuda_graph", {"error": "not run"})
    if "error" in graph:
        rows.append(Row("CUDA graphs (Tune)", "FAILED", graph["error"], 0.0))
    else:
        rows.append(Row(
            "CUDA graphs (Tune)", "ok" if graph["max_abs_diff"] < 1e-4 else "FAILED",
            f"IO binding {graph['io_binding_ms']:.3f} ms, replayed as a CUDA graph {graph['cuda_graph_ms']:.3f} ms, "
            f"outputs differ by {graph['max_abs_diff']:.1e}", 0.0,
        ))  # fmt: skip
    return [*rows, _served_row(found.get("served_cuda_graph", {"error": "not run"})),
            _torch_row(found.get("torch", {"error": "not run"}))]  # fmt: skip


def _served_row(served: dict[str, Any]) -> Row:
    """Deploy's server for the CUDA-graph candidate: captured at the first request, replayed at the next of its
    shapes, another batch run without the graph, every answer as a plain CUDA session's."""
    if "error" in served:
        return Row("served CUDA graphs (Deploy)", "FAILED", served["error"], 0.0)
    said = served["cuda_graph"]
    if not said.get("used"):
        return Row("served CUDA graphs (Deploy)", "FAILED", f"no graph: {said.get('why', 'not asked')}", 0.0)
    others = 1 if served["other_batch"] else 0
    ok = said["captured"] and said["replayed"] >= 1 and said["without_graph"] == others
    ok = bool(ok) and served["max_abs_diff"] < 1e-4
    return Row(
        "served CUDA graphs (Deploy)", "ok" if ok else "FAILED",
        f"captured {said['captured']}, replayed {said['replayed']}, without the graph {said['without_graph']} "
        f"(another batch), answers differ from plain CUDA's by {served['max_abs_diff']:.1e}", 0.0,
    )  # fmt: skip


def _torch_row(torch: dict[str, Any]) -> Row:
    """The GPU runtime's own torch, a CUDA build that sees the GPU (what PyTorch eager on CUDA runs on)."""
    if "error" in torch:
        return Row("torch in the GPU runtime", "FAILED", torch["error"], 0.0)
    ok = torch["own"] and bool(torch["cuda"]) and torch["sees_gpu"]
    own = "its own" if torch["own"] else ".venv's, not its own"
    sees = "sees the GPU" if torch["sees_gpu"] else "sees no GPU"
    found = f"torch {torch['version']} for CUDA {torch['cuda'] or 'none'}, {own}, {sees}"
    return Row("torch in the GPU runtime", "ok" if ok else "FAILED", found, 0.0)


def run_checks(model: str, budget_s: float) -> list[Row]:
    """Every check, within ``budget_s`` (what is left is split among the later ones)."""
    deadline = time.monotonic() + budget_s
    info = describe(GPU_RUNTIME)
    rows = [
        Row(
            "GPU runtime",
            "ok" if {"CUDAExecutionProvider", "TensorrtExecutionProvider"} <= set(info.providers) else "FAILED",
            f"{info.package} {info.onnxruntime}: {', '.join(info.providers)}"
            + (f" ({info.error})" if info.error else ""),
            0.0,
        )
    ]
    rows.append(_timed("partition on CUDA", lambda: _partition(model, "cuda")))
    rows.append(_timed("partition on TensorRT", lambda: _partition(model, "tensorrt")))
    rows.append(_timed("bench CUDA vs CPU", lambda: _bench(model, min(60.0, (deadline - time.monotonic()) / 3))))
    rows.append(_timed("bench --strict on CUDA", lambda: _strict(model)))
    rows.append(_timed("bench eager on CUDA", lambda: _eager_cuda(model)))
    cache_dir = load_settings().cache_dir
    start = time.monotonic()
    try:
        found = _sessions(model, cache_dir, max(10.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        found = {"error": f"past the budget of {budget_s:.0f} s"}
    rows += _session_rows(found, time.monotonic() - start)
    return rows


def main(argv: list[str] | None = None, smi: Callable[[], str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds for every check together")
    args = parser.parse_args(argv)
    present, why = gpu_present(smi)
    if not present:
        print(f"No NVIDIA GPU here ({why}): nothing to check.")
        return 0
    if GPU_RUNTIME not in runtime_names():
        print(f"GPU: {why}. The GPU runtime is not built: run `make runtime-gpu`, then this again.")
        return 0
    print(f"GPU: {why}")
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        from tests.builders import exported_sample

        model = str(exported_sample("tinycnn", Path(tmp)))
        rows = run_checks(model, args.budget)
    print(table(rows))
    return 1 if any(r.outcome == "FAILED" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
