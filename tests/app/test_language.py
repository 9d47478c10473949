"""The app in Chinese and English: ``?lang=`` in the address, the sidebar's picker, and the Model page in Chinese."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.i18n import using
from tests.app.conftest import APP


@pytest.fixture
def chinese(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """A new session opened at ``?lang=zh`` (on the start sample, TinyCNN)."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    return "\n".join(
        [t.value for t in at.title]
        + [m.value for m in at.markdown]
        + [c.value for c in at.caption]
        + [m.label for m in at.metric]
        + [t.label for t in at.tabs]
        + [b.label for b in at.button]
        + [s.label for s in at.selectbox]
    )


_HAN = re.compile(r"[\u4e00-\u9fff]")
_PROSE = re.compile(r"\b[A-Za-z][a-z]+ [a-z]+ [a-z]+\b")  # three English words in a row


def english_prose(at: AppTest) -> list[str]:
    """What the page says in English sentences: text with three English words in a row and no Chinese (names,
    code and dtypes are single words; a model's own text is not on these pages)."""
    tables = [str(c) for t in at.table for c in t.value.columns]
    said = [*_texts(at).splitlines(), *(e.value for e in at.info), *(e.value for e in at.error), *tables]
    return [line for line in said if _PROSE.search(line) and not _HAN.search(line)]


def test_the_model_page_in_chinese_shows_its_headings_labels_and_card_in_chinese(chinese: AppTest) -> None:
    at = chinese
    assert at.title[0].value == "模型"
    assert [t.label for t in at.tabs] == ["上传文件", "选择示例模型", "模型库"]
    assert at.file_uploader(key="uploads").label.startswith("ONNX 模型（.onnx")
    assert {m.label for m in at.metric} == {"大小", "参数量", "算子集版本", "节点数"}
    assert next(m.value for m in at.metric if m.label == "参数量") == "256,074"  # numbers keep their grouping
    assert next(b for b in at.button if b.key == "use_sample").label == "使用这个示例模型"
    shown = _texts(at)
    for words in ("当前模型", "经典的第一次导出练习", "PyTorch 示例模型（由代码构建）"):
        assert words in shown
    assert [link.proto.label for link in at.get("page_link")] == ["下一步：把它导出为 ONNX"]
    # the card's tables: Chinese headers, the model's own names and dtypes as they are
    inputs = at.table[0].value
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
    assert {m.label for m in at.metric} == {"大小", "参数量", "算子集版本", "节点数"}
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
    assert [t.label for t in at.tabs] == ["Upload a file", "Pick a sample", "Library"]
    assert "**Current model**" in [m.value for m in at.sidebar.markdown]
    assert at.query_params["lang"] == "en"


def test_without_lang_in_the_address_the_app_speaks_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert at.title[0].value == "Model"
    assert "lang" not in at.query_params  # the reader's browser decides; nothing is pinned in a link
    assert at.sidebar.segmented_control(key="lang_picker").value == "en"


def test_an_unknown_language_in_the_address_falls_back_to_english(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["lang"] = "<script>"
    at.run()
    assert not at.exception
    assert at.title[0].value == "Model"


def test_an_upload_the_worker_refuses_is_explained_in_chinese(chinese: AppTest) -> None:
    """The worker writes its refusals in the reader's language (the job's request carries it)."""
    at = chinese
    at.file_uploader(key="uploads").set_value(("empty.onnx", b"", "application/octet-stream")).run()
    shown = [e.value.replace("\\", "") for e in at.error]  # as read: the message is shown escaped
    assert shown == ["“empty.onnx”是空文件（0 字节）。可能是上传失败了，请重试。"]
    at.file_uploader(key="uploads").set_value(("notes.txt", b"just some text", "text/plain")).run()
    assert at.error[0].value.replace("\\", "").startswith("“notes.txt”不是本应用能读取的模型格式（开头的字节：6a 75")


def _seed_runs(data: Path) -> None:
    """Two versions of TinyCNN's benchmark, the newer 1.5× slower: a regression for the Dashboard to flag."""
    from datetime import UTC, datetime, timedelta

    from core.store import Store
    from tests.reports import made_report

    old, new = made_report("r-old", when=datetime.now(UTC) - timedelta(days=2)), made_report("r-new")
    new.model_id = "cd" * 32
    for r in new.results:
        r.median_ms, r.median_low_ms, r.median_high_ms = (
            v * 1.5 for v in (r.median_ms, r.median_low_ms, r.median_high_ms)
        )
    store = Store(f"sqlite:///{data / 'history.sqlite'}")
    for report in (old, new):
        store.save(report, owner="", team="")


def test_the_dashboard_and_history_in_chinese(tmp_path: Path, chinese: AppTest) -> None:
    _seed_runs(tmp_path / "data")
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
    assert list(at.dataframe[0].value.columns)[:4] == ["运行", "时间（UTC）", "模型", "机器"]
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
