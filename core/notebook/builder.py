"""The notebook itself: the setup every walk shares (parameters, imports, the input plan), each chosen step's
lesson and code, and a last cell that prints what was measured; written with nbformat."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import NotebookError
from core.i18n import _, pgettext, using
from core.model.export_options import ExportOptions
from core.model.inputs import BenchInput, plan_inputs
from core.model.records import ModelRecord
from core.model.values import notebook_make_inputs
from core.notebook.cells import Cell, code, literal, markdown
from core.notebook.lm_steps import lm_export_cells, lm_model_cells
from core.notebook.measure_steps import benchmark_cells, profile_cells, quantize_cells, timing_helpers
from core.notebook.onnx_steps import decode_cells, onnx_model_cells, partition_cells
from core.notebook.records import ONNX_STEPS, STEPS, NotebookPlan
from core.notebook.torch_steps import EXPORTED_FILE, export_cells, torch_model_cells

if TYPE_CHECKING:
    import nbformat

__all__ = [
    "build_notebook",
    "default_export",
    "default_plan",
    "model_files",
    "notebook_bytes",
    "plan_steps",
    "start_inputs",
]


def plan_steps(record: ModelRecord, steps: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The steps that apply to ``record``, in the walk-through's order, with what they need: the model is always
    built or opened first; a PyTorch model is exported before any step that runs ONNX. Export applies only to a
    PyTorch model."""
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise NotebookError(
            _("There is no step {unknown}; the steps are: {steps}.").format(
                unknown=", ".join(map(repr, unknown)), steps=", ".join(STEPS)
            )
        )
    chosen = {"model", *steps}
    if record.is_pytorch and chosen & ONNX_STEPS:
        chosen.add("export")
    if not record.is_pytorch:
        chosen.discard("export")
    return tuple(s for s in STEPS if s in chosen)


def default_export(record: ModelRecord) -> ExportOptions:
    """The Export page's defaults for a PyTorch model: its example shapes, dtypes, dynamic axes and names."""
    return ExportOptions(
        input_shapes={
            s.name: [d if isinstance(d, int) and d > 0 else 1 for d in (s.shape or [])] for s in record.inputs
        },
        input_dtypes={s.name: s.dtype if s.dtype != "unknown" else "float32" for s in record.inputs},
        dynamic_axes={s.name: dict(s.dynamic_axes) for s in record.inputs if s.dynamic_axes},
        output_names=[s.name for s in record.outputs] if record.format != "torchscript" else [],
    )


def start_inputs(record: ModelRecord) -> list[BenchInput]:
    """The default input plan of ``record``; for a PyTorch model whose code keeps no dtypes, float32 (as the
    Export page assumes). A model that does not say its input shapes (TorchScript, a model's own code) is refused
    with the way out."""
    unknown = [s.name for s in record.inputs if s.shape is None]
    if unknown:
        raise NotebookError(
            _(
                "The model does not say the shape of its input {names} (TorchScript and a model's own code keep "
                "none). Export it first on the Export page, or give the shape on the command line with --input "
                "NAME=1,3,224,224."
            ).format(names=", ".join(map(repr, unknown)))
        )
    plan = plan_inputs(record)
    if record.is_pytorch:
        for spec in plan:
            spec.dtype = spec.dtype if spec.dtype not in ("unknown", "") else "float32"
    return plan


def default_plan(
    record: ModelRecord, steps: list[str] | tuple[str, ...] = tuple(STEPS), language: str = "en"
) -> NotebookPlan:
    """A notebook with the app's defaults: the model's default input plan and, for PyTorch, the default export."""
    return NotebookPlan(
        model=record,
        inputs=start_inputs(record),
        export=default_export(record) if record.is_pytorch else None,
        steps=plan_steps(record, steps),
        language=language,
    )


def model_files(record: ModelRecord, inputs: list[BenchInput]) -> list[str]:
    """The files the notebook loads from beside itself: the model's (and its external data), its code's file or
    folder, and the arrays of inputs given as real data."""
    files = [p for p in [record.path, *record.files] if p]
    if record.format == "hf":  # a Hugging Face folder: its config, weights and tokenizer beside the notebook
        files = [f for f in record.files if Path(f).parent == Path(record.path) and not f.endswith(".onnx")]
    if record.code is not None:
        files.append(str(record.code.root))
    files += [spec.data for spec in inputs if spec.real_data and spec.data]
    return list(dict.fromkeys(files))


