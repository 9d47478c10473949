"""The Profile page for a language model and on another runtime: onnxruntime-genai's two-layer Qwen2 (uploaded as a
.zip of its folder) profiled as one prefill and one decode step side by side per op type, in Chinese;
and the CNN that OpenVINO splits, profiled on the runtime picked, each provider's share of the nodes and of the time,
and what fell back said before any figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.pages import open_page, texts
from tests.app.test_generate_panel import qwen_zip
from tests.lm_models import LanguageModel
from tests.runtimes import OPENVINO, conv_split_model, require_openvino


@pytest.fixture(autouse=True)
def _no_start_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")


def _profile(at: AppTest, button: str = "Profile") -> None:
    at.number_input(key="profile_iters").set_value(10)
    at.number_input(key="profile_warmup").set_value(2)
    next(b for b in at.button if b.label == button).click()
    at.run()
    assert not at.exception, at.exception


def _phase_names(at: AppTest) -> list[str]:
    for chart in at.get("plotly_chart"):
        figure = json.loads(chart.proto.spec)
        names = [trace.get("name", "") for trace in figure["data"]]
        if len(names) == 2 and all(name for name in names) and figure["layout"].get("barmode") == "group":
            return names
    return []


def test_a_language_model_shows_its_prefill_and_one_decode_step_side_by_side_in_chinese(
    qwen_genai: LanguageModel, tmp_path: Path
) -> None:
    """(The English chart and headline: tests/unit/test_profile_phases.py, without a page.)"""
    at = open_page("profile", model=qwen_zip(qwen_genai, tmp_path), timeout=300, lang="zh")
    _profile(at, "性能剖析")
    assert _phase_names(at) == ["预填充（16 个词元）", "解码（16 个位置之后的 1 个词元）"]
    assert "预填充与一步解码" in texts(at) and "预填充 16 个词元：" in texts(at)
    assert [m.value for m in at.markdown if m.value.startswith("**最慢的节点")] == [
        "**最慢的节点，预填充（16 个词元）**",
        "**最慢的节点，解码（16 个位置之后的 1 个词元）**",
    ]
    tables = [d.value for d in at.dataframe if len(d.value) and "GroupQueryAttention" in set(d.value.iloc[:, 1])]
    assert len(tables) >= 2  # the slowest nodes of each phase, the attention among them


def test_the_page_profiles_on_the_runtime_picked_with_each_providers_share() -> None:
    require_openvino()
    at = open_page("profile", ("conv_split.onnx", conv_split_model().SerializeToString()))
    at.selectbox(key="profile_runtime").set_value(OPENVINO)
    _profile(at)
    assert at.info[0].value == "OpenVINO runs 8 of the 9 nodes; the CPU provider runs the other 1."  # before any figure
    shares = next(d.value for d in at.dataframe if "share of the kernels' time" in d.value.columns)
    assert list(shares["provider"]) == ["OpenVINO", "CPU"] and list(shares["nodes"]) == ["2", "1"]
    nodes = next(d.value for d in at.dataframe if "the model's node(s)" in d.value.columns)
    assert set(nodes["provider"]) == {"OpenVINOExecutionProvider", "CPUExecutionProvider"}
    assert "By execution provider (the runtime openvino)" in texts(at).replace("**", "")


def test_strict_refuses_on_the_page_a_provider_that_leaves_nodes_to_the_cpu() -> None:
    require_openvino()
    at = open_page("profile", ("conv_split.onnx", conv_split_model().SerializeToString()))
    at.selectbox(key="profile_runtime").set_value(OPENVINO)
    at.checkbox(key="profile_strict").check()
    _profile(at)
    assert any("OpenVINO does not take every node" in e.value for e in at.error)
    assert not at.subheader  # no figure
