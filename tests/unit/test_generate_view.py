"""What Benchmark's generate panel shows of a generation (ui.generate_view), without a browser: the figures of both
engines side by side, each token's latency as the chart takes it, and the tokens side by side with the step where
they part marked, and their text as the tokenizer said it, spaces made visible."""

from __future__ import annotations

from core.generate.records import EngineRun, GenerateReport, Percentiles
from core.model.generative import CacheLayer, GenerativeLayout, GenerativePlan
from core.runtime.stats import Interval
from ui.generate_view import figures_frame, steps_frame, tokens_frame


def _run(engine: str, label: str, tokens: list[int], pieces: list[str]) -> EngineRun:
    span = Interval(median=2.0, low=1.5, high=2.5)
    return EngineRun(
        engine=engine, label=label, tokens=[tokens], ttft_ms=span, prefill_tok_s=span, decode_tok_s=span,
        inter_token_ms=Percentiles(p50=1.0, p95=2.0, p99=3.0), step_ms=[5.0] + [1.0] * (len(tokens) - 1),
        kv_cache_mb=0.5, peak_rss_mb=80.0, load_ms=12.0, pieces=[pieces],
    )  # fmt: skip


def _report() -> GenerateReport:
    layer = CacheLayer(index=0, past_key="pk", past_value="pv", present_key="k", present_value="v")
    layout = GenerativeLayout(
        ids="input_ids", ids_dtype="int64", logits="logits", layers=[layer], kv_dtype="float32",
        kv_shape=["b", 2, "p", 16], sequence_axis=2, kv_heads=2, head_size=16, vocabulary=512,
    )  # fmt: skip
    return GenerateReport(
        model="qwen", model_id="x", created_at="", layout=layout, plan=GenerativePlan(), prompt_ids=[[1, 2]],
        prompt_text=["你好"],
        ort=_run("ort", "ONNX Runtime (ALL)", [7, 8, 9, 10], ["世", "", "界", " model"]),
        eager=_run("eager", "PyTorch eager", [7, 8, 4, 5], ["世", "", "<", "\n"]),
        first_divergent_token=2, logit_diffs=[1e-7, 2e-7, 0.5, 0.7], runs=2,
    )  # fmt: skip


def test_the_tokens_side_by_side_mark_where_they_part_and_show_spaces_and_line_breaks() -> None:
    frame = tokens_frame(_report())
    assert list(frame["step"]) == [0, 1, 2, 3]
    assert list(frame["ONNX Runtime (ALL)"]) == [7, 8, 9, 10] and list(frame["PyTorch eager"]) == [7, 8, 4, 5]
    assert list(frame["tokens"]) == ["same", "same", "◀ the first to part", "differ"]
    assert list(frame["ONNX Runtime (ALL): text"]) == ["世", "", "界", "␣model"]
    assert list(frame["PyTorch eager: text"])[2:] == ["<", "↵"]  # a cell renders no markup: "<" stays itself
    assert list(frame["largest logit difference"]) == ["1.00e-07", "2.00e-07", "5.00e-01", "7.00e-01"]


def test_the_figures_put_the_engines_side_by_side_and_the_chart_gets_each_step() -> None:
    report = _report()
    figures = figures_frame([report.ort, report.eager])  # type: ignore[list-item]
    assert list(figures.columns) == ["figure", "ONNX Runtime (ALL)", "PyTorch eager"]
    assert figures.iloc[0].tolist() == ["time to first token, ms (95 % CI)", "2 (1.5–2.5)", "2 (1.5–2.5)"]
    assert "between tokens, ms: p50 / p95 / p99" in list(figures["figure"])
    steps = steps_frame(report)
    assert len(steps) == 8 and list(steps.columns) == ["engine", "label", "step", "ms"]
    assert steps[steps["step"] == 0]["ms"].tolist() == [5.0, 5.0]