def _plan_rows(inputs: list[BenchInput]) -> list[dict[str, object]]:
    return [
        {
            "name": s.name,
            "dtype": s.dtype,
            "shape": [int(d) for d in s.shape],
            "values": s.kind,
            "low": float(s.low),
            "high": float(s.high),
            **({"data": Path(s.data).name} if s.real_data and s.data else {}),
            **({"texts": list(s.texts)} if s.texts else {}),
        }
        for s in inputs
    ]


_MAKE_INPUTS = notebook_make_inputs()  # written from the rows of core.model.values


def _setup(plan: NotebookPlan) -> list[Cell]:
    names = pgettext("list", ", ").join(_(STEPS[s]) for s in plan.steps)
    torch_lines = ["import torch"] if plan.model.is_pytorch else []
    feeds = [
        "",
        "def eager(model):",
        "    return model(*[torch.from_numpy(feeds[name]) for name in feeds])",
    ]
    shapes = "; ".join("×".join(str(d) for d in s.shape) or _("a scalar") for s in plan.inputs)
    return [
        markdown(
            "# " + _("ONNX Workbench: your walk-through, to run anywhere"),
            _(
                "This notebook redoes on your own model what the app's pages did: {steps}. It uses only public "
                "libraries (torch, onnx, onnxruntime, numpy, matplotlib), so it runs in any Jupyter with them "
                "installed. Each section starts with the page's lesson."
            ).format(steps=names),
        ),
        code(
            "# " + _("Parameters: how many timed runs, and how many untimed warm-up runs before them"),
            f"REPEAT = {int(plan.repeat)}",
            f"WARMUP = {int(plan.warmup)}",
            tags=("parameters",),
        ),
        code(
            "import numpy as np",
            "import onnx",
            "import onnxruntime as ort",
            *torch_lines,
            "",
            f"MODEL_NAME = {literal(plan.model.name)}",
            "RESULTS = {'model': MODEL_NAME}",
            "print('onnx', onnx.__version__, '| onnxruntime', ort.__version__)",
        ),
        markdown(
            _(
                "The input plan is what the app ran the model on: each input's shape ({shapes}), dtype and how its "
                "values are made. Every step below uses these same inputs."
            ).format(shapes=shapes)
        ),
        code(
            f"PLAN = {literal(_plan_rows(plan.inputs))}",
            _MAKE_INPUTS,
            "feeds = make_inputs()",
            "for name, array in feeds.items():",
            "    print(repr(name), array.dtype, array.shape)",
            *(feeds if plan.model.is_pytorch else []),
        ),
    ]


def _step_cells(plan: NotebookPlan, step: str) -> list[Cell]:
    record = plan.model
    if step == "model" and record.format == "hf":  # a Hugging Face folder's language model (core.notebook.lm_steps)
        return lm_model_cells()
    if step == "model":
        return torch_model_cells(record) if record.is_pytorch else onnx_model_cells(record)
    if step == "export" and record.format == "hf":
        return lm_export_cells(plan.export or default_export(record), EXPORTED_FILE)
    if step == "export":
        return export_cells(plan.export or default_export(record))
    if step == "decode":
        return decode_cells()
    if step == "partition":
        return partition_cells()
    if step == "benchmark":
        return benchmark_cells(eager=record.is_pytorch)
    if step == "profile":
        return profile_cells()
    return quantize_cells()


def _cells(plan: NotebookPlan) -> list[Cell]:
    cells = _setup(plan)
    steps = plan_steps(plan.model, plan.steps)
    for step in steps:
        cells.append(markdown("## " + _(STEPS[step])))
        own = _step_cells(plan, step)
        timed = step in ("benchmark", "profile", "quantize")
        if timed and not any(c.source.startswith("import os, time") for c in cells):
            own.insert(1, timing_helpers())  # once, after the lesson of the first step that times
        cells += own
    cells += [
        markdown("## " + _("What this notebook measured")),
        code("import json", "", "print(json.dumps(RESULTS, indent=1, default=float))"),
    ]
    return cells


def build_notebook(plan: NotebookPlan) -> nbformat.NotebookNode:
    """The notebook of ``plan``, its Markdown in the plan's language."""
    import nbformat

    with using(plan.language):
        cells = _cells(plan)
    made = [
        nbformat.v4.new_markdown_cell(c.source)
        if c.kind == "markdown"
        else nbformat.v4.new_code_cell(c.source, metadata={"tags": list(c.tags)} if c.tags else {})
        for c in cells
    ]
    notebook = nbformat.v4.new_notebook(
        cells=made,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(notebook)
    return notebook


def notebook_bytes(plan: NotebookPlan) -> bytes:
    """The notebook of ``plan`` as the bytes of an .ipynb file."""
    import nbformat

    return nbformat.writes(build_notebook(plan)).encode()
