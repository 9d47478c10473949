"""Timed, on a quiet machine (tests/conftest.py): a million empty initializers, a 15 MB file, once cost 131 s in
`python -m core inspect` and more than ten minutes on the Decode page. Refused by count, both answer in under
10 s on two cores: the command as its own process (its start, the worker's, the parse), and the app's upload
followed by the Decode page."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.adversarial.counts import empty_initializers
from tests.app.conftest import APP
from tests.cli import cli_process

BOUND_S = 10.0


@pytest.fixture(scope="module")
def million(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (path,) = empty_initializers(tmp_path_factory.mktemp("million"))
    return path


@pytest.mark.parametrize("mode", ["local", "hosted"])
def test_inspect_refuses_it_in_under_ten_seconds(million: Path, tmp_path: Path, mode: str) -> None:
    env = {**os.environ, "WORKBENCH_MODE": mode, "WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    started = time.perf_counter()
    done = cli_process("inspect", str(million), env=env, timeout=120)
    took = time.perf_counter() - started
    assert done.returncode == 2 and "holds 1,000,000 initializers" in done.stderr, done.stderr[-2000:]
    assert took < BOUND_S, f"python -m core inspect took {took:.1f} s"


def test_the_upload_and_the_decode_page_answer_in_under_ten_seconds(
    million: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()  # the app's own start is not the upload's time
    started = time.perf_counter()
    at.file_uploader(key="uploads").set_value((million.name, million.read_bytes(), "application/octet-stream")).run()
    refused = [e.value.replace("\\", "") for e in at.error]
    at.switch_page("app_pages/decode.py").run()
    took = time.perf_counter() - started
    assert any("1,000,000 initializers" in e for e in refused), refused
    assert not at.exception and any("Decoding needs an ONNX model" in i.value for i in at.info)
    assert took < BOUND_S, f"the upload and the Decode page took {took:.1f} s"
