"""A Hugging Face folder as people have it (config.json, weights, a tokenizer, ONNX variants under onnx/), given as a
folder or as a .zip of one: read offline as one model and one family of ONNX files, each reachable by its path; the
folder's code never runs, pickled weights are read with weights_only after their opcodes are checked, and a zip is
checked as every archive is."""

from __future__ import annotations

import dataclasses
import json
import pickle
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from core.errors import IntakeError, LimitExceededError, UnsafeModelError
from core.model.formats import detect_format
from core.model.hf_folder import CODE_NEVER_RUN, NEEDS_OWN_CODE, PICKLED_WEIGHTS, pick_member
from core.model.intake import IntakeRequest, describe_files
from core.model.records import ModelRecord
from core.notes import say_all
from core.settings import IntakeLimits
from tests.cli import cli
from tests.hf_folders import hf_gpt2, onnx_family, save_gpt2, with_onnx_family

__all__ = ["hf_gpt2", "onnx_family"]  # the session fixtures, imported for pytest


def describe(path: Path, variant: str = "", unpack: Path | None = None, **limits: Any) -> ModelRecord:
    request = IntakeRequest(paths=[str(path)], variant=variant, unpack_dir=str(unpack or ""))
    return describe_files(request, limits=dataclasses.replace(IntakeLimits(), **limits))


def copied(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name))


def test_a_folder_of_config_and_safetensors_is_a_causal_language_model_with_its_cache_signature(hf_gpt2: Path) -> None:
    record = describe(hf_gpt2)
    assert record.format == "hf" and record.is_pytorch and record.architecture == "GPT2LMHeadModel"
    assert record.path == record.folder == str(hf_gpt2) and not record.family
    names = [s.name for s in record.inputs]
    assert names[:3] == ["input_ids", "attention_mask", "position_ids"]
    assert names[3:] == [f"past_key_values.{i}.{k}" for i in range(2) for k in ("key", "value")]
    assert [s.name for s in record.outputs][:2] == ["logits", "present.0.key"]
    past = record.inputs[3]
    assert past.shape == [1, 4, 0, 16] and past.dynamic_axes == {"0": "batch_size", "2": "past_sequence_length"}
    assert record.inputs[1].dynamic_axes["1"] == "total_sequence_length"
    assert record.inputs[0].vocabulary == 512
    assert record.parameter_count and record.parameter_count > 100_000  # from the safetensors header alone


def test_the_onnx_files_of_a_folder_are_one_family_each_with_its_variant_size_and_data(onnx_family: Path) -> None:
    record = describe(onnx_family)
    assert record.format == "hf"  # its PyTorch weights are the model; its ONNX files, the family beside it
    family = {m.variant: m for m in record.family}
    assert list(family) == ["fp32", "fp16", "q4"]
    assert family["q4"].file == "onnx/model_q4.onnx" and family["q4"].data_files == ["model_q4.onnx_data"]
    on_disk = onnx_family / "onnx" / "model_q4.onnx"
    assert family["q4"].size_bytes == on_disk.stat().st_size + (on_disk.parent / "model_q4.onnx_data").stat().st_size
    said = say_all(record.notes)
    assert "3 ONNX file(s) of this model in the folder: fp32, fp16, q4." in said
    assert any("Its tokenizer is in the folder (tokenizer.json)" in s for s in said)


def test_a_variant_is_named_by_its_dtype_or_its_path_and_an_unknown_one_lists_those_there_are(
    onnx_family: Path,
) -> None:
    q4 = describe(onnx_family, variant="q4")
    assert q4.format == "onnx" and q4.path == str(onnx_family / "onnx" / "model_q4.onnx")
    assert q4.external_data == ["model_q4.onnx_data"] and len(q4.family) == 3 and q4.folder == str(onnx_family)
    assert describe(onnx_family, variant="onnx/model_fp16.onnx").path.endswith("model_fp16.onnx")
    with pytest.raises(IntakeError, match=r"no ONNX file 'int8'; its ONNX files are: fp32 \(onnx/model.onnx\), fp16"):
        describe(onnx_family, variant="int8")


def test_a_folder_of_onnx_files_only_is_its_main_file_with_the_family_beside_it(
    tmp_path: Path, onnx_family: Path
) -> None:
    folder = copied(onnx_family, tmp_path)
    (folder / "model.safetensors").unlink()
    record = describe(folder)
    assert record.format == "onnx" and record.path == str(folder / "onnx" / "model.onnx")
    assert [m.variant for m in record.family] == ["fp32", "fp16", "q4"]
    assert say_all(record.notes)[0].startswith("The ONNX file onnx/model.onnx of the folder 'tiny-gpt2'")


