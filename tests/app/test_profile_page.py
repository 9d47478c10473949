"""The Profile page through AppTest: TinyCNN profiled in both engines, its Conv on top, its eager convolution
layers next to the ONNX Runtime nodes they became, the graph coloured by latency, and downloads."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.pages import open_page
from ui.profile_view import latency_colours


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
    report = at.session_state["profile"][1]
    headline = at.subheader[0].value.replace("\\", "")
    assert headline.startswith("ONNX Runtime (ALL):") and "PyTorch eager:" in headline
    assert report.op_types[0].op_type == "Conv"  # the fused Conv, NCHWc at ALL
    assert 0.5 <= report.kernel_ms / report.call_ms <= 1.0  # the kernels are most of the call, never more
    layers = next(d.value for d in at.dataframe if "eager layer(s)" in d.value.columns)
    convs = layers[layers["eager layer(s)"].str.contains("Conv2d")]
    assert len(convs) == 2 and (convs["ONNX Runtime ms"] != "—").all()  # both convolutions found their node
    assert convs["what happened"].str.contains("fused with its Relu").all()
    colours = latency_colours(report)  # the graph's colours: the hot nodes are the second Conv and its Relu
    ops = {n.id: n.op_type for n in report.layout.nodes}
    hot = {ops[i] for i, c in colours.items() if c == "≥ 20 % of the call"}
    assert hot and hot <= {"Conv", "Relu"}, colours
    assert any("coloured by latency" in m.value for m in at.markdown)
    assert {b.label for b in at.get("download_button")} >= {
        "Download the nodes (CSV)",
        "Download the whole profile (JSON)",
    }

    at.switch_page("app_pages/decode.py").run()  # the profile colours Decode's graph too, on request
    assert not at.exception
    at.radio(key="decode_colour").set_value("latency (the last profile)").run()
    assert not at.exception and any("From the profile at ALL" in c.value for c in at.caption)
