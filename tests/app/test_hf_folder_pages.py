"""A Hugging Face folder on the pages: its .zip uploaded on the Model page is one model with its ONNX files as one
family (a table of the variants with their sizes), each one click from Benchmark's generate panel and from Compare;
the Export page exports its language model with a cache, with no shapes to give."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.pages import md_tables, open_page, texts
from tests.hf_folders import hf_gpt2, onnx_family

__all__ = ["hf_gpt2", "onnx_family"]  # the session fixtures, imported for pytest


def _zipped(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")
    return buffer.getvalue()


@pytest.fixture
def folder_page(onnx_family: Path) -> AppTest:
    """The Model page with the folder's .zip uploaded."""
    at = open_page(model=("tiny-gpt2.zip", _zipped(onnx_family)))
    assert not at.error, [e.value for e in at.error]
    return at


def test_a_zipped_folder_is_one_model_with_a_table_of_its_onnx_files_and_their_sizes(folder_page: AppTest) -> None:
    record = folder_page.session_state["model"]
    assert record.format == "hf" and record.name == "tiny-gpt2" and len(record.family) == 3
    family = next(t for t in md_tables(folder_page) if "variant" in t.columns)
    assert family["variant"].tolist() == ["fp32", "fp16", "q4"]
    assert family["file"].tolist() == [r"onnx/model\.onnx", r"onnx/model\_fp16\.onnx", r"onnx/model\_q4\.onnx"]
    assert all(size.endswith("kB") or size.endswith("MB") for size in family["size"])
    assert "ONNX files of this folder: one model in 3 precisions" in texts(folder_page)
    # each row's file name reads as written: an escape inside a `code` span would show its backslash
    assert not [m.value for m in folder_page.markdown if "`" in m.value and "\\" in m.value]


def test_a_page_that_needs_onnx_opens_the_folders_own_onnx_file_rather_than_export(folder_page: AppTest) -> None:
    folder_page.switch_page("app_pages/decode.py").run()
    assert folder_page.button(key="family_open_first").label == "Open the folder's ONNX file (fp32: onnx/model.onnx)"
    folder_page.button(key="family_open_first").click().run()
    assert not folder_page.exception, folder_page.exception
    assert Path(folder_page.session_state["model"].path).name == "model.onnx"
    assert folder_page.title[0].value == "Decode" and "family_open_first" not in [b.key for b in folder_page.button]


def test_a_variant_is_one_click_from_compare_against_the_folders_first_file(folder_page: AppTest) -> None:
    folder_page.button(key="family_compare_model_q4").click().run()
    assert not folder_page.exception, folder_page.exception
    current = folder_page.session_state["model"]
    assert current.format == "onnx" and Path(current.path).name == "model.onnx" and len(current.family) == 3
    assert folder_page.session_state["torch_model"].format == "hf"  # the folder's PyTorch model, the eager side
    assert folder_page.radio(key="compare_against").value == "family"
    assert folder_page.selectbox(key="compare_member").value == "model_q4"


def test_a_variant_is_one_click_from_generating_with_it(folder_page: AppTest) -> None:
    folder_page.button(key="family_generate_model_fp16").click().run()
    assert not folder_page.exception, folder_page.exception
    assert Path(folder_page.session_state["model"].path).name == "model_fp16.onnx"
    assert folder_page.title[0].value == "Benchmark"


def test_the_export_page_exports_a_language_model_with_its_cache_and_asks_for_no_shapes(folder_page: AppTest) -> None:
    folder_page.switch_page("app_pages/export.py").run()
    assert not folder_page.exception, folder_page.exception
    assert "A language model with a cache." in texts(folder_page)
    assert not [t for t in folder_page.text_input if str(t.key).startswith("shape_")]
    assert folder_page.button(key="export_lm_button")