def test_variants_are_told_apart_from_components_and_a_file_that_is_no_onnx_is_left_out(tmp_path: Path) -> None:
    from core.model.hf_folder import family_of

    folder = tmp_path / "enc-dec"
    (folder / "onnx").mkdir(parents=True)
    for name in ("decoder_model_merged_q4f16", "encoder_model", "decoder_model_merged", "model_quantized"):
        shutil.copy(with_onnx_family(tmp_path / "src", ("",)) / "onnx" / "model.onnx", folder / "onnx" / f"{name}.onnx")
    (folder / "onnx" / "notes.onnx").write_text("not a model")
    family = family_of(folder)
    assert [(m.component, m.variant) for m in family] == [
        ("model", "quantized"),
        ("decoder_model_merged", "fp32"),
        ("decoder_model_merged", "q4f16"),
        ("encoder_model", "fp32"),
    ]
    assert pick_member(family, "q4f16").key == "decoder_model_merged_q4f16"


def test_a_zip_of_the_folder_is_checked_unpacked_and_read_as_the_folder(tmp_path: Path, onnx_family: Path) -> None:
    archive = tmp_path / "tiny-gpt2.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(onnx_family.rglob("*")):
            if path.is_file():
                zf.write(path, f"tiny-gpt2/{path.relative_to(onnx_family).as_posix()}")
    assert detect_format(archive) == "hf-zip"  # not an ONNX bundle, not a package of code
    record = describe(archive, unpack=tmp_path / "unpacked")
    assert record.format == "hf" and record.name == "tiny-gpt2" and len(record.family) == 3
    assert Path(record.folder).is_relative_to(tmp_path / "unpacked")


def test_a_zip_of_a_folder_that_climbs_out_of_it_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("config.json", json.dumps({"architectures": ["GPT2LMHeadModel"]}))
        zf.writestr("model.safetensors", b"\0" * 16)
        zf.writestr("../../escaped.py", "print('out')")
    with pytest.raises(UnsafeModelError, match="a path outside the archive's folder"):
        describe(archive, unpack=tmp_path / "out")
    assert not (tmp_path / "escaped.py").exists()


def test_a_zip_bomb_of_a_folder_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("config.json", "{}")
        zf.writestr("model.safetensors", b"\0" * (40 << 20))
    with pytest.raises(UnsafeModelError, match="zip bomb"):
        describe(archive, unpack=tmp_path / "out")


def _with_code(hf_gpt2: Path, tmp_path: Path, module: str, more: str = "") -> tuple[Path, Path]:
    """A copy of the GPT-2 folder holding ``module`` (Python, then ``more``), and the file it writes if it ever runs."""
    folder, marker = copied(hf_gpt2, tmp_path), tmp_path / "ran"
    (folder / module).write_text(f"open({str(marker)!r}, 'w').write('ran')\n{more}")
    return folder, marker


def test_a_folder_with_python_code_is_refused_where_code_is_and_its_code_never_runs_where_it_is_not(
    tmp_path: Path, hf_gpt2: Path
) -> None:
    folder, marker = _with_code(hf_gpt2, tmp_path, "modeling_gpt2x.py")
    with pytest.raises(UnsafeModelError, match=r"holds Python code \(modeling_gpt2x.py\).*WORKBENCH_ALLOW_CODE"):
        describe(folder, allow_code_archives=False)
    record = describe(folder)  # local mode: read, and said never to run
    assert any(n.key == CODE_NEVER_RUN for n in record.notes if not isinstance(n, str))
    from core.model.causal_lm import load_causal_lm

    load_causal_lm(folder)
    assert not marker.exists()


def test_a_config_that_asks_for_its_own_code_is_never_built_and_its_code_never_runs(
    tmp_path: Path, hf_gpt2: Path
) -> None:
    folder, marker = _with_code(hf_gpt2, tmp_path, "modeling_custom.py", "class Custom: pass\n")
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_custom.Custom"}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(IntakeError, match=r"needs its own code .* never run here"):
        describe(folder)  # no ONNX file to run instead
    with_onnx_family(folder, ("",))
    record = describe(folder)
    assert record.format == "onnx" and any(n.key == NEEDS_OWN_CODE for n in record.notes if not isinstance(n, str))
    from core.model.causal_lm import load_causal_lm

    with pytest.raises(IntakeError, match="needs its own code"):
        load_causal_lm(folder)
    assert not marker.exists()


def test_pickled_weights_are_read_with_weights_only_after_their_opcodes_are_checked(tmp_path: Path) -> None:
    folder = save_gpt2(tmp_path / "bin-gpt2", safe=False)
    assert (folder / "pytorch_model.bin").exists() and not (folder / "model.safetensors").exists()
    record = describe(folder)
    assert record.format == "hf" and any(n.key == PICKLED_WEIGHTS for n in record.notes if not isinstance(n, str))
    from core.model.causal_lm import load_causal_lm

    assert load_causal_lm(folder).config.n_layer == 2


