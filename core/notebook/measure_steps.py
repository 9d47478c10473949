"""The measuring cells: Benchmark (warm-up, repeated timing, the median with an interval, a bar chart), Profile
(ONNX Runtime's per-node profile summed by operator) and Quantize (dynamic INT8 with onnxruntime.quantization)."""

from __future__ import annotations

from core.i18n import _, language_of
from core.notebook.cells import Cell, code, literal, markdown

__all__ = ["benchmark_cells", "profile_cells", "quantize_cells", "timing_helpers"]


def _plotting() -> list[str]:
    """matplotlib, with fonts that have the labels' glyphs first where their language names some (Chinese: each
    missing font is skipped, matplotlib falls back glyph by glyph)."""
    lines = ["import matplotlib.pyplot as plt", ""]
    fonts = list(language_of().chart_fonts)
    if fonts:
        lines[1:1] = [f"plt.rcParams['font.sans-serif'] = {literal(fonts)}"]
    return lines


def timing_helpers() -> Cell:
    """What every timed step shares: the threads, the timing loop and the median's interval."""
    return code(
        "import os, time",
        "",
        "THREADS = max(1, (os.cpu_count() or 2) - 1)  # every core but one, as the app measures",
        "",
        "def timed(run):",
        "    for _ in range(WARMUP):  # the first runs allocate memory and fill caches: not timed",
        "        run()",
        "    times = []",
        "    for _ in range(REPEAT):",
        "        start = time.perf_counter()",
        "        run()",
        "        times.append((time.perf_counter() - start) * 1000)",
        "    return np.array(times)",
        "",
        "def median_interval(times):",
        '    """The median and a 95% interval for it, from order statistics (no assumption about the shape)."""',
        "    ordered, n = np.sort(times), len(times)",
        "    half = 1.96 * np.sqrt(n) / 2",
        "    low = ordered[max(0, int(np.floor(n / 2 - half)))]",
        "    high = ordered[min(n - 1, int(np.ceil(n / 2 + half)))]",
        "    return float(np.median(ordered)), float(low), float(high)",
        "",
        "def ort_session(path, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL):",
        "    options = ort.SessionOptions()",
        "    options.graph_optimization_level = level",
        "    options.intra_op_num_threads = THREADS",
        "    return ort.InferenceSession(path, options, providers=['CPUExecutionProvider'])",
    )


def benchmark_cells(eager: bool) -> list[Cell]:
    """The Benchmark page: PyTorch eager (when there is a PyTorch model) against ONNX Runtime at DISABLE_ALL and
    ALL, on the input plan, with a bar chart of the medians and their intervals."""
    lines = ["timings = {}"]
    if eager:
        lines += [
            "torch.set_num_threads(THREADS)",
            "with torch.inference_mode():",
            "    timings['PyTorch eager'] = timed(lambda: eager(model))",
        ]
    lines += [
        "for label, level in [('ORT DISABLE_ALL', ort.GraphOptimizationLevel.ORT_DISABLE_ALL),",
        "                     ('ORT ALL', ort.GraphOptimizationLevel.ORT_ENABLE_ALL)]:",
        "    session = ort_session(MODEL_PATH, level)",
        "    timings[label] = timed(lambda session=session: session.run(None, feeds))",
        "",
        "stats = {label: median_interval(t) for label, t in timings.items()}",
        f"baseline = {literal('PyTorch eager' if eager else 'ORT DISABLE_ALL')}",
        "for label, (median, low, high) in stats.items():",
        "    speedup = stats[baseline][0] / median",
        "    print(f'{label:<16} median {median:8.3f} ms  (95% interval {low:.3f}-{high:.3f})  {speedup:5.2f}x')",
        "RESULTS['latency_ms'] = {label: s[0] for label, s in stats.items()}",
    ]
    ylabel, title = _("median latency (ms)"), _("Lower is faster; the error bars show where the median lies, at 95%")
    chart = [
        *_plotting(),
        "labels = list(stats)",
        "medians = [stats[k][0] for k in labels]",
        "errors = [[stats[k][0] - stats[k][1] for k in labels], [stats[k][2] - stats[k][0] for k in labels]]",
        "fig, ax = plt.subplots(figsize=(6, 3))",
        "ax.bar(labels, medians, yerr=errors, capsize=4, color=['#888888', '#4c78a8', '#f58518'][-len(labels):])",
        f"ax.set_ylabel({literal(ylabel)})",
        f"ax.set_title({literal(title)})",
        "plt.tight_layout()",
        "plt.show()",
    ]
    return [
        markdown(
            _(
                "A benchmark runs the model many times on the same inputs (inference) after a few untimed "
                "warm-up runs, and reports the median: one slow run (the machine did something else) moves the "
                "mean, not the median. The interval says how sure the median is; runs on a busy machine vary by "
                "10-25%, so compare intervals, not single numbers."
            ),
            _(
                "ORT_DISABLE_ALL runs the graph as exported; ORT_ENABLE_ALL applies every graph optimization "
                "first. REPEAT and WARMUP are set in the parameter cell at the top."
            ),
        ),
        code(*lines),
        code(*chart),
    ]


