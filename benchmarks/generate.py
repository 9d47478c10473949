"""Generate beside onnxruntime-genai's own generator and PyTorch eager, on the same ONNX file, in one run (issue 48,
item 8).

Run: nice -n 19 .venv/bin/python benchmarks/generate.py [--rounds 15] [--ttft-rounds 60] [--prompt-len 32] [--new 128]
     [--threads N] [--models tiny,small]     (needs `make bench-extras`: onnxruntime-genai, transformers)

Two Qwen2 models are built offline from configs with random weights (nothing is downloaded) and exported in fp32 by
onnxruntime-genai's model builder (GroupQueryAttention, genai_config.json): ``tiny`` (2 layers, hidden 64, vocabulary
512, the tests' model) and ``small`` (4 layers, hidden 256, 4 heads with 2 key/value heads, vocabulary 8,192). On
each, three engines generate greedily from the same drawn prompt, ``--rounds`` rounds with the engines in turn
(each round starting one further along), after one warm-up each:
- the app: Generate's loop (core.runtime.greedy.ort_generate on a session as the GENERATE job opens it);
- onnxruntime-genai: ``og.Model(folder)``, ``GeneratorParams.set_search_options(do_sample=False)``,
  ``Generator.append_tokens(prompt)`` (the prefill), then ``generate_next_token()`` once per token;
- PyTorch eager: the Hugging Face folder the file was built from, through transformers with its own cache
  (core.runtime.greedy_eager.eager_generate), fp32.
All three run at the same intra-op threads (genai's through its genai_config.json's session options). Printed per
engine: decode tokens per second (the tokens after the first over their time) and the time to the first token, each
a median over the rounds with its 95 % interval; whether the greedy tokens are genai's (same file) and PyTorch's.
Then the goals: decode tokens per second at least genai's (ours above, or the intervals overlapping); the app's
worker's peak memory (``python -m core generate --json``'s peak_rss_mb, in a process of its own) at most the weights
plus the KV cache plus 150 MB; and its time to the first token within 10 % of the prefill's own compute, defined as
one ``session.run`` of the prompt (a past of 0) on the same session, measured alone: the app's generation and that
call in turn, ``--ttft-rounds`` times (60), no other engine between them (medians compared).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from benchmarks._unit import machine
from core.runtime.greedy import ort_generate
from core.runtime.greedy_prompt import recognised_layout
from core.runtime.harness import timed_session
from core.runtime.machine import default_threads
from core.runtime.stats import Interval, interval

ROOT = Path(__file__).resolve().parent.parent
MODELS: dict[str, dict[str, Any]] = {
    "tiny": dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=128, vocab_size=512, max_position_embeddings=256),
    "small": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=1024, vocab_size=8192, max_position_embeddings=1024),
}  # fmt: skip
OVERHEAD_MB = 150  # what the goal allows the worker beyond the weights and the cache
TTFT_SLACK = 0.10  # the time to the first token within 10 % of the prefill's own compute

_GENAI_PEAK = """
import json, sys, numpy as np, onnxruntime_genai as og
model = og.Model({folder!r})
params = og.GeneratorParams(model)
params.set_search_options(do_sample=False, max_length={total})
generator = og.Generator(model, params)
generator.append_tokens(np.asarray({prompt!r}, dtype=np.int32))
for _ in range({new}):
    generator.generate_next_token()
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({{"peak_mb": peak / 1024}}))
"""


@dataclass
class Engine:
    """One engine's runs: each round's tokens and step times (step 0: to the first token)."""

    name: str
    generate: Any  # () -> (tokens: list[int], step_ns: list[int])
    tokens: list[list[int]] = field(default_factory=list)
    steps: list[list[int]] = field(default_factory=list)

    def decode(self) -> Interval:
        return interval([(len(s) - 1) / (sum(s[1:]) / 1e9) for s in self.steps])

    def ttft_ms(self) -> Interval:
        return interval([s[0] / 1e6 for s in self.steps])


def build(name: str, folder: Path, threads: int) -> tuple[Path, Path]:
    """The Qwen2 ``name`` saved by transformers with random weights and exported by genai's builder in fp32; its
    genai_config.json set to ``threads`` intra-op threads. Returns (the ONNX folder, the Hugging Face folder)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    import transformers
    from onnxruntime_genai.models import builder

    torch.manual_seed(0)
    reference = folder / "hf"
    transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**MODELS[name])).save_pretrained(reference)
    out = folder / "onnx"
    where = ("Qwen/Qwen2-0.5B", str(reference), str(out), "fp32", "cpu", str(folder / "cache"))
    with contextlib.redirect_stdout(io.StringIO()):  # the builder tells what it reads, layer by layer
        builder.create_model(*where, **builder.parse_extra_options(*where, []))
    config_path = out / "genai_config.json"
    config = json.loads(config_path.read_text())
    config["model"]["decoder"]["session_options"].update(intra_op_num_threads=threads, inter_op_num_threads=1)
    config_path.write_text(json.dumps(config, indent=2))
    return out, reference


