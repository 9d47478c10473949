"""A language model's server under load, in tokens (issue #48 item 7): the total tokens per second at each
concurrency, with the steps run as the server runs them (as many at once as the cores hold at the session's intra-op
threads: one at a time at ONNX Runtime's default) beside the rule before (a step per core at once, each on the
session's threads per core), and the server's CPU time per token.

The model is the tests' two-layer GPT-2 (random weights, tests/lm_models.py), deployed by ``core.deploy``; each
variant is a copy of the server folder, started with uvicorn and loaded by the load test's own client
(core.deploy.token_load: every stream 32 new tokens after 16 ids). The variants take turns (A B, then B A), and the
figures are each variant's median over the rounds, with the lowest and highest.

First, without HTTP: the served greedy loop's steps (core.deploy.served_generation.Generation) handed from an event
loop to a pool as the server hands them, one stream and 16, a pool of one thread against one of a thread per core, on
the session's default threads (spinning stopped after a run, as the server's): steps per second and CPU time a step.

Run: nice -n 5 .venv/bin/python benchmarks/served_tokens.py [--rounds 6] [--duration 1.5] [--concurrency 1,8,16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.deploy import DeployRequest
from core.deploy.loadtest import run_client
from core.deploy.server import generate_server
from core.deploy.target import started_app
from core.deploy.token_load import token_load
from tests.lm_models import build_gpt2

NOW = "step_workers(intra_op_threads, self.max_streams)"
BEFORE = "min(self.max_streams, os.cpu_count() or 1)"  # the pool's size until December 2026


def _variants(folder: Path) -> dict[str, Path]:
    model = build_gpt2(folder)
    served = Path(generate_server(DeployRequest(model=str(model.onnx), out_dir=str(folder / "now"), zip=False)).out_dir)
    before = folder / "before"
    shutil.copytree(served, before)
    code = (before / "generation.py").read_text(encoding="utf-8")
    assert NOW in code, "generation.py no longer sizes its pool with step_workers: update this benchmark"
    (before / "generation.py").write_text(code.replace(NOW, BEFORE), encoding="utf-8")
    return {"steps as the cores hold": served, "a step per core (before)": before}


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


async def _steps(session: Any, spec: dict[str, Any], pool: Any, streams: int, seconds: float) -> tuple[float, float]:
    """Steps per second and CPU ms a step of ``streams`` greedy loops of 32 tokens, back to back, for ``seconds``."""
    from core.deploy.served_generation import Generation

    loop = asyncio.get_running_loop()
    deadline = time.perf_counter() + seconds
    count = 0

    async def stream() -> None:
        nonlocal count
        while time.perf_counter() < deadline:
            generation = Generation(session, spec, list(range(3, 19)), 32)
            for _step in range(32):
                await loop.run_in_executor(pool, generation.step)
                count += 1

    began, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(stream() for _s in range(streams)))
    return count / (time.perf_counter() - began), (time.process_time() - cpu) / max(count, 1) * 1e3


def _in_process(served: Path, rounds: int, seconds: float) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import onnxruntime as ort

    signature = json.loads((served / "signature.json").read_text(encoding="utf-8"))
    options = ort.SessionOptions()
    options.add_session_config_entry("session.force_spinning_stop", "1")
    session = ort.InferenceSession(str(served / signature["model_file"]), options, providers=["CPUExecutionProvider"])
    pools = {"one step at a time": 1, "a step per core (before)": os.cpu_count() or 1}
    seen: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for turn in range(rounds):
        for name in list(pools) if turn % 2 == 0 else list(pools)[::-1]:
            with ThreadPoolExecutor(pools[name]) as pool:
                for streams in (1, 16):
                    got = asyncio.run(_steps(session, signature["generate"], pool, streams, seconds))
                    seen.setdefault((name, streams), []).append(got)
    print(f"in-process, medians of {rounds} turns: steps/s, CPU ms a step")
    for name in pools:
        cells = [
            f"{streams} streams: {statistics.median(r for r, _c in seen[(name, streams)]):,.0f} steps/s, "
            f"{statistics.median(c for _r, c in seen[(name, streams)]):.3f} ms"
            for streams in (1, 16)
        ]
        print(f"{name:28} " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=float, default=1.5)
    parser.add_argument("--concurrency", default="1,8,16")
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    prompt = list(range(3, 19))
    totals: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        variants = _variants(Path(scratch))
        _in_process(next(iter(variants.values())), args.rounds, 1.0)
        for turn in range(args.rounds):
            names = list(variants) if turn % 2 == 0 else list(variants)[::-1]
            for name in names:
                with started_app(str(variants[name])) as url:
                    import psutil

                    server = next(p for p in psutil.Process().children() if "uvicorn" in " ".join(p.cmdline()))
                    for concurrency in concurrencies:
                        before = _cpu_s(server.pid)
                        seen = run_client(token_load(f"{url}/generate", prompt, 32, concurrency, args.duration))
                        spent = _cpu_s(server.pid) - before
                        rate = seen.tokens / seen.elapsed_s
                        totals.setdefault((name, concurrency), []).append(rate)
                        cpu.setdefault((name, concurrency), []).append(spent / max(seen.tokens, 1) * 1e3)
                        print(f"turn {turn} {name}: concurrency {concurrency}: {rate:,.0f} tokens/s")
    print(f"\ntokens/s in all, median [lowest-highest] of {args.rounds} turns; server CPU ms a token (median)")
    for name in variants:
        cells = []
        for c in concurrencies:
            got = totals[(name, c)]
            cells.append(
                f"{c}: {statistics.median(got):,.0f} [{min(got):,.0f}-{max(got):,.0f}] "
                f"{statistics.median(cpu[(name, c)]):.2f} ms"
            )
        print(f"{name:28} " + " | ".join(cells))


if __name__ == "__main__":
    main()