def profile_cells() -> list[Cell]:
    """The Profile page: where the time goes, summed by operator from ORT's profile."""
    xlabel = _("time in the kernels of each operator (ms, all profiled runs)")
    return [
        markdown(
            _(
                "ONNX Runtime's profiler records how long each node's kernel took on every run, in a JSON trace. "
                "Summed by operator it shows where the time goes. Profiling slows the runs themselves, so "
                "never time a model with it on."
            )
        ),
        code(
            "import json",
            "from collections import defaultdict",
            "",
            "options = ort.SessionOptions()",
            "options.enable_profiling = True",
            "options.intra_op_num_threads = THREADS",
            "session = ort.InferenceSession(MODEL_PATH, options, providers=['CPUExecutionProvider'])",
            "for _ in range(max(1, REPEAT // 10)):",
            "    session.run(None, feeds)",
            "trace = session.end_profiling()",
            "with open(trace) as f:",
            "    events = json.load(f)",
            "per_op = defaultdict(float)",
            "for event in events:",
            "    if event.get('cat') == 'Node' and event['name'].endswith('_kernel_time'):",
            "        per_op[event['args']['op_name']] += event['dur'] / 1000  # microseconds -> ms",
            "total = sum(per_op.values()) or 1.0",
            "top = sorted(per_op.items(), key=lambda kv: -kv[1])[:10]",
            "for op, ms in top:",
            "    print(f'{op:<28}{ms:10.3f} ms {100 * ms / total:6.1f}%')",
            "RESULTS['profile_ops'] = {op: ms for op, ms in top}",
        ),
        code(
            *_plotting(),
            "fig, ax = plt.subplots(figsize=(6, 3))",
            "ax.barh([op for op, _ in top][::-1], [ms for _, ms in top][::-1])",
            f"ax.set_xlabel({literal(xlabel)})",
            "plt.tight_layout()",
            "plt.show()",
        ),
    ]


def quantize_cells() -> list[Cell]:
    """The Quantize page: a dynamic INT8 variant, its size, its speed and how far its outputs move."""
    return [
        markdown(
            _(
                "Quantization stores weights as 8-bit integers instead of 32-bit floats: the file shrinks "
                "about 4×. Dynamic quantization also computes activations' scales at run time, so it needs no "
                "calibration data. Whether it is faster depends on the machine and the model: small models on "
                "some CPUs get slower. Always measure, and check how far the outputs move."
            )
        ),
        code(
            "from onnxruntime.quantization import QuantType, quantize_dynamic",
            "",
            "QUANTIZED_PATH = 'model.int8.onnx'",
            "",
            "def constants_as_initializers(path):",
            '    """Weights kept in Constant nodes (Paddle and TF exports) become initializers, which quantize_dynamic',
            '    needs (as the app does first)."""',
            "    model = onnx.load(path)",
            "    kept = []",
            "    for node in model.graph.node:",
            "        value = next((a.t for a in node.attribute if a.name == 'value' and a.type == a.TENSOR), None)",
            "        if node.op_type == 'Constant' and node.domain in ('', 'ai.onnx') and value is not None:",
            "            value.name = node.output[0]",
            "            model.graph.initializer.append(value)",
            "        else:",
            "            kept.append(node)",
            "    if len(kept) == len(model.graph.node):",
            "        return path",
            "    del model.graph.node[:]",
            "    model.graph.node.extend(kept)",
            "    onnx.save(model, 'model.initializers.onnx')",
            "    return 'model.initializers.onnx'",
            "",
            "try:",
            "    quantize_dynamic(constants_as_initializers(MODEL_PATH), QUANTIZED_PATH, weight_type=QuantType.QInt8)",
            "except Exception as exc:  # ONNX Runtime's own reason: an op or a dtype it cannot quantize",
            "    QUANTIZED_PATH = None",
            "    print('onnxruntime.quantization could not quantize this model:', exc)",
            "if QUANTIZED_PATH:",
            "    before, after = os.path.getsize(MODEL_PATH), os.path.getsize(QUANTIZED_PATH)",
            "    float_session = ort_session(MODEL_PATH)",
            "    reference = float_session.run(None, feeds)",
            "    quantized = ort_session(QUANTIZED_PATH)",
            "    outputs = quantized.run(None, feeds)",
            "    error = max(float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))",
            "                for a, b in zip(reference, outputs))",
            "    fp32 = median_interval(timed(lambda: float_session.run(None, feeds)))",
            "    int8 = median_interval(timed(lambda: quantized.run(None, feeds)))",
            "    print(f'size {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB ({before / after:.1f}x smaller)')",
            "    print(f'float median {fp32[0]:.3f} ms, INT8 median {int8[0]:.3f} ms '",
            "          f'(95% interval {int8[1]:.3f}-{int8[2]:.3f}): {fp32[0] / int8[0]:.2f}x')",
            "    print('largest difference from the float model:', error)",
            "    RESULTS['quantized'] = {'bytes': after, 'median_ms': int8[0], 'max_abs_diff': error}",
        ),
    ]
