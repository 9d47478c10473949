"""The Model page driven through Streamlit's AppTest: samples, uploads, errors, the sidebar."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.model import zoo
from tests import builders
from tests.app.pages import card_figures, md_tables, open_page


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(timeout=120)
    return at


def test_a_new_session_starts_with_the_tinycnn_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    at = open_page(timeout=120)
    assert at.session_state["model"].name == "tinycnn"
    assert metric(at, "Parameters") == "256,074"
    assert any("starts with this sample" in c.value for c in at.caption)
    assert "**tinycnn**" in [m.value for m in at.sidebar.markdown]


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def metric(at: AppTest, label: str) -> str:
    return card_figures(at)[label]


def test_empty_page_says_how_to_start(app: AppTest) -> None:
    assert "No model yet" in app.info[0].value
    assert app.title[0].value == "Model"
    assert any("None yet" in c.value for c in app.sidebar.caption)


def test_picking_a_sample_makes_it_the_current_model(app: AppTest) -> None:
    app.selectbox(key="sample_choice").select("tinycnn")
    app.button(key="use_sample").click().run()
    assert not app.exception
    assert metric(app, "Parameters") == "256,074"
    assert app.session_state["model"].name == "tinycnn"  # the sidebar itself is checked in Chromium (e2e)
    inputs = md_tables(app)[1]  # after the card's figures
    assert inputs["shape"].tolist() == ["1×3×112×112"] and inputs["dynamic axes"].tolist() == [r"batch \(axis 0\)"]


def test_uploading_an_onnx_model_shows_its_card(app: AppTest) -> None:
    data = builders.mixed_inputs_model().SerializeToString()
    app.file_uploader(key="uploads").set_value(("mixed.onnx", data, "application/octet-stream")).run()
    assert not app.exception
    assert not app.error, [e.value for e in app.error]
    assert metric(app, "Opset") == "17" and metric(app, "Nodes") == "4"
    assert md_tables(app)[1]["name"].tolist() == [r"input\_ids", "mask", "scale"]  # escaped for Markdown
    assert md_tables(app)[1]["shape"].tolist() == [r"batch×\-1", "?×?", "1"]
    assert f"`{app.session_state['model'].id}`" in [m.value for m in app.markdown]  # the whole sha256, as code
    assert not app.code  # no code block: the browser would load its syntax highlighter for the first page
    assert not app.table and not app.metric  # nor Arrow's JavaScript (st.table) and st.metric's code
    assert any(any(m.value == "**Inputs**" for m in c.markdown) for c in app.columns)  # side by side


def test_inputs_and_outputs_with_long_dim_names_are_one_under_the_other(app: AppTest) -> None:
    """paddle2onnx names every open dim "p2o.DynamicDimension.N": half the page cannot wrap that, and the outputs'
    last column was cut off at its edge."""
    from onnx import TensorProto, helper

    dims = [f"p2o.DynamicDimension.{k}" for k in range(3)]
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "paddle",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [dims[0], 3, dims[1], dims[2]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [dims[0], 3, dims[1], dims[2]])],
    )  # fmt: skip
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    app.file_uploader(key="uploads").set_value(("det.onnx", data, "application/octet-stream")).run()
    assert not app.exception and len(md_tables(app)) >= 3
    assert not any(any(m.value in ("**Inputs**", "**Outputs**") for m in c.markdown) for c in app.columns)


def test_onnx_with_its_data_file_uploaded_together(app: AppTest, tmp_path: Path) -> None:
    main = builders.save_with_external_data(builders.chain_model(20), tmp_path / "src")
    files = [
        ("model.onnx", main.read_bytes(), "application/octet-stream"),
        ("model.onnx.data", main.with_name("model.onnx.data").read_bytes(), "application/octet-stream"),
    ]
    app.file_uploader(key="uploads").set_value(files).run()
    assert not app.error, [e.value for e in app.error]
    assert r"model\.onnx\.data" in md_tables(app)[3]["value"].tolist()


def test_a_state_dict_loads_into_its_architecture(app: AppTest, tmp_path: Path) -> None:
    path = tmp_path / "w.pt"
    torch.save(zoo.build_model("mlp").state_dict(), path)
    app.file_uploader(key="uploads").set_value(("w.pt", path.read_bytes(), "application/octet-stream")).run()
    assert not app.error, [e.value for e in app.error]
    assert metric(app, "Parameters") == "235,146"
    assert "Loaded into the 'mlp' architecture" in texts(app)


def test_refusals_are_shown_as_errors_and_the_previous_model_stays(app: AppTest, tmp_path: Path) -> None:
    app.button(key="use_sample").click().run()
    path = tmp_path / "whole.pt"
    torch.save(zoo.build_model("classifier"), path)
    app.file_uploader(key="uploads").set_value(("whole.pt", path.read_bytes(), "application/octet-stream")).run()
    assert not app.exception
    assert "whole pickled model" in app.error[0].value
    assert metric(app, "Parameters") == "256,074"  # the current model is still the sample


def test_files_land_in_this_sessions_workspace_only(app: AppTest, tmp_path: Path) -> None:
    data = builders.relu_model().SerializeToString()
    app.file_uploader(key="uploads").set_value(("r.onnx", data, "application/octet-stream")).run()
    workspace = app.session_state["workspace"].path
    stored = [p for p in workspace.rglob("*.onnx")]
    assert len(stored) == 1 and stored[0].read_bytes() == data
    assert str(workspace).startswith(os.environ["WORKBENCH_DATA_DIR"])


def test_hosted_mode_refuses_torchscript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_MODE", "hosted")
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(timeout=120)
    assert any("Hosted mode" in c.value for c in at.sidebar.caption)
    assert "refused on this hosted instance" in texts(at)
    path = tmp_path / "ts.pt"
    torch.jit.save(torch.jit.script(zoo.build_model("classifier")), str(path))
    at.file_uploader(key="uploads").set_value(("ts.pt", path.read_bytes(), "application/octet-stream")).run()
    assert "does not accept them" in at.error[0].value


def test_a_new_upload_replaces_the_earlier_ones_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(timeout=120)
    for n in range(3):
        at.file_uploader(key="uploads").set_value(
            (f"m{n}.onnx", builders.weights_model(8 + n).SerializeToString(), "application/octet-stream")
        )
        at.run()
        assert at.session_state["model"].name == f"m{n}" and not at.exception
    folder = at.session_state["workspace"].path
    assert len(list(folder.glob("upload-*"))) == 1  # only the model in use stays


def test_a_session_past_its_quota_is_told_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    monkeypatch.setenv("WORKBENCH_WORKSPACE_QUOTA_MB", "1")
    at = open_page(timeout=120)
    at.file_uploader(key="uploads").set_value(
        ("big.onnx", builders.weights_model(600).SerializeToString(), "application/octet-stream")
    ).run()
    assert any("past its quota of 1.0 MB" in e.value.replace("\\", "") for e in at.error), at.error
    assert "model" not in at.session_state or at.session_state["model"] is None


def test_a_second_model_dropped_beside_the_first_replaces_it(app: AppTest, tmp_path: Path) -> None:
    """The upload box keeps the first file; a second model dropped beside it is the new model (not "are each a
    model"), and a data file dropped beside its model still joins it."""
    first = ("first.onnx", builders.weights_model(8).SerializeToString(), "application/octet-stream")
    second = ("second.onnx", builders.weights_model(9).SerializeToString(), "application/octet-stream")
    app.file_uploader(key="uploads").set_value(first).run()
    assert app.session_state["model"].name == "first"
    app.file_uploader(key="uploads").set_value([first, second]).run()
    assert not app.error, [e.value for e in app.error]
    assert app.session_state["model"].name == "second"
    assert any("replaces the earlier one" in c.value for c in app.caption)
    app.run()  # a rerun keeps the choice
    assert not app.error and app.session_state["model"].name == "second"

    main = builders.save_with_external_data(builders.chain_model(20), tmp_path / "src")
    model = ("model.onnx", main.read_bytes(), "application/octet-stream")
    data = ("model.onnx.data", main.with_name("model.onnx.data").read_bytes(), "application/octet-stream")
    app.file_uploader(key="uploads").set_value([model]).run()
    assert app.error  # its weights are missing
    app.file_uploader(key="uploads").set_value([model, data]).run()
    assert not app.error, [e.value for e in app.error]
    assert app.session_state["model"].name == "model"


def test_an_ultralytics_export_shows_what_its_metadata_says_escaped(app: AppTest) -> None:
    """Who produced it, what the exporter wrote (task, imgsz, stride, batch, class names) and the size the plan
    will use; markup in a class name stays text, long values are cut, and Benchmark says where 320 came from."""
    from tests import wild

    names = [
        "person",
        "[click](http://evil.example)",
        "<img src=x onerror=alert(1)>",
        *[f"class {i}" for i in range(30)],
    ]
    app.file_uploader(key="uploads").set_value(("yolo.onnx", wild.yolo_model(names).SerializeToString(), "x")).run()
    assert not app.exception and not app.error
    said = [m.value for m in app.markdown]
    assert any("<img" in m and "\\<img" in m for m in said) and not any("](http" in m for m in said)
    lines = texts(app).replace("\\", "").replace("\u200b", "")  # as read: escapes and the link breaker out
    assert "Produced by PyTorch's exporter (torch.onnx)." in lines
    assert "Written by Ultralytics 8.3.27: a detect model, made for 320×320 images (`imgsz`), stride 32" in lines
    assert "33 class names (`names`): person, [click](http://evil.example), <img" in lines and "(21 more)" in lines
    entries = next(t for t in md_tables(app) if "key" in t.columns)
    value = dict(zip(entries["key"], entries["value"], strict=True))["names"].replace("\\", "")
    assert value.endswith(f"… ({len(str(dict(enumerate(names)))):,} characters)") and len(value) < 200
    app.switch_page("app_pages/benchmark.py").run()
    dims = next(t.value for t in app.table if "from" in t.value.columns)
    assert dims["from"].tolist() == ["batch", "metadata 'imgsz'", "metadata 'imgsz'"]
    assert dims["value"].tolist() == ["1", "320", "320"]


def _large_data_model(folder: Path) -> Path:
    """An .onnx whose weight (2.4 MiB) lies in a data file beside it: over a limit of 1 MB per file."""

    return builders.save_with_external_data(builders.weights_model(800), folder)


def test_a_data_file_over_the_upload_limit_says_the_limit_whose_it_is_and_the_ways_round_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upload box refuses a file over the limit itself ("File must be 1.0GB or smaller") and the app gets the
    .onnx alone: it said the data file "was not uploaded. Select the .onnx and its data file(s) together", which
    the person had done. Now it says what the data file holds, the limit, that it is the operator's, and in local
    mode the ways round it; a path on this machine opens the model where it lies, external data and all."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    monkeypatch.setenv("WORKBENCH_MAX_UPLOAD_MB", "1")
    main = _large_data_model(tmp_path / "models")
    at = open_page(timeout=120)
    assert "WORKBENCH_MAX_UPLOAD_MB" in texts(at) and "A path on this machine" in [t.label for t in at.tabs]
    at.file_uploader(key="uploads").set_value(("model.onnx", main.read_bytes(), "application/octet-stream")).run()
    assert not at.exception
    error = at.error[0].value.replace("\\", "")
    assert "was not uploaded" in error and "at least 2.4 MB" in error, error
    offer = at.info[0].value
    assert "at most 1 MB per file" in offer and "WORKBENCH_MAX_UPLOAD_MB" in offer and "operator" in offer
    assert "A path on this machine" in offer and "python -m core inspect PATH" in offer

    at.text_input(key="local_path").input(str(main)).run()
    at.button(key="open_local_path").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    record = at.session_state["model"]
    assert record.path == str(main) and record.external_data == ["model.onnx.data"]  # where it lies: no copy
    assert not list(at.session_state["workspace"].path.rglob("*.data"))

    at.text_input(key="local_path").input(str(tmp_path / "nowhere.onnx")).run()
    at.button(key="open_local_path").click().run()
    assert "Nothing is at" in at.error[0].value and at.session_state["model"].path == str(main)


def test_a_hosted_instance_says_the_limit_is_its_operators_and_offers_no_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_MODE", "hosted")
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    main = _large_data_model(tmp_path / "models")
    at = open_page(timeout=120)
    assert "A path on this machine" not in [t.label for t in at.tabs] and not at.text_input
    at.file_uploader(key="uploads").set_value(("model.onnx", main.read_bytes(), "application/octet-stream")).run()
    offer = at.info[0].value
    assert "at most 200 MB per file" in offer and "operator" in offer and "make run" in offer
    assert "A path on this machine" not in offer
