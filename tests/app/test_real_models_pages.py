"""Real third-party models from packages through every page, by AppTest: a text recognizer, a scikit-learn
classifier, a character-level text model, a voice-activity model (benchmarked at batch 4 and quantized), a captcha
recogniser, an orientation classifier and a layout detector. Each page answers without an exception or an error
box, the Benchmark runs on the plan's real sizes, and what each model's file says is on its pages. The browser
walks a detector the same way (tests/e2e/test_real_models_e2e.py); these take the same code paths there."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.pages import card_figures, open_page, run_benchmark, texts, upload
from tests.real_models import real_model


def _no_failure(at: AppTest, where: str) -> None:
    assert not at.exception, (where, at.exception)
    assert not [e.value for e in at.error], (where, [e.value for e in at.error])


@pytest.mark.parametrize(
    ("name", "plan", "pages"),
    [
        pytest.param("ocr_rec", "", ["decode", "partition"], id="ocr_rec"),
        pytest.param("iris", "float_input 3×2", ["decode", "partition", "benchmark"], id="iris"),
        pytest.param(
            "tashkeel", "input_ids 1×128, random integers 0–53", ["decode", "partition", "benchmark"], id="tashkeel"
        ),
        pytest.param(
            "silero_vad",
            "input 1×512, random normal (mean 0, sd 1) · state 2×1×128, random normal (mean 0, sd 1) · sr scalar, all "
            "16000 (a sample rate: 16 kHz)",
            ["decode", "partition", "benchmark", "quantize"],
            id="silero_vad",
        ),
    ],
)
def test_a_real_model_through_every_page(
    name: str, plan: str, pages: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    path = real_model(name)
    at = open_page(model=(path.name, path.read_bytes()), timeout=300)
    assert at.session_state["model"].name == path.stem
    _no_failure(at, "model")
    for page in pages:
        if page == "benchmark":
            batches = [1, 4] if name == "silero_vad" else None  # the state's batch axis moves with the audio's
            run_benchmark(at, iterations=20, warmup=2, batches=batches)
            assert "95 % CI" in at.subheader[0].value.replace("\\", "")
            shown = texts(at)
            assert f"Runs on: {plan}" in shown, shown[:3000]
            if batches:
                table = next(d.value for d in at.dataframe if "configuration" in d.value.columns)
                assert sum("batch 4" in c for c in table["configuration"]) == 2, table  # at both levels
        elif page == "quantize":
            _quantize(at)
        else:
            at.switch_page(f"app_pages/{page}.py").run()
        _no_failure(at, page)


def _quantize(at: AppTest) -> None:
    """The page's three variants, on few samples: each is made and compared (or says why not)."""
    at.switch_page("app_pages/quantize.py").run()
    at.number_input(key="quantize_iters").set_value(10)
    at.number_input(key="quantize_held_out").set_value(2)
    at.number_input(key="quantize_count").set_value(2)
    next(b for b in at.button if b.label == "Quantize and compare").click()
    at.run()
    table = next(d.value for d in at.dataframe if "variant" in d.value.columns)
    assert len(table) == 4 and table["variant"].iloc[0] == "FP32 (original)", table


def _metric(at: AppTest, label: str) -> str:
    figures = {m.label: m.value for m in at.metric} or card_figures(at)  # Decode's metrics, or the Model card's
    return figures[label]


