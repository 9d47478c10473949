"""The notebook builder without a kernel: both languages, the steps that apply, code cells that never import the
app, a sample's architecture that is the zoo's own, and names from a model that cannot reach Markdown or break
out of the code."""

from __future__ import annotations

import ast
import dataclasses
import re

import nbformat
import pytest

from core.errors import NotebookError
from core.model import ModelRecord, TensorSpec, cards, zoo
from core.notebook import STEPS, NotebookPlan, build_notebook, default_plan, plan_steps
from core.notebook.torch_steps import torch_model_cells
from tests.cli import cli

HOSTILE = "x'); import os; os.system('boom') #\n# Owned <img src=x onerror=alert(1)> [a](javascript:alert(1)) \"\"\""
CJK = re.compile(r"[\u4e00-\u9fff]")


def _onnx_record(name: str = "detector", input_name: str = "images") -> ModelRecord:
    return ModelRecord(
        id="0" * 64,
        name=name,
        format="onnx",
        size_bytes=10,
        path=f"/data/ws/{name}.onnx",
        inputs=[TensorSpec(name=input_name, dtype="float32", shape=["batch", 3, 640, 640])],
        outputs=[TensorSpec(name="out", dtype="float32", shape=["batch", 1, 640, 640])],
    )


def _cells(plan: NotebookPlan, kind: str) -> list[str]:
    return [c.source for c in build_notebook(plan).cells if c.cell_type == kind]


@pytest.fixture(scope="module")
def tinycnn() -> ModelRecord:
    record = cards.known("tinycnn")
    assert record is not None
    return record


def test_the_lessons_are_in_the_chosen_language_and_the_code_is_the_same(tinycnn: ModelRecord) -> None:
    english, chinese = default_plan(tinycnn, list(STEPS), "en"), default_plan(tinycnn, list(STEPS), "zh")
    en, zh = _cells(english, "markdown"), _cells(chinese, "markdown")
    assert len(en) == len(zh) and not any(CJK.search(t) for t in en)
    assert all(CJK.search(t) for t in zh)
    for term in ("导出", "算子", "计算图", "执行提供者", "图优化", "量化", "推理"):
        assert term in "\n".join(zh), term
    strip = [re.sub(r"#.*", "", s) for s in _cells(english, "code")]  # comments and labels aside
    assert len(strip) == len(_cells(chinese, "code"))


def test_no_code_cell_imports_the_app(tinycnn: ModelRecord) -> None:
    for record in (tinycnn, _onnx_record()):
        for source in _cells(default_plan(record, list(STEPS)), "code"):
            tree = ast.parse(source)
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                assert not {n.split(".")[0] for n in names} & {"core", "ui", "app_pages", "streamlit"}, source


def test_a_hostile_model_name_and_input_name_stay_literals_in_code_and_out_of_markdown() -> None:
    record = _onnx_record(name=HOSTILE, input_name=HOSTILE)
    plan = default_plan(record, list(STEPS), "en")
    markdown = "\n".join(_cells(plan, "markdown"))
    assert "<img" not in markdown and "javascript:" not in markdown and "boom" not in markdown
    for source in _cells(plan, "code"):
        tree = ast.parse(source)  # the name cannot end a string and start a statement
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "system"]
        assert not calls, source
    assert any(repr(HOSTILE) in s for s in _cells(plan, "code"))


def test_the_steps_that_apply_come_in_the_walks_order_with_what_they_need(tinycnn: ModelRecord) -> None:
    assert plan_steps(tinycnn, ["benchmark"]) == ("model", "export", "benchmark")
    assert plan_steps(_onnx_record(), ["quantize", "export", "decode"]) == ("model", "decode", "quantize")
    with pytest.raises(NotebookError, match="the steps are: model, export, decode"):
        plan_steps(tinycnn, ["benchmark", "deploy"])


def test_the_plan_is_the_models_own_size_not_one_by_one() -> None:
    plan = default_plan(_onnx_record(), ["benchmark"])
    assert plan.inputs[0].shape == [1, 3, 640, 640]
    assert any("'shape': [1, 3, 640, 640]" in s for s in _cells(plan, "code"))


@pytest.mark.parametrize("name", sorted(zoo.SAMPLES))
def test_a_samples_architecture_written_out_is_the_zoos_model(name: str) -> None:
    import torch

    record = dataclasses.replace(_onnx_record(), name=name, format="sample", path="")
    source = torch_model_cells(record)[1].source
    namespace: dict[str, object] = {}
    exec(compile(source, f"<{name} cell>", "exec"), namespace)  # our own generated code
    built, expected = namespace["model"].state_dict(), zoo.build_model(name).state_dict()  # type: ignore[attr-defined]
    assert built.keys() == expected.keys()
    assert all(torch.equal(built[k], expected[k]) for k in expected)


def test_the_command_writes_a_notebook_in_chinese_and_refuses_an_unknown_step(tmp_path: object) -> None:
    out = f"{tmp_path}/walk.ipynb"
    done = cli("notebook", "sample:tinycnn", "--lang", "zh", "--steps", "decode", "-o", out)
    assert done.returncode == 0, done.stderr
    notebook = nbformat.read(out, as_version=4)
    nbformat.validate(notebook)
    headings = [c.source for c in notebook.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    assert headings == ["## 模型", "## 导出", "## 解析", "## 这个笔记本测得的结果"]
    refused = cli("notebook", "sample:tinycnn", "--steps", "deploy", "-o", out)
    assert refused.returncode == 2 and "the steps are" in refused.stderr


def test_the_command_takes_dims_as_the_other_commands_do_and_refuses_a_size_nothing_says(tmp_path: object) -> None:
    """`core notebook` lacked --dim: a dim nothing in the model sizes had no way in (a notebook times what it runs,
    so it is refused until given), and one the plan guessed could not be changed."""
    import onnx

    from tests import wild

    model, out = f"{tmp_path}/groups.onnx", f"{tmp_path}/walk.ipynb"
    onnx.save(wild.unhinted_model(), model)
    refused = cli("notebook", model, "--steps", "benchmark", "-o", out)
    assert refused.returncode != 0 and "--dim group=N" in refused.stderr
    done = cli("notebook", model, "--steps", "benchmark", "--dim", "group=4", "-o", out)
    assert done.returncode == 0, done.stderr
    code = "\n".join(c.source for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code")
    assert "'shape': [1, 16, 4]" in code
    wrong = cli("notebook", model, "--dim", "groups=4", "-o", out)
    assert wrong.returncode != 0 and "no dim named groups; its named dims are: batch, group" in wrong.stderr
    assert cli("notebook", model, "--dim", "group=0", "-o", out).returncode != 0