class Payload:
    def __reduce__(self) -> tuple[Any, ...]:
        return (print, ("this pickle runs code",))


def test_a_pytorch_model_bin_that_would_run_code_is_refused_unopened(tmp_path: Path, hf_gpt2: Path) -> None:
    folder = copied(hf_gpt2, tmp_path)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weight": Payload()}, protocol=2))
    with pytest.raises(UnsafeModelError):
        describe(folder)


def test_links_in_a_folder_are_not_followed(tmp_path: Path, hf_gpt2: Path) -> None:
    folder = copied(hf_gpt2, tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to(secret)
    with pytest.raises(UnsafeModelError, match=r"'config\.json' in the folder 'gpt2' is a link"):
        describe(folder)


def test_weights_past_the_limit_are_refused_by_their_size(hf_gpt2: Path) -> None:
    with pytest.raises(LimitExceededError, match="The weights of 'gpt2' take"):
        describe(hf_gpt2, max_initializer_bytes=1)


def test_a_folder_that_holds_no_model_says_what_one_holds(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "README.md").write_text("hello")
    with pytest.raises(IntakeError, match=r"holds neither a config\.json with weights .* nor an ONNX file"):
        describe(tmp_path / "empty")


# ------------------------------------------------------------------------------------------ the command line
def test_inspect_lists_a_folders_family_and_its_onnx_files_are_given_by_path(onnx_family: Path) -> None:
    listed = cli("--lang", "en", "inspect", str(onnx_family))
    assert listed.returncode == 0, listed.stderr
    assert "3 ONNX file(s), one model in several precisions" in listed.stdout
    assert "q4" in listed.stdout and "onnx/model_q4.onnx" in listed.stdout
    data = json.loads(cli("inspect", str(onnx_family), "--json").stdout)
    assert data["model"]["format"] == "hf" and [m["variant"] for m in data["family"]] == ["fp32", "fp16", "q4"]
    member = json.loads(cli("inspect", str(onnx_family / "onnx" / "model_q4.onnx"), "--json").stdout)
    assert member["folder"] == str(onnx_family) and len(member["family"]) == 3  # read with its folder
    info = cli("--lang", "en", "info", str(onnx_family / "onnx" / "model_fp16.onnx"))
    assert info.returncode == 0 and "model_fp16" in info.stdout


def test_a_folder_kept_in_the_library_keeps_its_family_where_its_copy_is(tmp_path: Path, onnx_family: Path) -> None:
    from core.model.library import ModelLibrary

    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    record = describe(onnx_family)
    key = library.keep(record)
    assert key is not None
    kept = library.open(record.id, key)
    assert kept is not None and Path(kept.record.folder).is_dir()
    assert Path(kept.record.folder).is_relative_to(tmp_path / "models")
    assert all(Path(m.path).is_file() and Path(m.path).is_relative_to(kept.record.folder) for m in kept.record.family)
    alone = describe(onnx_family, variant="q4")  # one file of the folder, kept without its siblings
    opened = library.open(alone.id, library.keep(alone) or "")
    assert opened is not None and not opened.record.family and not opened.record.folder
    # kept with the folder's PyTorch model (the folder whole), as Generate and Compare keep it: a link or a reload
    # finds the folder's tokenizer and the other ONNX files there
    with_original = library.open(alone.id, library.keep(alone, exported_from=record) or "")
    assert with_original is not None and with_original.exported_from is not None
    assert with_original.record.folder == with_original.exported_from.folder
    assert (Path(with_original.record.folder) / "tokenizer.json").is_file()
    assert [Path(m.path).is_file() for m in with_original.record.family] == [True] * 3
    assert with_original.record.path == with_original.record.family[2].path  # which of them it is (Compare's A)


def test_an_onnx_file_under_onnx_is_recognised_with_the_config_above_it(tmp_path: Path, hf_gpt2: Path) -> None:
    """A cache whose heads and head size the file leaves open (symbolic dims) is told by the folder's config.json,
    which lies above onnx/, not beside the file."""
    import onnx

    from tests.lm_models import hand_decoder

    folder = copied(hf_gpt2, tmp_path)
    (folder / "onnx").mkdir()
    model = hand_decoder(["batch", "heads", "past", "size"], ["batch", "heads", "total", "size"])
    onnx.save_model(model, str(folder / "onnx" / "model.onnx"))
    layout = describe(folder, variant="fp32").generative
    assert layout is not None and (layout.kv_heads, layout.head_size) == (4, 16)
