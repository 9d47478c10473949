"""What core says about a model (an export's changes, a byte's explanation, an upgrade's change) is kept as data, a
template and its values (core.notes), and said in the reader's language where it is shown: nothing matches a
sentence against templates to find its values again."""

from __future__ import annotations

from core.decode import annotate_header, sentences
from core.export.messages import plain_warnings
from core.export.verify import describe_changes
from core.i18n import using
from core.notes import Note, say
from tests import builders


def test_a_note_is_said_in_the_readers_language_with_its_values_and_a_clause_inside_it_too() -> None:
    (folded,) = describe_changes({"BatchNorm2d": 2, "Conv2d": 2}, {"Conv": 2})
    assert folded.values["count"] == 2 and isinstance(folded.values["where"], Note)  # the clause is a note too
    assert say(folded) == (
        "2 BatchNorm layer(s) were folded into the preceding Conv weights: no BatchNormalization node is left."
    )
    with using("zh"):
        assert say(folded) == "2 个 BatchNorm 层被折叠进前面 Conv 的权重：计算图中不再有 BatchNormalization 节点。"
    data = builders.relu_model().SerializeToString()
    tag = annotate_header(data[:64], len(data))[0].explanation
    assert tag.key == sentences.VARINT and tag.values["value"] == "8"
    with using("zh"):
        assert say(tag) == "标签 08 = 字段 1 << 3 | 线路类型 0（varint）；后面的 varint 值为 8。"


def test_a_model_chosen_value_that_looks_like_a_template_is_never_read_as_one() -> None:
    """A value is filled in as it is: braces in a name are text, and no other sentence's words are found in it."""
    (said,) = plain_warnings(
        ["axis name: {count} will not be used, since it shares the same shape constraints with another axis: s0."]
    )
    assert said.values == {"axis": "{count}", "other": "s0"}
    assert say(said) == "The axis named {count} is the same dim as s0 in the program, so the ONNX model calls both s0."
    with using("zh"):
        assert "{count}" in say(said)


def test_words_a_library_wrote_are_kept_and_shown_as_they_are() -> None:
    library = "[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model."
    (kept,) = plain_warnings([library])
    assert kept == Note.kept(library, "warning")
    with using("zh"):
        assert say(kept) == library
    (repeated,) = plain_warnings([library, library])
    assert say(repeated) == f"{library} (×2)"
