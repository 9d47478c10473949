"""A tuned variant of a language model, alone in a folder as Tune writes it (no genai_config.json, config.json or
tokenizer beside it), is still recognised from its graph: Deploy gives its server /generate and the load test
measures it in tokens, not in /predict calls an empty past cannot make in JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from core.deploy import DeployRequest
from core.deploy.server import generate_server
from core.quantize.judge import Tolerance
from core.tune.sessions import make_variants
from tests.cli import cli
from tests.lm_models import HEAD_SIZE, LanguageModel, byte_tokenizer, copy_model, hf_offline

__all__ = ["hf_offline"]  # the fixture, used in this module


@pytest.fixture(scope="module")
def tuned_variant(qwen_genai: LanguageModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tune's dynamic INT8 variant of the Qwen2 (GroupQueryAttention, a head size the cache's shape leaves open),
    made in a folder with nothing beside it."""
    root = tmp_path_factory.mktemp("tuned_lm")
    source = copy_model(qwen_genai.onnx, root / "model")  # the graph and its data, no genai_config.json
    feed: dict[str, np.ndarray] = {
        "input_ids": np.array([[1, 2, 3]], dtype=np.int64),
        "attention_mask": np.ones((1, 3), dtype=np.int64),
    }
    empty = np.zeros((1, 2, 0, HEAD_SIZE), np.float32)
    feed |= {f"past_key_values.{i}.{kind}": empty for i in range(2) for kind in ("key", "value")}
    made, paths, _notes = make_variants(["dynamic-qint8"], source, root / "tuned", ([feed], [feed]), Tolerance(), 1e12)
    assert made and not made[0].error, made
    variant = Path(paths["dynamic-qint8"])
    assert not any(p.suffix == ".json" for p in variant.parent.iterdir())
    return variant


@pytest.fixture(scope="module")
def tuned_server(tuned_variant: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server Deploy writes for the tuned variant, given its original's tokenizer (as the Deploy page gives it)."""
    root = tmp_path_factory.mktemp("tuned_lm_server")
    tokenizer = byte_tokenizer(root / "tokenizer.json")
    request = DeployRequest(model=str(tuned_variant), out_dir=str(root / "server"), zip=False, tokenizer=str(tokenizer))
    report = generate_server(request)
    assert report.generate and "generation.py" in report.files  # its cache read from the graph's MatMulInteger
    return root / "server"


def test_a_tuned_int8_language_model_alone_in_its_folder_deploys_with_generate_and_is_loaded_in_tokens(
    tuned_variant: Path, tuned_server: Path
) -> None:
    signature = json.loads((tuned_server / "signature.json").read_text())
    assert signature["generate"]["head_size"] == HEAD_SIZE and signature["generate"]["kv_heads"] == 2
    assert signature["generate"]["tokenizer"] == "tokenizer.json" and (tuned_server / "tokenizer.json").is_file()
    done = cli(
        "loadtest", str(tuned_server), "--model", str(tuned_variant), "--concurrency", "1", "--duration", "0.5",
        "--new-tokens", "4", "--json", "--no-save",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["results"] == [] and data["new_tokens"] == 4  # /generate, in tokens: no /predict request
    row = data["tokens"][0]
    assert row["errors"] == 0 and row["streams"] >= 1 and row["mismatched"] == 0 and row["total_tok_s"] > 0


def test_a_language_models_load_test_refuses_a_server_without_generate_rather_than_failing_every_predict(
    tuned_variant: Path, tuned_server: Path, tmp_path: Path
) -> None:
    shutil.copytree(tuned_server, tmp_path / "server")
    signature = tmp_path / "server" / "signature.json"  # as a server deployed when its cache was not recognised
    signature.write_text(json.dumps({k: v for k, v in json.loads(signature.read_text()).items() if k != "generate"}))
    done = cli(
        "loadtest", str(tmp_path / "server"), "--model", str(tuned_variant), "--concurrency", "1", "--duration",
        "0.5", "--json", "--no-save",
    )  # fmt: skip
    assert done.returncode == 2 and "has none" in done.stderr and "Deploy it again" in done.stderr, done.stderr


def test_an_auto_body_with_an_empty_past_is_sent_as_npz_which_keeps_its_shape() -> None:
    from core.deploy.load_requests import request_body

    past: dict[str, np.ndarray] = {"ids": np.ones((1, 3), np.int64), "past": np.zeros((1, 2, 0, 16), np.float32)}
    assert request_body(past, "auto")[2] == "npz"
    assert request_body({"ids": np.ones((1, 3), np.int64), "none": np.zeros((1, 0), np.int64)}, "auto")[2] == "json"
