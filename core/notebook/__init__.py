"""Notebooks of what the app did: an .ipynb (nbformat) that redoes on the user's own model what each page did,
with the page's lesson as Markdown in the reader's language and plain code against public libraries (torch,
onnx, onnxruntime, numpy, matplotlib), never this app; and the whole session zipped with the model files."""

from __future__ import annotations

from core.notebook import builder as _builder
from core.notebook.builder import *  # noqa: F403 (the builder's names, listed once: core.notebook.builder.__all__)
from core.notebook.records import STEPS, NotebookArchive, NotebookPlan, NotebookRequest

__all__ = ["STEPS", "NotebookArchive", "NotebookPlan", "NotebookRequest", *_builder.__all__]
