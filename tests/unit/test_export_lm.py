"""Export with a cache: a Hugging Face folder's causal language model (a tiny GPT-2, a tiny Qwen2, random weights,
nothing downloaded) exported with ``past_key_values.N.key/value`` in and ``present.N.key/value`` out, its batch, new
tokens and past dynamic, recognised as a language model, and verified by generating greedily with PyTorch eager and
ONNX Runtime on several prompts: the same tokens, token by token."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import ExportError
from core.export import ExportOptions, ExportRequest, export_model
from core.export.causal_lm import DIVERGES, NEW_TOKENS, PROMPTS, greedy_checks, lm_code
from core.model.torchload import TorchSource
from tests.cli import cli
from tests.hf_folders import hf_gpt2, hf_qwen2

__all__ = ["hf_gpt2", "hf_qwen2"]  # the session fixtures, imported for pytest


def _exported(folder: Path, out: Path, *options: str) -> dict[str, Any]:
    done = cli("export", str(folder), "-o", str(out / "model.onnx"), "--json", *options)
    assert done.returncode == 0, done.stderr + done.stdout[-2000:]
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def gpt2_export(hf_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`python -m core export GPT2_FOLDER -o model.onnx --json`, once for the module."""
    return _exported(hf_gpt2, tmp_path_factory.mktemp("gpt2_export"))


@pytest.fixture(scope="module")
def qwen2_export(hf_qwen2: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _exported(hf_qwen2, tmp_path_factory.mktemp("qwen2_export"))


@pytest.mark.parametrize("which", ["gpt2_export", "qwen2_export"])
def test_a_causal_lm_folder_is_exported_with_its_cache_and_generates_pytorchs_greedy_tokens(
    which: str, request: pytest.FixtureRequest
) -> None:
    report = request.getfixturevalue(which)
    assert report["ok"] and report["exporter"] == "dynamo"
    assert all(check["ok"] for check in report["checks"])
    assert "recognised as a language model with a cache" in [c["name"] for c in report["checks"]]
    assert [(len(g["prompt"]), len(g["prompt"][0])) for g in report["greedy"]] == list(PROMPTS)
    for check in report["greedy"]:
        assert check["eager"] == check["onnx"] and check["first_divergent"] is None
        assert len(check["eager"][0]) == NEW_TOKENS and len(check["logit_diff"]) == NEW_TOKENS
        assert max(check["logit_diff"]) < 1e-4
    tokens = {t for check in report["greedy"] for row in check["eager"] for t in row}
    assert len(tokens) > 4  # the prompts' tokens vary: the comparison is no repetition of one token
    assert all(trial["ok"] for trial in report["trials"]) and len(report["trials"]) == len(PROMPTS)
    layout = report["record"]["generative"]
    assert layout is not None and len(layout["layers"]) == 2


def test_the_exported_cache_has_the_names_optimum_writes_and_every_length_open(
    gpt2_export: dict[str, Any],
) -> None:
    import onnx
    import onnxruntime as ort

    path = gpt2_export["onnx_path"]
    graph = onnx.load(path, load_external_data=False).graph
    dims = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in graph.input}
    assert dims["input_ids"] == ["batch_size", "sequence_length"]
    assert dims["attention_mask"] == ["batch_size", "total_sequence_length"]
    assert dims["past_key_values.1.value"] == ["batch_size", 4, "past_sequence_length", 16]
    assert [o.name for o in graph.output] == ["logits"] + [
        f"present.{i}.{k}" for i in range(2) for k in ("key", "value")
    ]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    batch, new, past = 3, 1, 7
    feeds = {
        "input_ids": np.zeros((batch, new), np.int64),
        "attention_mask": np.ones((batch, past + new), np.int64),
        "position_ids": np.full((batch, new), past, np.int64),
        **{n: np.zeros((batch, 4, past, 16), np.float32) for n in dims if n.startswith("past_key_values")},
    }
    logits, *present = session.run(None, feeds)
    assert logits.shape == (batch, new, 512) and present[0].shape == (batch, 4, past + new, 16)


