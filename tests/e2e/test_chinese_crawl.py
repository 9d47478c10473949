"""In Chromium: every page of the walk-through opened in Chinese (?lang=zh) on the TinyCNN sample, after what each
page needs (an export, a benchmark run, a quantization, saved runs), and no English prose left in its main area
outside code, tables and charts; the graph view's own toolbar, legend and details in Chinese too. Screenshots:
test-artifacts/e2e/zh-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import shot, wait_idle
from tests.i18n_text import english_prose
from tests.reports import seed_regression

pytestmark = pytest.mark.e2e

# The pages crawled, in the walk-through's order: (its title in Chinese, what to do there first, a screenshot's
# name). Every page of the walk-through is here (the classroom's are AppTests: tests/app/test_classroom_page.py).
PAGES: list[tuple[str, str, str]] = [
    ("模型", "", "zh-model"),
    ("导出", "export", "zh-export"),
    ("解析", "graph", "zh-decode"),
    ("图分区", "", "zh-partition"),
    ("基准测试", "benchmark", "zh-benchmark"),
    ("性能剖析", "", "zh-profile"),
    ("量化", "quantize", "zh-quantize"),
    ("对比", "compare", "zh-compare"),
    ("部署", "", "zh-deploy"),
    ("历史记录", "", "zh-history"),
    ("看板", "", "zh-dashboard"),
]

# what is not prose: code, tables, charts, the graph canvas, and Streamlit's own widget text (docs/i18n.md)
_SKIPPED = ", ".join(
    [
        "pre",
        "code",
        "table",
        "iframe",
        "canvas",
        "svg",
        '[data-testid="stTable"]',
        '[data-testid="stDataFrame"]',
        '[data-testid="stPlotlyChart"]',
        '[data-testid="stFileUploaderDropzoneInstructions"]',
        '[data-testid="stBaseButton-secondary"][aria-label]',
    ]
)
_TEXT = """(skipped) => {
  const main = document.querySelector('[data-testid="stMain"]');
  const blocks = main.querySelectorAll('p, li, label, button, h1, h2, h3, h4, h5, summary, [role="alert"]');
  return [...blocks].filter(e => !e.closest(skipped)).map(e => e.innerText.trim()).filter(t => t);
}"""


def test_english_prose_is_found_and_names_are_not() -> None:
    assert english_prose(["这里还有 an English sentence left"]) == ["这里还有 an English sentence left"]
    assert english_prose(["量化 QLinearConv ×2, CPUExecutionProvider, model.onnx, float32 ONNX Runtime"]) == []
    assert english_prose(["用 `python -m core quantize` 保存"]) == []


def _export(page) -> None:  # type: ignore[no-untyped-def]
    """Export TinyCNN with the page's defaults (a dynamic batch), checked at another batch size."""
    assert page.get_by_role("checkbox", name="轴 0 为动态轴").is_checked()
    page.get_by_role("button", name="导出", exact=True).click()
    page.get_by_text("导出并验证完成").wait_for(timeout=120_000)
    wait_idle(page)
    assert page.get_by_text("在 batch = 3 下与 PyTorch 一致").is_visible()


def _graph(page) -> None:  # type: ignore[no-untyped-def]
    """The graph view's own words: its toolbar, legend, search and a node's details."""
    page.locator(".graph-canvas[data-ready='true']").wait_for(timeout=60_000)
    wait_idle(page)
    toolbar = page.locator(".gv-bar").inner_text()
    assert "适应窗口" in toolbar and "全部折叠" in toolbar
    assert page.locator(".gv-legend > b").inner_text() == "算子类型"
    page.get_by_placeholder("按名称或算子查找节点").fill("Conv")
    page.locator(".gv-results button").first.click()
    wait_idle(page)
    details = page.locator(".gv-details").inner_text()
    assert "属性" in details and "输入" in details and "权重" in details


def _benchmark(page) -> None:  # type: ignore[no-untyped-def]
    """A benchmark of 10 calls per configuration (the page's words, not its figures, are read), to its chart."""
    page.get_by_label("每个配置测量的调用次数").fill("10")
    page.get_by_label("预热调用次数", exact=True).fill("2")
    page.get_by_role("button", name="运行基准测试").click()
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=180_000)
    wait_idle(page)


def _quantize(page) -> None:  # type: ignore[no-untyped-def]
    """The exported TinyCNN's dynamic INT8 variant only, measured briefly."""
    variants = page.locator('[data-testid="stMultiSelect"]').first
    for label in ("静态 INT8，QDQ，MinMax", "FP16（保留 float32 输入和输出）"):
        variants.get_by_role("button", name=f"Remove {label}").click()
    page.locator('input[aria-label="每个模型的测量调用次数"]').fill("20")
    page.locator('input[aria-label="用于精度检查的留出样本数"]').fill("4")
    page.get_by_role("button", name="量化并比较").click()
    page.get_by_text("大小与延迟").wait_for(timeout=180_000)
    wait_idle(page)


def _compare(page) -> None:  # type: ignore[no-untyped-def]
    """The exported TinyCNN against its PyTorch original run eagerly (the first choice after an export)."""
    page.get_by_role("button", name="对比", exact=True).click()
    page.get_by_text("没有节点超出容差").wait_for(timeout=180_000)
    wait_idle(page)


ACTIONS = {"export": _export, "graph": _graph, "benchmark": _benchmark, "quantize": _quantize, "compare": _compare}


def test_every_translated_page_reads_in_chinese(browser, app_url: str, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    seed_regression(data_dir)
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
    page = context.new_page()
    try:
        page.goto(f"{app_url}/?lang=zh&sample=tinycnn")
        page.get_by_text("256,074").wait_for(timeout=60_000)
        wait_idle(page)
        found = {}
        for title, action, name in PAGES:
            if title != "模型":
                page.locator('[data-testid="stSidebar"]').get_by_role("link", name=title, exact=True).click()
                page.get_by_role("heading", name=title, exact=True).wait_for(timeout=60_000)
                wait_idle(page)
            if action:
                ACTIONS[action](page)
            shot(page, name)
            found[title] = english_prose(page.evaluate(_TEXT, _SKIPPED))
        assert found == {title: [] for title, _action, _name in PAGES}
    finally:
        context.close()