def _ours(folder: Path, prompt: Any, new: int, threads: int) -> tuple[Engine, Any, Any]:
    layout = recognised_layout(folder / "model.onnx")
    session, _load = timed_session(str(folder / "model.onnx"), "all", "CPUExecutionProvider", threads)

    def run() -> tuple[list[int], list[int]]:
        trace = ort_generate(session, layout, prompt, new)
        return trace.tokens[0].tolist(), trace.step_ns

    return Engine("the app (Generate's loop)", run), session, layout


def _genai(folder: Path, prompt: Any, new: int) -> Engine:
    import onnxruntime_genai as og

    model = og.Model(str(folder))
    ids = np.asarray(prompt[0], dtype=np.int32)

    def run() -> tuple[list[int], list[int]]:
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=len(ids) + new)
        generator = og.Generator(model, params)
        tokens, steps = [], []
        last = time.perf_counter_ns()
        generator.append_tokens(ids)  # the prefill: its logits chosen from by the first generate_next_token
        for _step in range(new):
            generator.generate_next_token()
            tokens.append(int(generator.get_next_tokens()[0]))
            now = time.perf_counter_ns()
            steps.append(now - last)
            last = now
        return tokens, steps

    return Engine("onnxruntime-genai", run)


def _eager(reference: Path, prompt: Any, new: int, threads: int) -> Engine:
    import torch

    from core.runtime.greedy_eager import eager_generate, load_reference

    torch.set_num_threads(threads)
    network = load_reference(reference)

    def run() -> tuple[list[int], list[int]]:
        trace = eager_generate(network, prompt, new)
        return trace.tokens[0].tolist(), trace.step_ns

    return Engine("PyTorch eager (fp32)", run)


def _ttft_against_prefill(session: Any, layout: Any, prompt: Any, rounds: int) -> tuple[Interval, Interval]:
    """The app's time to the first token (Generate's loop asked for two tokens: its first step is the same whatever
    follows) and the prefill's own compute, one ``session.run`` of the prompt with a past of 0 on the same session,
    each measured alone: the two in turn, no other engine between them (in the rounds above, the other engines' work
    leaves the caches cold for the first step after it)."""
    batch, length = prompt.shape
    feeds = {layout.ids: prompt.astype(layout.ids_dtype)}
    if layout.mask:
        feeds[layout.mask] = np.ones((batch, length), dtype=layout.mask_dtype)
    if layout.positions:
        feeds[layout.positions] = np.arange(length, dtype=layout.positions_dtype).reshape(1, length).repeat(batch, 0)
    for name in layout.past_names:
        feeds[name] = np.zeros(layout.past_shape(batch, 0), dtype=layout.kv_dtype)
    session.run(None, feeds)
    ttft, prefill = [], []
    for _round in range(rounds):
        ttft.append(ort_generate(session, layout, prompt, 2).step_ns[0] / 1e6)
        began = time.perf_counter_ns()
        session.run(None, feeds)
        prefill.append((time.perf_counter_ns() - began) / 1e6)
    return interval(ttft), interval(prefill)


def _app_memory(model: Path, prompt: list[int], new: int, threads: int) -> dict[str, Any]:
    """``python -m core generate`` on the file, in a process of its own: the worker's peak and the cache."""
    done = subprocess.run(
        [sys.executable, "-m", "core", "generate", str(model), "--prompt-ids", ",".join(map(str, prompt)),
         "--new", str(new), "--runs", "3", "--threads", str(threads), "--json"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout))


def _genai_memory(folder: Path, prompt: list[int], new: int) -> float:
    script = _GENAI_PEAK.format(folder=str(folder), total=len(prompt) + new, prompt=prompt, new=new)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout)["peak_mb"])


def _figure(value: Interval, digits: int = 0) -> str:
    return f"{value.median:,.{digits}f} ({value.low:,.{digits}f}–{value.high:,.{digits}f})"


def _met(held: bool) -> str:
    return "met" if held else "NOT met"


def _first_difference(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)


def _same(a: list[int], b: list[int]) -> str:
    step = _first_difference(a, b)
    return "yes, every token" if step is None else f"NO: they part at token {step} ({a[step]} against {b[step]})"