def test_an_export_whose_tokens_part_from_pytorchs_is_caught_at_the_step_they_part(
    gpt2_export: dict[str, Any], hf_gpt2: Path
) -> None:
    import onnxruntime as ort
    import torch

    from core.model.causal_lm import load_causal_lm
    from core.model.intake import IntakeRequest, describe_files

    other = load_causal_lm(hf_gpt2)
    with torch.no_grad():
        weight = other.transformer.h[1].mlp.c_fc.weight  # another model than the one exported
        weight.add_(torch.randn(weight.shape, generator=torch.Generator().manual_seed(1)))
    layout = describe_files(IntakeRequest(paths=[gpt2_export["onnx_path"]])).generative
    session = ort.InferenceSession(gpt2_export["onnx_path"], providers=["CPUExecutionProvider"])
    checks, trials = greedy_checks(other, session, layout, lambda _f, _m: None)
    assert not any(t.ok for t in trials)
    first = checks[0]
    assert first.first_divergent is not None and first.eager != first.onnx
    assert trials[0].error is not None and trials[0].error.key == DIVERGES
    assert len(first.logit_diff) == first.first_divergent + 1  # compared while both had seen the same tokens


def test_the_code_the_export_offers_redoes_it_with_the_legacy_exporter_and_checks_the_tokens(
    hf_qwen2: Path, tmp_path: Path
) -> None:
    shutil.copytree(hf_qwen2, tmp_path / hf_qwen2.name)
    script = tmp_path / "export_lm.py"
    options = ExportOptions(input_shapes={}, exporter="legacy", opset=17)
    script.write_text(lm_code(hf_qwen2, options, str(tmp_path / "elsewhere" / "model.onnx")))
    done = subprocess.run([sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("same tokens") == len(PROMPTS) and "tokens differ" not in done.stdout
    assert (tmp_path / "model.onnx").exists()


def test_the_notebook_of_a_folder_builds_it_exports_it_with_its_cache_and_generates_with_both(
    hf_gpt2: Path, tmp_path: Path
) -> None:
    from core.model.intake import IntakeRequest, describe_files
    from core.notebook.builder import default_plan, model_files, notebook_bytes
    from tests.hf_folders import with_onnx_family

    folder = with_onnx_family(Path(shutil.copytree(hf_gpt2, tmp_path / "gpt2")), ("", "_fp16"))
    record = describe_files(IntakeRequest(paths=[str(folder)]))
    plan = default_plan(record, ["model", "export", "benchmark"])
    source = notebook_bytes(plan).decode()
    assert "class CausalLMWithCache(torch.nn.Module)" in source and "trust_remote_code=False" in source
    assert "dynamic_shapes = {" in source and "def onnx_greedy(prompt, new_tokens)" in source
    past = next(i for i in plan.inputs if i.name == "past_key_values.0.key")
    assert past.shape[2] == 0  # the plan is a prefill: the past is empty
    files = {Path(f).name for f in model_files(record, plan.inputs)}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= files and not any(".onnx" in f for f in files)


def test_the_command_line_prints_each_prompts_tokens_by_both_engines(capsys: pytest.CaptureFixture[str]) -> None:
    from core.cli.export import _print_export
    from core.export import ExportReport
    from core.export.options import GreedyCheck
    from core.notes import Note

    check = GreedyCheck(
        label="input_ids 2×3 +2", prompt=[[1, 2, 3], [4, 5, 6]], eager=[[7, 8], [9, 10]], onnx=[[7, 8], [9, 11]],
        first_divergent=1, logit_diff=[1e-7, 0.3],
    )  # fmt: skip
    report = ExportReport(
        ok=False, exporter="dynamo", exporter_reason=Note(key="x"), opset_requested=18, opset_produced=18,
        opset_note=None, onnx_path="m.onnx", files=[], checks=[], trials=[], torch_ops={}, onnx_ops={}, changes=[],
        warnings=[], code="", seconds=1.0, greedy=[check],
    )  # fmt: skip
    _print_export(report)
    lines = capsys.readouterr().out.splitlines()
    assert "  tokens  input_ids 2×3 +2  PyTorch 7 8  ONNX Runtime 7 8" in lines
    assert "  tokens  input_ids 2×3 +2  PyTorch 9 10  ONNX Runtime 9 11" in lines


def test_a_language_models_export_refuses_an_opset_its_exporter_does_not_take_before_reading_the_folder(
    tmp_path: Path,
) -> None:
    asked = ExportOptions(input_shapes={}, exporter="legacy", opset=24)
    source = TorchSource(kind="hf", path=str(tmp_path / "never_read"))
    with pytest.raises(ExportError, match=r"^The legacy exporter takes opsets 9–20; you asked for 24\.$"):
        export_model(ExportRequest(source=source, options=asked, out_dir=str(tmp_path)))
