"""Where a language model's tokenizer.json is found when none is given: for ``python -m core generate``'s worker, and
for the server of a variant Tune wrote in a folder of its own (Deploy). Both go by the rule of
core.model.hf_folder.folder_tokenizer: the one beside the model, else the one at the top of its Hugging Face folder,
never a link."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from core.cli.generate import _Source, _tokenizer
from core.model.generative import GenerativeLayout
from core.model.records import ModelRecord
from tests import builders
from ui.serve_view import original_tokenizer

_LAYOUT = GenerativeLayout(
    ids="input_ids", ids_dtype="int64", logits="logits", layers=[], kv_dtype="float32", kv_shape=[1, 1, "past", 4],
    sequence_axis=2, kv_heads=1, head_size=4, vocabulary=16,
)  # fmt: skip
_NONE_GIVEN = argparse.Namespace(tokenizer=None)


def _tokenizer_file(path: Path) -> Path:
    """A tokenizer.json at ``path`` (what is in it does not matter here: only where it lies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    return path


def _language_model(path: Path, folder: Path | None = None, beside: bool = False) -> ModelRecord:
    """The record of a language model at ``path`` (read with its Hugging Face ``folder``), whose intake found a
    tokenizer.json beside it when ``beside``."""
    layout = dataclasses.replace(_LAYOUT, tokenizer="tokenizer.json" if beside else "")
    record = builders.onnx_record(path.stem, [], [])
    return dataclasses.replace(record, path=str(path), folder=str(folder or ""), generative=layout)


def test_generate_gives_its_worker_the_tokenizer_at_the_top_of_the_folder_given_even_when_exported_elsewhere(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "tiny-gpt2"
    top = _tokenizer_file(folder / "tokenizer.json")
    exported = _language_model(tmp_path / "work" / "tiny-gpt2.onnx")  # exported from the folder: read without it
    assert _tokenizer(_NONE_GIVEN, _Source(record=exported, folder=str(folder), exported="x")) == str(top)
    onnx_file = _language_model(folder / "onnx" / "model.onnx", folder)  # its own ONNX file, read with the folder
    assert _tokenizer(_NONE_GIVEN, _Source(record=onnx_file, folder=str(folder))) == str(top)
    beside = _language_model(folder / "onnx" / "model.onnx", folder, beside=True)
    assert _tokenizer(_NONE_GIVEN, _Source(record=beside, folder=str(folder))) == ""  # the worker finds it there
    assert _tokenizer(_NONE_GIVEN, _Source(record=exported)) == ""  # an ONNX file alone: none


def test_a_tuned_variants_server_packages_the_tokenizer_beside_the_model_else_the_one_at_the_top_of_its_folder(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "tiny-gpt2"
    top = _tokenizer_file(folder / "tokenizer.json")
    beside = _tokenizer_file(folder / "onnx" / "tokenizer.json")
    assert original_tokenizer(_language_model(folder / "onnx" / "model.onnx", folder, beside=True)) == str(beside)
    assert original_tokenizer(_language_model(folder / "onnx" / "model.onnx", folder)) == str(top)
    assert original_tokenizer(_language_model(tmp_path / "alone.onnx")) == ""
    linked = tmp_path / "linked"
    (linked / "onnx").mkdir(parents=True)
    (linked / "tokenizer.json").symlink_to(top)  # a link is never followed out of the folder
    assert original_tokenizer(_language_model(linked / "onnx" / "model.onnx", linked)) == ""
    plain = dataclasses.replace(builders.onnx_record("cnn", [], []), folder=str(folder))  # no language model
    assert original_tokenizer(plain) == ""
