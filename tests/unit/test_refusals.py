"""ONNX Runtime's other refusals of onnx's own test models, in the user's terms on every page that opens a session:
a training op, a StringNormalizer in a locale the machine lacks, an op of a custom domain."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import RuntimeRefusedError
from core.export.verify import load_session
from core.i18n import using
from core.notes import say
from core.partition import PartitionRequest, partition_model
from core.runtime.harness import timed_session
from tests import builders

NO_SUCH_LOCALE = "xx_XX.UTF-8"  # no machine has it, so ONNX Runtime refuses the node everywhere


def _refusal(path: Path) -> str:
    with pytest.raises(RuntimeRefusedError) as refused:
        partition_model(PartitionRequest(path=str(path)))
    return str(refused.value)


def test_a_training_op_is_named_with_what_this_runtime_has_and_the_way_out(tmp_path: Path) -> None:
    path = builders.write(builders.training_model(), tmp_path / "gradient.onnx")
    words = _refusal(path)
    assert "training operators of ONNX's preview domain ai.onnx.preview.training: Gradient (1 node)" in words
    assert "no kernel for any op of that domain (it has kernels for ai.onnx, ai.onnx.ml, com.microsoft" in words
    assert "onnx.utils.extract_model" in words and "is not a registered function/op" not in words
    with using("zh"):
        assert "此模型含有 ONNX 预览域 ai.onnx.preview.training 的训练算子：Gradient（1 个节点）" in _refusal(path)
    # Benchmark and Profile open their sessions through the harness: the same words, not a BenchmarkError
    with pytest.raises(RuntimeRefusedError, match="training operators"):
        timed_session(str(path), "all", "CPUExecutionProvider", 1)


def test_a_locale_the_machine_lacks_is_named_with_the_ones_it_has(tmp_path: Path) -> None:
    path = builders.write(builders.string_normalizer_model(NO_SUCH_LOCALE), tmp_path / "strnorm.onnx")
    words = _refusal(path)
    assert f"StringNormalizer node 'lower' changes the case of strings in the locale {NO_SUCH_LOCALE}" in words
    assert "this machine does not have that locale: it has " in words and "POSIX" in words
    assert f"enable {NO_SUCH_LOCALE} in /etc/locale.gen and run locale-gen" in words
    assert "language-pack" not in words and "_S_create_c_locale" not in words  # ORT's own text stays out
    check, session = load_session(path)  # Export's check of a model says the same
    assert not check.ok and session is None and check.detail is not None
    assert "does not have that locale" in say(check.detail)


def test_an_op_of_a_custom_domain_says_it_needs_its_library(tmp_path: Path) -> None:
    model = builders.relu_model()
    model.graph.node[0].domain = "com.example"
    model.opset_import.add(domain="com.example", version=1)
    words = _refusal(builders.write(model, tmp_path / "custom.onnx"))
    assert "operators of the domain 'com.example': Relu (1 node)" in words
    assert "register_custom_ops_library" in words
    with using("zh"):  # the Partition page in Chinese said it in English
        words = _refusal(tmp_path / "custom.onnx")
    assert "此模型使用了算子域“com.example”的算子：Relu（1 个节点），此 ONNX Runtime 没有它们的内核" in words
    assert "register_custom_ops_library" in words and "custom ops" not in words


def test_no_model_of_onnxs_own_backend_suite_is_refused_in_onnx_runtimes_words_alone() -> None:
    """The 140 test models onnx's wheel ships (and 9 "light" zoo models, which all open: benchmarks/backend_suite.py
    counts every one by kind)."""
    import onnx
    import onnxruntime as ort

    from core.runtime.ort import explain_session_error

    options = ort.SessionOptions()
    options.log_severity_level = 4
    kinds = []
    for path in sorted((Path(onnx.__file__).parent / "backend" / "test" / "data").rglob("model.onnx")):
        try:
            ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            error = explain_session_error(exc, "create a session for this model", str(path))
            assert isinstance(error, RuntimeRefusedError), f"{path.parent.name}: {error}"
            kinds.append(type(error).__name__ + (": training" if "training operators" in str(error) else ""))
    assert kinds.count("OldOpsetError") >= 30 and "RuntimeRefusedError: training" in kinds


def test_a_refusal_in_the_partitions_own_session_thread_is_said_in_the_readers_language(tmp_path: Path) -> None:
    """The partition's session is built in a thread beside the levels' (the page's one job): it speaks the
    job's language, not the thread's default English."""
    model = builders.relu_model()
    model.graph.node[0].domain = "com.example"
    model.opset_import.add(domain="com.example", version=1)
    path = builders.write(model, tmp_path / "custom.onnx")
    with using("zh"), pytest.raises(RuntimeRefusedError) as refused:
        partition_model(PartitionRequest(path=str(path), levels_dir=str(tmp_path / "levels")))
    assert "此模型使用了算子域“com.example”的算子：Relu（1 个节点）" in str(refused.value)
