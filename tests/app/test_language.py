"""The app in Chinese and English: ``?lang=`` in the address, the sidebar's picker, and the Model page in Chinese."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.i18n import using
from core.notes import say
from tests.app.pages import card_figures, md_tables, open_page, shown
from tests.i18n_text import english_prose as english_runs_in
from tests.reports import seed_regression


@pytest.fixture
def chinese(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """A new session opened at ``?lang=zh`` (on the start sample, TinyCNN)."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    return open_page(timeout=120, lang="zh")


def _texts(at: AppTest) -> str:
    return "\n".join(shown(at, ("title", "markdown", "caption"), ("metric", "tabs", "button", "selectbox")))


_HAN = re.compile(r"[\u4e00-\u9fff]")
_PROSE = re.compile(r"\b[A-Za-z][a-z]+ [a-z]+ [a-z]+\b")  # three English words in a row


def english_prose(at: AppTest) -> list[str]:
    """What the page says in English sentences: text with three English words in a row and no Chinese (names,
    code and dtypes are single words; a model's own text is not on these pages)."""
    frames = [t.value for t in at.table] + md_tables(at)  # a table's headers; its cells are the model's own
    tables = [str(c) for t in frames for c in t.columns]
    lines = [line for line in _texts(at).splitlines() if not line.startswith("|")]
    said = [*lines, *(e.value for e in at.info), *(e.value for e in at.error), *tables]
    return [line for line in said if _PROSE.search(line) and not _HAN.search(line)]


def test_the_model_page_in_chinese_shows_its_headings_labels_and_card_in_chinese(chinese: AppTest) -> None:
    at = chinese
    assert at.title[0].value == "模型"
    assert [t.label for t in at.tabs] == ["上传文件", "选择示例模型", "模型库", "本机上的路径"]  # local mode: a path
    assert at.file_uploader(key="uploads").label.startswith("ONNX 模型（.onnx")
    assert set(card_figures(at)) == {"大小", "参数量", "算子集版本", "节点数"}
    assert card_figures(at)["参数量"] == "256,074"  # numbers keep their grouping
    assert next(b for b in at.button if b.key == "use_sample").label == "使用这个示例模型"
    shown = _texts(at)
    for words in ("当前模型", "经典的第一次导出练习", "PyTorch 示例模型（由代码构建）"):
        assert words in shown
    assert [link.proto.label for link in at.get("page_link")] == ["下一步：把它导出为 ONNX"]
    # the card's tables: Chinese headers, the model's own names and dtypes as they are
    inputs = md_tables(at)[1]  # after the figures
    assert list(inputs.columns) == ["名称", "dtype", "形状", "动态轴"]
    assert inputs.iloc[0].tolist()[:2] == ["input", "float32"]
    assert inputs.iloc[0]["动态轴"] == "batch（第 0 轴）"
    # nothing of the English page is left in what the page says
    for english in ("Current model", "Upload a file", "Pick a sample", "Parameters", "Next:"):
        assert english not in shown
    assert english_prose(at) == []


def test_what_an_exporter_wrote_reads_in_chinese_with_the_models_own_words_as_they_are(chinese: AppTest) -> None:
    from tests import wild

    names = ["person", "<b>bold</b>", *[f"class {i}" for i in range(30)]]
    at = chinese
    at.file_uploader(key="uploads").set_value(("yolo.onnx", wild.yolo_model(names).SerializeToString(), "x")).run()
    assert not at.exception and not at.error
    lines = _texts(at).replace("\\", "").replace("\u200b", "")
    assert "生成工具：PyTorch 的导出器（torch.onnx）。" in lines
    assert "由 Ultralytics 8.3.27 写入：一个 detect 模型、面向 320×320 的图像（`imgsz`）、步长 32" in lines
    assert "32 个类别名（`names`）：person、<b>bold</b>、class 0" in lines and "……（另有 20 个）。" in lines
    assert "凡是图像高度或宽度未固定的地方，输入方案都按 320×320 运行它" in lines
    assert set(card_figures(at)) == {"大小", "参数量", "算子集版本", "节点数"}
    assert "元数据条目（" in "\n".join(e.label for e in at.expander)
    assert english_prose(at) == []


