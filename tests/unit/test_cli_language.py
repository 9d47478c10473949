"""The command line and core's refusals in Chinese: --lang or the environment picks the language, --json stays
English, and what core refuses or notes reads in the reader's language."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from core.cli.common import environment_language
from core.errors import LimitExceededError, UnsafeModelError
from core.i18n import language, using
from core.model.archives import check_zip
from core.model.notes import LOADED_INTO, SUBGRAPHS, note
from core.notes import Note, say
from core.settings import IntakeLimits
from tests.cli import cli

_LOCALE = ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE")


@pytest.fixture(autouse=True)
def english_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    """No locale from the machine running the tests: each test sets the one it means."""
    for name in _LOCALE:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "en"),
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_CN.UTF-8", "LC_ALL": "C.UTF-8"}, "en"),  # LC_ALL comes first
        ({"LC_MESSAGES": "zh_TW", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LANGUAGE": "zh_CN:en"}, "zh"),
        ({"LANG": "fr_FR.UTF-8"}, "en"),
    ],
)
def test_the_environment_names_the_language(environ: dict[str, str], expected: str) -> None:
    assert environment_language(environ) == expected


def test_samples_in_chinese_by_lang_and_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = cli("--lang", "zh", "samples")
    assert asked.returncode == 0
    assert "经典的第一次导出练习" in asked.stdout  # TinyCNN's description, from the catalog
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert cli("samples").stdout == asked.stdout
    assert "Two conv blocks (conv, BatchNorm" in cli("--lang", "en", "samples").stdout  # --lang wins
    assert language() == "en"  # the command's language ends with the command


def test_an_error_line_reads_in_chinese_and_json_stays_english(tmp_path: Path) -> None:
    missing = str(tmp_path / "nothing.onnx")
    done = cli("--lang", "zh", "info", missing)
    assert done.returncode == 2
    said = f"错误：没有这个文件：{missing}（请给出模型文件的路径、Hugging Face 文件夹，或 sample:NAME）。"
    assert done.stderr.strip() == said
    english = cli("samples", "--json").stdout
    assert cli("--lang", "zh", "samples", "--json").stdout == english
    assert json.loads(english)[0]["description"].isascii()


def test_the_history_table_has_chinese_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.store import Store
    from tests.reports import made_report

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_HISTORY_URL", "")
    Store(f"sqlite:///{tmp_path / 'history.sqlite'}").save(made_report("r1"))
    header = cli("--lang", "zh", "history").stdout.splitlines()[0]
    assert header.split()[:5] == ["id", "时间（UTC）", "类型", "模型", "机器"] and header.endswith("结论")
    assert cli("--lang", "zh", "history").stdout.splitlines()[1].split()[3] == "基准测试"  # the run's kind
    assert cli("--lang", "zh", "history", "--model", "nothing").stdout.strip() == "没有匹配的已保存运行"


def _bomb(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("weights.bin", b"\0" * (8 << 20))
    return path


def test_an_archive_refusal_reads_in_the_readers_language(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.zip")
    limits = IntakeLimits()
    with pytest.raises(UnsafeModelError) as english:
        check_zip(bomb, limits)
    assert "is a zip bomb" in str(english.value)
    with using("zh"), pytest.raises(UnsafeModelError) as chinese:
        check_zip(bomb, limits)
    assert str(chinese.value).startswith("“bomb.zip”是 zip 炸弹：“weights.bin”会膨胀")
    assert str(chinese.value).endswith("占满磁盘，所以没有解包。")


def test_a_limit_names_what_it_counts_in_chinese() -> None:
    import onnx
    from onnx import TensorProto, helper

    from core.model.counts import check_counts

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], [f"y{i}"]) for i in range(3)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph)
    onnx.checker.check_model(model)
    with using("zh"), pytest.raises(LimitExceededError) as refused:
        check_counts(model, "m.onnx", IntakeLimits(max_nodes=2))
    assert str(refused.value).startswith("“m.onnx”有 3 个节点；本实例最多接受 2 个。")


def test_a_note_is_kept_as_data_and_said_in_the_readers_language() -> None:
    with using("zh"):
        kept = note(SUBGRAPHS, subgraphs=2, nodes=1024)  # made in a worker that speaks Chinese
    assert kept == Note(SUBGRAPHS, {"subgraphs": 2, "nodes": 1024})  # the record keeps the template and its values
    assert say(kept) == "2 subgraph(s) (If/Loop/Scan), 1,024 nodes in all."
    with using("zh"):
        assert say(kept) == "2 个子图（If/Loop/Scan），共 1,024 个节点。"
        assert say(note(LOADED_INTO, arch="tinycnn")) == "已加载到“tinycnn”架构中：每个键和形状都匹配。"
        # a sentence an earlier version kept in English reads as it was written: nothing parses it back
        assert say("2 subgraph(s) (If/Loop/Scan), 1,024 nodes in all.") == (
            "2 subgraph(s) (If/Loop/Scan), 1,024 nodes in all."
        )
        assert say("A note from no template") == "A note from no template"