def measure(name: str, work: Path, args: argparse.Namespace) -> list[str]:
    """Every figure of one model, as printed lines."""
    folder, reference = build(name, work / name, args.threads)
    weights = sum(p.stat().st_size for p in folder.glob("model.onnx*"))
    vocabulary = MODELS[name]["vocab_size"]
    prompt = np.random.default_rng(0).integers(0, vocabulary, (1, args.prompt_len))
    ours, session, layout = _ours(folder, prompt, args.new, args.threads)
    engines = [ours, _genai(folder, prompt, args.new), _eager(reference, prompt, args.new, args.threads)]
    for engine in engines:
        engine.generate()  # a warm-up each
    for round_ in range(args.rounds):
        for engine in engines[round_ % 3 :] + engines[: round_ % 3]:
            tokens, steps = engine.generate()
            engine.tokens.append(tokens)
            engine.steps.append(steps)
    ttft, prefill = _ttft_against_prefill(session, layout, prompt, args.ttft_rounds)
    app = _app_memory(folder / "model.onnx", prompt[0].tolist(), args.new, args.threads)
    genai_peak = _genai_memory(folder, prompt[0].tolist(), args.new)
    config = MODELS[name]
    lines = [
        f"{name}: Qwen2, {config['num_hidden_layers']} layers, hidden {config['hidden_size']}, vocabulary "
        f"{vocabulary:,}, fp32 by onnxruntime-genai's builder ({weights / 1e6:.1f} MB); prompt {args.prompt_len} "
        f"tokens, {args.new} new, {args.threads} thread(s), {args.rounds} rounds with the engines in turn",
        f"  {'engine':<28}{'decode tok/s (95 % CI)':<34}first token ms (95 % CI)",
    ]
    lines += [f"  {e.name:<28}{_figure(e.decode()):<34}{_figure(e.ttft_ms(), 2)}" for e in engines]
    mine, genai, eager = (e.decode() for e in engines)
    above = mine.median >= genai.median or mine.high >= genai.low
    lines.append(
        f"  goal: decode at least genai's: {'met' if above else 'NOT met'} (ours {mine.median:,.0f} against "
        f"{genai.median:,.0f}: {mine.median / genai.median:.2f}×; intervals "
        f"{'overlap' if mine.high >= genai.low and genai.high >= mine.low else 'apart'}); PyTorch eager "
        f"{eager.median:,.0f}: ours {mine.median / eager.median:.1f}×"
    )
    lines.append(f"  same greedy tokens as genai on the same file: {_same(ours.tokens[0], engines[1].tokens[0])}")
    lines.append(f"  same greedy tokens as PyTorch eager (fp32): {_same(ours.tokens[0], engines[2].tokens[0])}")
    steady = all(t == ours.tokens[0] for e in engines for t in e.tokens)
    lines.append(f"  every round of every engine gave those tokens: {'yes' if steady else 'NO'}")
    budget = weights / 2**20 + app["kv_cache_mb"] + OVERHEAD_MB
    lines.append(
        f"  goal: the app's worker's peak memory {app['peak_rss_mb']:.0f} MB ≤ weights {weights / 2**20:.1f} + KV "
        f"cache {app['kv_cache_mb']:.2f} + {OVERHEAD_MB} = {budget:.0f} MB: "
        f"{'met' if app['peak_rss_mb'] <= budget else 'NOT met'} (genai's process, same generation: "
        f"{genai_peak:.0f} MB)"
    )
    lines.append(
        f"  goal: the app's time to the first token {_figure(ttft, 3)} ms within {TTFT_SLACK:.0%} of the prefill's own "
        f"compute (one session.run of the prompt) {_figure(prefill, 3)} ms, the two in turn and alone: "
        f"{ttft.median / prefill.median:.2f}×, {_met(ttft.median <= prefill.median * (1 + TTFT_SLACK))}"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny,small", help="of: " + ", ".join(MODELS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--ttft-rounds", type=int, default=60, help="the time to the first token against the prefill")
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--threads", type=int, default=default_threads())
    args = parser.parse_args()
    print(f"{machine()}; onnxruntime {_version('onnxruntime')}, onnxruntime-genai {_version('onnxruntime_genai')}")
    with tempfile.TemporaryDirectory(prefix="generate-bench-") as tmp:
        for name in args.models.split(","):
            for line in measure(name, Path(tmp), args):
                print(line, flush=True)


def _version(module: str) -> str:
    import importlib

    return str(getattr(importlib.import_module(module), "__version__", "?"))


if __name__ == "__main__":
    main()
