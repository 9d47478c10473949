"""Profile for language models: one prefill of the plan's prompt and one decode step after it (the prefill's own
cache as its past, one new token), each profiled apart per op type and per node, in the report and in the command
line's JSON; a model whose cache is not recognised is profiled one call at a time, with a note saying why. The models
are built from configs with random weights (tests/lm_models.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.model.inputs import plan_inputs
from core.model.intake import IntakeRequest, describe_files
from core.model.measured import MeasuredModel
from core.model.torchload import TorchSource
from core.profile import ProfileReport, ProfileRequest, profile_model
from core.profile.words import NO_SPLIT
from tests import builders
from tests.cli import cli
from tests.lm_models import (  # the models gpt2_past and qwen_genai: fixtures of tests/unit/conftest.py
    LanguageModel,
    hf_offline,  # noqa: F401 - an autouse fixture: transformers never reaches the network
    unrecognised_cache_model,
)
from ui.profile_phases import phase_names, phases_figure, phases_frame

QUICK = ("--iters", "5", "--warmup", "1", "--threads", "1")


def _profiled(path: Path) -> ProfileReport:
    plan = plan_inputs(describe_files(IntakeRequest(paths=[str(path)])))
    return profile_model(ProfileRequest(model=MeasuredModel(path=str(path), inputs=plan), iterations=20, warmup=2))


def _profiled_beside_eager(lm: LanguageModel) -> tuple[str, list[Any], TorchSource, ProfileReport]:
    """The export profiled briefly with its Hugging Face folder as PyTorch eager: its path, plan, source, report."""
    path = str(lm.onnx)
    plan = plan_inputs(describe_files(IntakeRequest(paths=[path])))
    source = TorchSource(kind="hf", path=str(lm.reference))
    report = profile_model(
        ProfileRequest(model=MeasuredModel(path=path, inputs=plan, torch_source=source), iterations=3, warmup=1)
    )
    return path, plan, source, report


def test_a_language_model_is_profiled_as_one_prefill_and_one_decode_step_after_it(qwen_genai: LanguageModel) -> None:
    report = _profiled(qwen_genai.onnx)
    prefill, decode = report.phases["prefill"], report.phases["decode"]
    assert (prefill.new_tokens, prefill.past, decode.new_tokens, decode.past) == (16, 0, 1, 16)
    assert prefill.op_types[0].op_type == "MatMul"  # the weights over the whole prompt
    assert {"MatMul", "GroupQueryAttention"} <= {t.op_type for t in decode.op_types}
    # each attention sees what its phase feeds it: the prompt on an empty cache, then one token on the prompt's cache
    attention = {
        phase: [n.input_shapes[:2] for n in profile.nodes if n.op_type == "GroupQueryAttention"]
        for phase, profile in report.phases.items()
    }
    assert attention["prefill"] == [["float[1×16×128]", "float[1×2×0×16]"]] * 2
    assert attention["decode"] == [["float[1×1×128]", "float[1×2×16×16]"]] * 2
    # the decode step's rows are its kernels, inside ONNX Runtime's own time for the step, inside the measured call
    assert sum(t.mean_ms for t in decode.op_types) == pytest.approx(decode.kernel_ms)
    assert 0.2 * decode.run_ms <= decode.kernel_ms <= decode.run_ms <= decode.call_ms * 1.05
    assert decode.overhead_ms == pytest.approx(decode.call_ms - decode.kernel_ms)
    assert prefill.call_ms == report.call_ms and prefill.op_types == report.op_types  # the plan's call is the prefill
    said = report.headline.english()
    assert "Prefill of 16 tokens:" in said and "; one decode step after it:" in said
    # the page's chart: the two phases side by side per op type (the page itself: tests/app/test_profile_phases_page)
    frame = phases_frame(prefill, decode)
    assert frame["decode_ms"].sum() == pytest.approx(decode.kernel_ms) and frame["op_type"].iloc[0] == "MatMul"
    figure = phases_figure(frame, phase_names(prefill, decode))
    assert [t.name for t in figure.data] == ["prefill (16 tokens)", "decode (1 token after 16)"]
    assert figure.layout.barmode == "group" and figure.layout.xaxis.title.text == "ms per call"  # beside each other


def test_the_json_has_a_prefill_and_a_decode_phase_each_with_rows_shaped_as_the_ops(gpt2_past: LanguageModel) -> None:
    done = cli("profile", str(gpt2_past.onnx), *QUICK, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data["phases"]) == {"prefill", "decode"}
    for phase in data["phases"].values():
        assert phase["op_types"] and set(phase["op_types"][0]) == set(data["op_types"][0])
        assert phase["nodes"] and set(phase["nodes"][0]) == set(data["nodes"][0])
    assert data["phases"]["decode"]["new_tokens"] == 1 and data["phases"]["decode"]["past"] == 16
    text = cli("profile", str(gpt2_past.onnx), *QUICK).stdout
    assert "prefill  16 tokens:" in text and "decode one token after 16:" in text


def test_a_cache_that_is_not_recognised_is_profiled_one_call_at_a_time_and_says_why(tmp_path: Path) -> None:
    path = builders.write(unrecognised_cache_model(), tmp_path / "odd.onnx")
    report = _profiled(path)
    assert report.phases == {} and report.op_types
    assert report.notes[0].key == NO_SPLIT
    assert "its layout was not recognised" in report.notes[0].english()
    assert "Profile does not split a prefill from a decode step" in report.notes[0].english()


def test_a_genai_export_is_profiled_beside_its_hugging_face_folder_fed_as_the_export_is(
    qwen_genai: LanguageModel,
) -> None:
    # onnxruntime-genai's builder writes every past key before the values and no position_ids: PyTorch eager takes the
    # export's tensors by their names (it took them by place, and failed), and gives its outputs in the export's order
    import numpy as np
    import onnxruntime as ort
    import torch

    from core.model.inputs import make_inputs
    from core.model.torchload import load_module

    path, plan, source, report = _profiled_beside_eager(qwen_genai)
    assert report.eager is not None and report.eager.modules and report.eager.call_ms > 0
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = make_inputs(plan, 1, 0)
    names, outputs = [s.name for s in plan], [o.name for o in session.get_outputs()]
    assert names.index("past_key_values.1.key") < names.index("past_key_values.0.value")  # keys first
    module = load_module(source, names, outputs)
    with torch.inference_mode():
        eager = module(*(torch.from_numpy(feeds[n]) for n in names))
    for name, want, got in zip(outputs, session.run(None, feeds), eager, strict=True):
        assert np.allclose(want, got.numpy(), atol=1e-4), name


def test_pytorch_eager_is_profiled_in_the_same_two_steps_its_decode_step_fed_from_its_own_prefill(
    gpt2_past: LanguageModel,
) -> None:
    import torch

    from core.model.inputs import make_inputs
    from core.model.torchload import load_module
    from core.profile.phases import eager_decode, recognised_cache
    from ui.profile_phases import eager_phases_frame

    path, plan, source, report = _profiled_beside_eager(gpt2_past)
    assert report.eager is not None and report.eager_decode is not None and set(report.phases) == {"prefill", "decode"}
    assert report.eager_decode.call_ms > 0 and any(op.name == "aten::addmm" for op in report.eager_decode.ops)
    frame = eager_phases_frame(report.eager, report.eager_decode)  # the page's table, beside ONNX Runtime's phases
    assert list(frame.columns) == ["aten op", "prefill, ms per call (share)", "decode, ms per call (share)"]
    assert len(frame) and not frame.iloc[:, 1:].eq("—").all(axis=None)

    import onnx

    layout, _none = recognised_cache(onnx.load(path, load_external_data=False), path)
    assert layout is not None
    names, outputs = [s.name for s in plan], ["logits", *layout.present_names]
    module = load_module(source, names, outputs)
    seen: list[dict[str, list[int]]] = []

    class Recorded(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, *tensors: torch.Tensor) -> object:
            seen.append({n: list(t.shape) for n, t in zip(names, tensors, strict=True)})
            return self.inner(*tensors)

    eager_decode(Recorded(), plan, outputs, layout, make_inputs(plan, 1, 0), (1, 1, 0))
    prefill, step = seen[0], seen[-1]
    assert prefill["input_ids"] == [1, 16] and prefill["past_key_values.0.key"][2] == 0  # the prompt, an empty past
    assert step["input_ids"] == [1, 1] and step["past_key_values.1.value"][2] == 16  # a token on the prompt's cache
    assert step["attention_mask"] == [1, 17] and step["position_ids"] == [1, 1]
