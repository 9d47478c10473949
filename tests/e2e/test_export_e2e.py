"""In Chromium: export TinyCNN with a dynamic batch axis, read the verification, download the file."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from tests.e2e.conftest import shot, wait_idle

pytestmark = pytest.mark.e2e


def test_export_tinycnn_with_dynamic_batch_and_download_it(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page.get_by_role("link", name="Export", exact=True).click()
    wait_idle(page)
    assert page.get_by_role("checkbox", name="axis 0 dynamic").is_checked()
    shot(page, "10-export-form")

    page.get_by_role("button", name="Export", exact=True).click()
    page.get_by_text("Exported and verified").wait_for(timeout=120_000)
    wait_idle(page)
    assert page.get_by_text("matches PyTorch at batch = 3").is_visible()
    assert page.get_by_text("2 BatchNorm layer(s) were folded").is_visible()
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "ONNX model" in sidebar and "opset 18" in sidebar
    shot(page, "11-export-report")

    with page.expect_download() as info:
        page.get_by_role("button", name="Download tinycnn.onnx").click()
    target = tmp_path / "downloaded.onnx"
    info.value.save_as(target)
    model = onnx.load(str(target))
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    onnx.checker.check_model(model)
