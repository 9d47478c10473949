"""What a notebook is written from: the model, the input plan, the export options (core.model's ExportOptions, as
the Export page exports) and the steps; and the zip job's request and answer."""

from __future__ import annotations

from dataclasses import dataclass

from core.access import ReadPath, WritePath
from core.model.export_options import ExportOptions
from core.model.inputs import BenchInput
from core.model.records import ModelRecord
from core.page_titles import PAGE_TITLES

__all__ = ["ONNX_STEPS", "STEPS", "NotebookArchive", "NotebookPlan", "NotebookRequest"]

# step -> its heading in the notebook: the page's own title (core.page_titles), translated where written
STEPS: dict[str, str] = {
    step: PAGE_TITLES[step] for step in ("model", "export", "decode", "partition", "benchmark", "profile", "quantize")
}
ONNX_STEPS = frozenset({"decode", "partition", "benchmark", "profile", "quantize"})  # they need an ONNX file


@dataclass(frozen=True, kw_only=True)
class NotebookPlan:
    """One notebook: which model (and its PyTorch original), run on which inputs, through which steps, in which
    language. ``repeat`` and ``warmup`` are the timing loops' defaults (a parameter cell the reader can change)."""

    model: ModelRecord  # the model the walk starts from: a PyTorch model, or an ONNX model
    inputs: list[BenchInput]  # the input plan, as the app ran the model (core.model.inputs)
    export: ExportOptions | None = None  # a PyTorch model: how it is exported (the same call, written out)
    steps: tuple[str, ...] = tuple(STEPS)
    language: str = "en"
    repeat: int = 100
    warmup: int = 10


@dataclass(frozen=True, kw_only=True)
class NotebookRequest:
    """Write the notebook of ``plan`` and zip it with the model files it loads (``files``) into ``out_dir``."""

    plan: NotebookPlan
    files: list[ReadPath]  # the model's files (and its code's folder, its data arrays), as the plan names them
    out_dir: WritePath
    name: str = "walk-through"  # the zip's and the notebook's file name, without suffix


@dataclass(kw_only=True)
class NotebookArchive:
    """The zip the job wrote: where it is, and what it holds."""

    path: str
    notebook: str  # the notebook's name inside the zip
    members: list[str]
    size_bytes: int