def test_two_real_models_under_chinese_names_keep_their_traits_and_stay_two_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RapidAI's orientation classifier and ddddocr's captcha recogniser, uploaded as 方向分类.onnx and 验证码识别.onnx
    (copies under Chinese names: the packages name them in English). Each keeps its name, its card says what its
    file says (class names; domains declared and unused), its parameters are one number on Model and Decode, the
    Benchmark runs it at a real size (a 224 classifier; a text line 320 wide, from its axis's name, never 1), and
    History and the Dashboard list two models."""
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page(timeout=300)
    cases = [
        ("方向分类.onnx", "orientation", "4 class names (`character`): 0, 90, 180, 270.", "x 1×3×224×224", "1,687,589"),
        (
            "验证码识别.onnx",
            "captcha",
            "declared and unused: ai.onnx.preview.training, ai.onnx.training, com.microsoft.experimental, "
            "com.microsoft.mlfeaturizers, com.microsoft.nchwc (",
            "input1 1×1×64×320",
            "13,520,310",
        ),
    ]
    for file_name, name, card, plan, parameters in cases:
        upload(at, file_name, real_model(name).read_bytes())
        assert at.session_state["model"].name == file_name.removesuffix(".onnx")
        _no_failure(at, name)
        shown = texts(at).replace("\\", "")
        assert card in shown, shown[:3000]
        assert "line of text" not in shown and "text recogniser" not in shown  # neither has a `character` alphabet
        assert _metric(at, "Parameters") == parameters
        at.switch_page("app_pages/decode.py").run()
        _no_failure(at, f"{name} decode")
        assert _metric(at, "Parameters") == parameters
        if name == "captcha":  # the five domains no node uses, as the card names them, in one warning
            unused = [w.value.replace("\\", "") for w in at.warning if "declared in the model's opset" in w.value]
            assert unused == [
                "Operator domains 'ai.onnx.preview.training', 'ai.onnx.training', 'com.microsoft.experimental', "
                "'com.microsoft.mlfeaturizers', 'com.microsoft.nchwc' are declared in the model's opset imports but "
                "no node uses them: nothing custom runs."
            ]
        run_benchmark(at, iterations=10, warmup=1)
        _no_failure(at, f"{name} benchmark")
        assert f"Runs on: {plan}, random normal" in texts(at)
        at.switch_page("app_pages/model.py").run()
    stored = sorted(p.name for p in at.session_state["workspace"].path.rglob("*.onnx"))
    assert stored == ["验证码识别.onnx"]  # the name kept on disk; the earlier upload was pruned
    at.switch_page("app_pages/history.py").run()
    _no_failure(at, "history")
    assert list(at.dataframe[0].value["model"]) == ["验证码识别"]  # the current model's runs first
    at.multiselect(key="history_models").set_value([]).run()  # all models
    assert sorted(at.dataframe[0].value["model"]) == ["方向分类", "验证码识别"]
    at.switch_page("app_pages/dashboard.py").run()
    _no_failure(at, "dashboard")
    assert sorted(at.dataframe[0].value["model"]) == ["方向分类", "验证码识别"]


def test_a_layout_detector_with_its_weights_in_constant_nodes_reads_the_same_on_model_and_decode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RapidAI's document layout detector: 1,820,488 weights all in Constant nodes, ten class names in its
    metadata, a 'Paddle' domain declared and never used. Model and Decode give one parameter count and both say
    the domain is unused; the Partition page takes its 1,493 nodes, and Profile states its plan and nothing about
    another model."""
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    path = real_model("layout")
    at = open_page(model=(path.name, path.read_bytes()), timeout=300)
    _no_failure(at, "model")
    shown = texts(at)
    assert "10 class names (`character`): text, title, figure, figure_caption" in shown, shown[:3000]
    assert "Operator domain declared and unused: Paddle (no node uses it; nothing custom runs)." in shown
    assert "488 weight tensor(s) are held in Constant nodes" in shown
    assert _metric(at, "Parameters") == "1,820,488"
    at.switch_page("app_pages/decode.py").run()
    _no_failure(at, "decode")
    assert _metric(at, "Parameters") == "1,820,488"
    assert "Operator domain 'Paddle' is declared in the model's opset imports but no node uses it" in texts(at)
    at.switch_page("app_pages/partition.py").run()
    _no_failure(at, "partition")
    at.switch_page("app_pages/profile.py").run()  # before a run: its plan, and no word about another model
    _no_failure(at, "profile")
    assert "Runs on: image 1×3×800×608" in texts(at) and "TinyCNN" not in " ".join(i.value for i in at.info)
