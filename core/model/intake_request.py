"""What an intake is asked: one upload's files (core.model.intake recognises them in a worker).

Apart from the intake's readers, so that a command can ask for one without importing them.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.access import ReadPath, WritePath

__all__ = ["IntakeRequest"]


@dataclass(frozen=True, kw_only=True)
class IntakeRequest:
    """One upload: a model file, optionally with its data files; a .zip of a model folder is unpacked into
    ``unpack_dir`` (beside the archive when none is given)."""

    paths: list[ReadPath]
    name: str = ""  # the model's name; else the file's
    unpack_dir: WritePath = ""
    code_class: str = ""  # with a model's own code: the class to build ("" = the one the weights fit)
    code_args: str = ""  # ... and its constructor's arguments, a JSON object ("" = its defaults)
    # a Hugging Face folder (a path that is a folder, or a .zip of one): the ONNX file of it to describe (its variant,
    # q4, fp16..., or its path in the folder, core.model.hf_folder.pick_member); "" describes the folder itself
    variant: str = ""
