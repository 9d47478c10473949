"""The Profile page through AppTest: TinyCNN profiled in both engines, its Conv on top, its eager convolution
layers next to the ONNX Runtime nodes they became, the graph coloured by latency, and downloads."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from core.graph.colourings import LATENCY_BINS, latency_colouring
from core.jobs import GRAPH, PROFILE
from tests.app.pages import open_page


def _profile(at: AppTest, level: str = "all") -> None:
    at.switch_page("app_pages/profile.py").run()
    if any(b.key == "export_defaults" for b in at.button):  # a PyTorch model: export it first, in one click
        at.button(key="export_defaults").click().run()
    at.selectbox(key="profile_level").set_value(level)
    at.number_input(key="profile_iters").set_value(20)
    at.number_input(key="profile_warmup").set_value(2)
    next(b for b in at.button if b.label == "Profile").click()
    at.run()
    assert not at.exception, at.exception


def test_tinycnn_is_profiled_node_by_node_and_layer_by_layer() -> None:
    at = open_page(timeout=300)
    _profile(at)
    report = at.session_state[PROFILE.name][1]
    headline = at.subheader[0].value.replace("\\", "")
    assert headline.startswith("ONNX Runtime (ALL):") and "PyTorch eager:" in headline
    assert report.op_types[0].op_type == "Conv"  # the fused Conv, NCHWc at ALL
    assert 0.5 <= report.kernel_ms / report.call_ms <= 1.0  # the kernels are most of the call, never more
    layers = next(d.value for d in at.dataframe if "eager layer(s)" in d.value.columns)
    convs = layers[layers["eager layer(s)"].str.contains("Conv2d")]
    assert len(convs) == 2 and (convs["ONNX Runtime ms"] != "—").all()  # both convolutions found their node
    assert convs["what happened"].str.contains("fused with its Relu").all()
    assert any("coloured by latency" in m.value for m in at.markdown)
    assert all(m.proto.direction == m.proto.MetricDirection.NONE for m in at.metric)  # no ↑ on a time
    assert {b.label for b in at.get("download_button")} >= {
        "Download the nodes (CSV)",
        "Download the whole profile (JSON)",
    }

    view = at.session_state[GRAPH.name][1]  # the graph view, coloured by latency: a Conv is among the hottest
    colouring = latency_colouring(view, report)  # (≥ 20 % on most runs; 5-20 % beside the Gemm on some)
    top = colouring.order[0]  # the legend lists the bins present, hottest first
    assert colouring.scale and top in [b.label for b in LATENCY_BINS[:2]], colouring.keys
    assert "Conv" in {n.op for n in view.nodes if colouring.keys.get(n.name) == top}, colouring.keys

    at.switch_page("app_pages/decode.py").run()  # the profile offers its colours on Decode's graph too
    assert not at.exception and any("Latency from the profile at ALL" in c.value for c in at.caption)
