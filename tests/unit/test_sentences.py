"""Sentences core writes in English, shown in the reader's language (core.recorded)."""

from __future__ import annotations

from core.decode.sentences import SENTENCES as DECODE
from core.export.verify import SENTENCES as EXPORT
from core.i18n import using
from core.recorded import shown
from core.upgrade.sentences import SENTENCES as UPGRADE


def test_a_known_sentence_is_translated_with_its_values_and_a_clause_inside_it_too() -> None:
    folded = "2 BatchNorm layer(s) were folded into the preceding Conv weights: no BatchNormalization node is left."
    with using("zh"):
        assert (
            shown(folded, EXPORT)
            == "2 个 BatchNorm 层被折叠进前面 Conv 的权重：计算图中不再有 BatchNormalization 节点。"
        )
        tag = "tag 08 = field 1 << 3 | wire type 0 (varint); the varint that follows is 8."
        assert shown(tag, DECODE) == "标签 08 = 字段 1 << 3 | 线路类型 0（varint）；后面的 varint 值为 8。"


def test_clauses_joined_by_semicolons_are_each_translated() -> None:
    change = "version 6 → 14; attribute broadcast dropped (broadcasting became implicit, numpy-style, in opset 7)"
    with using("zh"):
        assert shown(change, UPGRADE) == "版本 6 → 14；去掉了属性 broadcast（广播在算子集 7 中变成了隐式的 numpy 风格）"


def test_text_no_sentence_matches_and_english_readers_get_it_as_it_is() -> None:
    library = "[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model."
    with using("zh"):
        assert shown(library, EXPORT) == library
    folded = "1 Flatten layer(s) became Reshape."
    with using("en"):
        assert shown(folded, EXPORT) == folded