def test_the_sidebar_speaks_chinese_and_its_picker_switches_to_english_in_the_address(chinese: AppTest) -> None:
    at = chinese
    sidebar = [m.value for m in at.sidebar.markdown] + [c.value for c in at.sidebar.caption]
    assert "**当前模型**" in sidebar
    assert "从 PyTorch 或 ONNX 模型，走到经过实测的部署。" in sidebar
    picker = at.sidebar.segmented_control(key="lang_picker")
    assert picker.value == "zh"
    assert at.query_params["lang"] == "zh"  # kept in the address beside the model's link
    assert at.query_params["sample"] == "tinycnn"

    picker.set_value("en").run()
    assert not at.exception
    assert at.title[0].value == "Model"
    assert [t.label for t in at.tabs] == ["Upload a file", "Pick a sample", "Library", "A path on this machine"]
    assert "**Current model**" in [m.value for m in at.sidebar.markdown]
    assert at.query_params["lang"] == "en"


def test_without_lang_in_the_address_the_app_speaks_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    at = open_page(timeout=120)
    assert at.title[0].value == "Model"
    assert "lang" not in at.query_params  # the reader's browser decides; nothing is pinned in a link
    assert at.sidebar.segmented_control(key="lang_picker").value == "en"


def test_an_unknown_language_in_the_address_falls_back_to_english(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    at = open_page(timeout=120, lang="<script>")
    assert at.title[0].value == "Model"


def test_an_upload_the_worker_refuses_is_explained_in_chinese(chinese: AppTest) -> None:
    """The worker writes its refusals in the reader's language (the job's request carries it)."""
    at = chinese
    at.file_uploader(key="uploads").set_value(("empty.onnx", b"", "application/octet-stream")).run()
    shown = [e.value.replace("\\", "") for e in at.error]  # as read: the message is shown escaped
    assert shown == ["“empty.onnx”是空文件（0 字节）。可能是上传失败了，请重试。"]
    at.file_uploader(key="uploads").set_value(("notes.txt", b"just some text", "text/plain")).run()
    assert at.error[0].value.replace("\\", "").startswith("“notes.txt”不是本应用能读取的模型格式（开头的字节：6a 75")


# ----------------------------------------------------------------------------------------- Export, Decode, graph
_CODE = re.compile(r"`[^`]*`")


def english_runs(at: AppTest) -> list[str]:
    """Runs of four or more English words in the page's text, headings, captions and messages (code in backticks
    left out): what a reader of Chinese would still read in English."""
    kinds = ("title", "header", "markdown", "caption", "success", "warning", "error", "info")
    said = shown(at, kinds, ("expander", "button")) + [str(c) for t in at.table for c in t.value.columns]
    return english_runs_in([_CODE.sub("", text.replace("\\", "").replace("\u200b", "")) for text in said])


def _switch_to(at: AppTest, lang: str) -> None:
    at.sidebar.segmented_control(key="lang_picker").set_value(lang).run()
    assert not at.exception, at.exception


def test_the_export_page_and_its_report_read_in_chinese_and_again_in_english(chinese: AppTest) -> None:
    at = chinese
    at.switch_page("app_pages/export.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "导出"
    assert at.radio(key="exporter_choice").label == "导出器"
    assert next(b for b in at.button if b.key == "export_button").label == "导出"
    at.button(key="export_button").click().run()
    assert not at.exception, at.exception
    assert at.success[0].value.startswith("导出并验证完成")
    said = _texts(at).replace("\\", "")
    for words in (
        "##### 验证",
        "onnx.checker（完整检查）",
        "在 导出形状 下与 PyTorch 一致",
        "从 PyTorch 到 ONNX 发生了哪些变化",
    ):
        assert words in said, words
    assert "个 BatchNorm 层被折叠进前面 Conv 的权重" in said  # a sentence core wrote in English, shown in Chinese
    assert list(at.table[0].value.columns) == ["形状", "最大绝对误差", "最大相对误差", "结果"]
    assert set(at.table[0].value["结果"]) == {"相符"}  # a verdict, not the card's column heading "是否相符"
    assert english_runs(at) == []

    _switch_to(at, "en")  # the kept report, read again in English
    assert at.title[0].value == "Export"
    assert at.success[0].value.startswith("Exported and verified in")
    said = _texts(at).replace("\\", "")
    assert "##### Verification" in said and "BatchNorm layer(s) were folded into the preceding Conv weights" in said
    assert list(at.table[0].value.columns) == ["shapes", "max abs diff", "max rel diff", "result"]


def test_the_decode_page_and_its_graph_view_read_in_chinese_and_again_in_english(chinese: AppTest) -> None:
    from tests import builders

    at = chinese
    model = builders.chain_model(8).SerializeToString()
    at.file_uploader(key="uploads").set_value(("chain.onnx", model, "application/octet-stream")).run()
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "解析"
    assert [h.value for h in at.header] == ["1. 最前面的字节", "2. 模型", "3. 计算图", "4. 节点", "5. 权重"]
    header = at.table[0].value
    assert list(header.columns) == ["偏移", "字节", "字段", "线路类型", "值", "如何解读"]
    assert header.iloc[0]["如何解读"].replace("\\", "").startswith("标签 08 = 字段 1 << 3 | 线路类型 0（varint）")
    assert {m.label for m in at.metric} >= {"IR 版本", "节点数", "权重张量"}
    assert any("- **形状推断**：" in m.value for m in at.markdown)  # a Chinese colon, not an English one
    assert any(c.value.startswith("8 个节点。滚动鼠标缩放") for c in at.caption)  # the graph view's caption
    words = next(iter(at.session_state["_graph_canvas_payloads"].values()))[3].decode()
    assert '"Fit":"适应窗口"' in words and '"Collapse all":"全部折叠"' in words  # the component's own words
    assert english_runs(at) == []

    _switch_to(at, "en")
    assert at.header[0].value == "1. The first bytes"
    assert (
        at.table[0]
        .value.iloc[0]["how to read it"]
        .replace("\\", "")
        .startswith("tag 08 = field 1 << 3 | wire type 0 (varint)")
    )
    words = next(iter(at.session_state["_graph_canvas_payloads"].values()))[3].decode()
    assert '"words":{}' in words  # English: the component's own words


def test_the_standalone_graph_page_written_in_chinese_has_chinese_panels_and_legends() -> None:
    import json

    from core.graph import view_graph
    from core.graph.colourings import latency_colouring
    from core.graph.page import graph_page
    from tests import builders

    view = view_graph(builders.chain_model(6))

    from types import SimpleNamespace

    profile = SimpleNamespace(node_ms=[4.0, *[0.4] * 5], call_ms=6.0, level="all")
    colourings = {"latency": latency_colouring(view, profile)}
    page = graph_page(view, "/* bundle */", color="latency", colourings=colourings, language="zh")
    words = json.loads(re.search(r'id="graph-words" type="application/json">(.*?)</script>', page).group(1))
    assert words["Fit"] == "适应窗口" and words["Find a node by name or op"] == "按名称或算子查找节点"
    assert words["{name} · {count} nodes"] == "{name} · {count} 个节点"
    assert '<html lang="zh-Hans">' in page and "· 计算图</title>" in page
    shown = json.loads(re.search(r'id="graph-colourings" type="application/json">(.*?)</script>', page).group(1))
    assert shown["latency"]["title"] == "all 下的延迟" and shown["latency"]["order"] == ["≥ 调用时间的 20 %", "5–20 %"]
    english = graph_page(view, "/* bundle */", color="latency", colourings=colourings)
    assert '<html lang="en">' in english and 'type="application/json">{}</script>' in english
    assert "latency at all" in english


def test_the_upgrade_of_an_old_model_is_offered_and_reported_in_chinese(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests import builders

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("partition", ("old.onnx", builders.old_opset_model().SerializeToString()), lang="zh")
    original = at.session_state["model"]
    go = next(b for b in at.button if b.key == f"upgrade_go_{original.id[:12]}")
    assert go.label == "升级并继续"
    assert at.number_input(key=f"upgrade_opset_{original.id[:12]}").label == "要升级到的算子集版本"
    go.click().run()
    assert not at.exception and not at.error
    (success,) = at.success
    assert "从算子集 6 升级到 18 的版本，它的输出与onnx 参考求值器中运行的原模型" in success.value.replace("\\", "")
    upgraded = at.session_state["model"].notes[0]  # kept as data, said in the reader's language
    assert say(upgraded).startswith("Upgraded from old with onnx's version converter: opset 6 → 18")
    with using("zh"):
        assert say(upgraded).startswith("用 onnx 的版本转换器从 old 升级而来：算子集 6 → 18：改动 2 个节点")
    changes = next(t.value for t in at.table if "内容" in t.value.columns)
    assert list(changes.columns) == ["变化", "算子", "节点", "内容"]
    what = changes.set_index("算子").loc["Add", "内容"].replace("\\", "")
    assert what.startswith("版本 6 → 14；去掉了属性 broadcast（广播在算子集 7 中变成了隐式的 numpy 风格）")
    checks = next(t.value for t in at.table if "检查" in t.value.columns)
    assert set(checks["结果"]) == {"通过"}


def _exported(at: AppTest, page: str) -> AppTest:
    """``at`` on ``page``, the start sample exported first where the page asks for an ONNX model (one click)."""
    at.switch_page(f"app_pages/{page}.py").run()
    if any(b.key == "export_defaults" for b in at.button):
        at.button(key="export_defaults").click().run()
    assert not at.exception, at.exception
    return at


def _prose(at: AppTest) -> list[str]:
    """``english_prose`` less the graph view's caption (its own part of #28)."""
    return [line for line in english_prose(at) if "Scroll to zoom" not in line]


def test_the_partition_page_in_chinese_has_no_english_sentence_left(chinese: AppTest) -> None:
    at = _exported(chinese, "partition")
    assert at.title[0].value == "图分区"
    assert "各优化级别下的计算图" in [h.value for h in at.header]
    assert at.subheader[0].value.startswith("主计算图共 ")  # the summary, written in the reader's language
    assert [t.label for t in at.tabs] == ["每个节点", "子图", "ORT 日志"]
    nodes = next(d.value for d in at.dataframe if "执行提供者" in d.value.columns)
    assert list(nodes.columns) == ["#", "节点", "算子", "计算图", "执行提供者", "子图", "说明"]
    assert "Conv" in set(nodes["算子"])  # op types as they are
    assert any(m.value.startswith("- 融合为一个内核：") for m in at.markdown)  # what a level did: a Chinese colon
    assert {m.label for m in at.metric} >= {"已分配的节点（主计算图）", "在 CPU 上"}
    providers = at.table[0].value
    assert list(providers.columns) == ["执行提供者", "在本构建中", "硬件", "所需条件"]
    assert english_runs(at) == [] and _prose(at) == []


def test_the_benchmark_page_in_chinese_after_a_run(chinese: AppTest) -> None:
    at = _exported(chinese, "benchmark")
    at.number_input(key="bench_iters").set_value(30)
    at.number_input(key="bench_warmup").set_value(2)
    at.multiselect(key="bench_threads").set_value([1])
    next(b for b in at.button if b.label == "运行基准测试").click()
    at.run()
    assert not at.exception, at.exception
    headline = at.subheader[0].value.replace("\\", "")
    assert headline.startswith(("ONNX Runtime（", "本次运行噪声较大：ONNX Runtime（")) and "95 % 置信区间" in headline
    assert "中位数" in headline and "毫秒" in headline
    table = next(d.value for d in at.dataframe if "配置" in d.value.columns)
    assert list(table["配置"]) == ["PyTorch eager", "ORT DISABLE_ALL", "ORT ALL"]  # names as they are
    assert all(len(v.replace(".", "").replace(",", "").lstrip("0")) <= 4 for v in table["p90 毫秒"])  # never 146.6302
    assert {"机器", "为什么 ONNX Runtime 通常更快"} <= {h.value for h in at.header}
    machine = at.table[-1].value
    assert list(machine.columns) == ["", "值"] and "方法" in set(machine[""])
    report = at.session_state["bench.run"][1]
    assert report.headline.english().startswith(("ONNX Runtime (", "Noisy run:"))  # kept as data: said in English
    assert english_runs(at) == [] and _prose(at) == []


def test_the_profile_page_in_chinese_after_a_profile(chinese: AppTest) -> None:
    at = _exported(chinese, "profile")
    at.number_input(key="profile_iters").set_value(20)
    at.number_input(key="profile_warmup").set_value(2)
    next(b for b in at.button if b.label == "性能剖析").click()
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "性能剖析"
    headline = at.subheader[0].value.replace("\\", "")
    assert headline.startswith("ONNX Runtime（ALL）：每次调用 ") and "PyTorch eager：每次调用" in headline
    assert {m.label for m in at.metric} == {"单次调用", "内核内", "运行时开销", "PyTorch eager"}
    layers = next(d.value for d in at.dataframe if "eager 层" in d.value.columns)
    assert layers["发生了什么"].str.contains("与其 Relu 融合").any()  # the row notes, found again and translated
    assert at.session_state["profile.run"][1].headline.english().startswith("ONNX Runtime (ALL):")  # kept as data
    assert english_runs(at) == [] and _prose(at) == []


def test_the_three_pages_in_english_are_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    at = _exported(open_page(), "partition")
    assert at.title[0].value == "Partition" and [t.label for t in at.tabs] == ["Every node", "Subgraphs", "ORT's log"]
    assert at.subheader[0].value.startswith("8 nodes in the main graph: ")
    at = _exported(at, "benchmark")
    assert at.title[0].value == "Benchmark"
    assert any(b.label == "Run the benchmark" for b in at.button)
    assert "Why ONNX Runtime is often faster" not in [h.value for h in at.header]  # shown after a run only
    at = _exported(at, "profile")
    assert at.title[0].value == "Profile" and any(b.label == "Profile" for b in at.button)


def test_the_dashboard_and_history_in_chinese(tmp_path: Path, chinese: AppTest) -> None:
    seed_regression(tmp_path / "data")
    at = chinese
    at.switch_page("app_pages/dashboard.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "看板"
    assert [h.value for h in at.header] == ["每个模型在每台机器上的最新结果", "一个模型的各个版本"]
    latest = at.dataframe[0].value
    assert list(latest.columns)[:3] == ["模型", "机器", "回退"] and latest["回退"].iloc[0] == "⚠ 比上一个版本慢"
    flagged = at.warning[0].value.replace("\\", "")  # as read: the lines are shown escaped
    assert flagged.startswith("**2 处性能回退**") and "tinycnn: ORT ALL 在 box-a 上：1 → 1.5 ms（1.50×）" in flagged
    assert [t.label for t in at.tabs] == ["延迟", "加速比"]
    assert english_prose(at) == []

    at.switch_page("app_pages/history.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "历史记录"
    assert "**2 次运行**，最新的在前" in [m.value for m in at.markdown]
    history = at.dataframe[0].value
    assert list(history.columns)[:6] == ["运行", "时间（UTC）", "类型", "导入时间（UTC）", "模型", "机器"]
    assert set(history["类型"]) == {"基准测试"}
    assert any(c.value.startswith("运行 r-new，由 匿名 发起") for c in at.caption)


def test_the_quantize_page_and_its_refusals_in_chinese(chinese: AppTest) -> None:
    at = chinese
    at.switch_page("app_pages/quantize.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "量化"
    assert next(b for b in at.button if b.key == "export_defaults").label == "用默认设置导出并继续"
    assert any(i.value.startswith("量化需要 ONNX 模型；当前模型 **tinycnn** 是PyTorch 示例模型") for i in at.info)
    at.button(key="export_defaults").click().run()
    assert not at.exception, at.exception
    assert at.multiselect(key="quantize_variants").label == "变体"
    assert at.radio(key="quantize_source").options == ["按输入规格生成", "真实输入的 .npz 文件"]
    assert any("选择变体，然后点击 **量化并比较**" in i.value for i in at.info)
    assert english_prose(at) == []
    # AppTest formats the widgets' options in the test's own thread: it speaks the page's language too
    with using("zh"):
        at.multiselect(key="quantize_variants").set_value([])
        next(b for b in at.button if b.label == "量化并比较").click().run()
    assert [e.value for e in at.error] == ["请至少选择一个变体。"]
