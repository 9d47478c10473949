"""Notebooks of what the app did: an .ipynb (nbformat) that redoes on the user's own model what each page did,
with the page's lesson as Markdown in the reader's language and plain code against public libraries (torch,
onnx, onnxruntime, numpy, matplotlib), never this app; and the whole session zipped with the model files."""

from __future__ import annotations

from core.notebook.builder import (
    build_notebook,
    default_export,
    default_plan,
    model_files,
    notebook_bytes,
    plan_steps,
    start_inputs,
)
from core.notebook.records import STEPS, NotebookArchive, NotebookPlan, NotebookRequest

__all__ = [
    "STEPS",
    "NotebookArchive",
    "NotebookPlan",
    "NotebookRequest",
    "build_notebook",
    "default_export",
    "default_plan",
    "model_files",
    "notebook_bytes",
    "plan_steps",
    "start_inputs",
]
