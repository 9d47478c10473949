"""The files a command's model argument names, and the folder a zipped model is unpacked into, found without
importing the intake: a command that starts its job's worker ahead (inspect) knows from these what the worker's
sandbox shows before it has imported what builds the job."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

__all__ = ["model_paths", "unpack_folder"]


def model_paths(model: str) -> list[Path]:
    """The paths ``model`` names, several joined by ',' (a model and its data files, or a model's code and its
    weights), each resolved as the caller sees it (a worker does not share its working folder)."""
    return [Path(p).expanduser().resolve() for p in model.split(",")]


def unpack_folder() -> str:
    """A fresh folder for a .zip of a model folder to be unpacked into, removed when the command ends."""
    unpacked = tempfile.mkdtemp(prefix="workbench-unpacked-")
    atexit.register(shutil.rmtree, unpacked, True)
    return unpacked
