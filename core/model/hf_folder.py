"""A Hugging Face folder as people have it: ``config.json``, weights (safetensors; pickled ``pytorch_model.bin`` read
with ``weights_only`` after its opcodes are checked), a tokenizer, and ONNX files (``onnx/model.onnx``,
``model_fp16.onnx``, ``model_q4.onnx``, ... or ``model.onnx`` beside the config, as onnxruntime-genai's builder writes
it) listed as one family. Read in the worker, from the folder alone: nothing is fetched, no file is followed through
a link, and none of the folder's own code (``trust_remote_code``) runs; where code is refused (hosted mode) a folder
that holds any is refused.

``describe_folder`` gives the folder's record: its PyTorch model (format ``hf``, the causal language model
transformers builds from the config and the weights) with its ONNX files as ``family``; or, for a folder of ONNX files
only, the record of its main file (``variant`` chooses another) with the same family beside it.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from core.errors import IntakeError, LimitExceededError, UnsafeModelError, brief
from core.i18n import N_, _, number, pgettext
from core.model.archives import MAX_ZIP_ENTRIES
from core.model.formats import detect_format, sha256_files
from core.model.generative import GenerativeLayout
from core.model.records import FamilyMember, ModelRecord, TensorSpec
from core.notes import Note, note, warning
from core.settings import IntakeLimits

__all__ = [
    "CONFIG_FILE",
    "VARIANTS",
    "checked_weights",
    "describe_folder",
    "family_of",
    "is_causal_lm",
    "pick_member",
    "read_config",
    "relative_member",
]

CONFIG_FILE = "config.json"
ONNX_FOLDER = "onnx"
# transformers.js's dtype names, as the files' suffixes say them (model_q4.onnx), in the order a table lists them
VARIANTS = ("fp32", "fp16", "bf16", "q4f16", "q4", "int4", "uint4", "bnb4", "q8", "int8", "uint8", "quantized")
# the component a generator runs, when a folder holds several graphs (encoder, decoder...)
MAIN_COMPONENTS = ("model", "decoder_model_merged", "decoder_model", "decoder_with_past_model")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "merges.txt")
MAX_CONFIG_BYTES = 1 << 20  # a config.json is a few kB
_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")

# what the card says of a folder (core.notes; said in the reader's language where shown)
FAMILY = N_("{count} ONNX file(s) of this model in the folder: {variants}.")
TOKENIZER = N_("Its tokenizer is in the folder ({files}): prompts can be given as text.")
NO_TOKENIZER = N_("No tokenizer in the folder: prompts are given as token ids.")
CODE_NEVER_RUN = N_(
    "The folder holds Python code ({files}); it is never run here: transformers builds the model from its own "
    "classes for '{model_type}'."
)
NEEDS_OWN_CODE = N_(
    "Its config.json asks for the folder's own code (auto_map: {classes}), which is never run here: its PyTorch "
    "model cannot be built, and its ONNX files still run."
)
PICKLED_WEIGHTS = N_(
    "Its weights are pickled ({files}); they are read with torch.load(weights_only=True), which builds tensors and "
    "nothing else, after their opcodes were checked."
)
ONNX_OF_FOLDER = N_("The ONNX file {file} of the folder '{folder}' (it holds no PyTorch weights).")
NOT_CAUSAL = N_(
    "Its config.json names {architecture}, which is not a causal language model: it cannot be exported with a "
    "cache or generated from here, and its ONNX files still run."
)


def _regular(path: Path) -> bool:
    """A regular file, not a link (the Hugging Face cache's snapshots are links; their targets are never followed)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _listing(folder: Path) -> list[Path]:
    """The files of the folder and of its onnx/ subfolder (a Hugging Face folder is flat), after refusing links,
    and too many entries."""
    entries: list[Path] = []
    for where in (folder, folder / ONNX_FOLDER):
        if where != folder and (where.is_symlink() or not where.is_dir()):
            continue
        with os.scandir(where) as found:
            for entry in found:
                entries.append(Path(entry.path))
                if len(entries) > MAX_ZIP_ENTRIES:
                    raise LimitExceededError(
                        _("The folder '{folder}' holds more than {count} files; a model's folder holds a few.").format(
                            folder=brief(folder.name), count=number(MAX_ZIP_ENTRIES)
                        )
                    )
    links = [p for p in entries if p.is_symlink()]
    if links:
        raise UnsafeModelError(
            _(
                "'{file}' in the folder '{folder}' is a link (as the Hugging Face cache keeps its files); links are "
                "not followed. Give a folder of the files themselves: hf download REPO --local-dir FOLDER, or "
                "cp -rL the snapshot."
            ).format(file=brief(links[0].relative_to(folder).as_posix()), folder=brief(folder.name))
        )
    return sorted(p for p in entries if _regular(p))


def read_config(folder: Path) -> dict[str, Any]:
    """The folder's config.json ({} when there is none, or it is no JSON object)."""
    path = folder / CONFIG_FILE
    if not _regular(path) or path.stat().st_size > MAX_CONFIG_BYTES:
        return {}
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        raise IntakeError(
            _("The config.json of '{folder}' is not valid JSON: save the model again with save_pretrained.").format(
                folder=brief(folder.name)
            )
        ) from None
    return data if isinstance(data, dict) else {}


def _architecture(config: dict[str, Any]) -> str:
    names = config.get("architectures")
    first = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else ""
    model_type = config.get("model_type")
    return first or (model_type if isinstance(model_type, str) else "")


def is_causal_lm(config: dict[str, Any]) -> bool:
    """Whether the config names a causal language model (GPT2LMHeadModel, Qwen2ForCausalLM...)."""
    return _architecture(config).endswith(_CAUSAL_SUFFIXES)


def _member_names(stem: str) -> tuple[str, str]:
    """(component, variant) of an ONNX file's stem: model_q4 -> (model, q4); model -> (model, fp32)."""
    base, sep, suffix = stem.rpartition("_")
    if sep and base and suffix in VARIANTS:
        return base, suffix
    return stem, "fp32"


def _data_files(main: Path, files: list[Path]) -> list[Path]:
    """An ONNX file's external data beside it: model.onnx_data (and _data_1...), or model.onnx.data."""
    names = (main.name + "_data", main.name + ".data")
    return [p for p in files if p.parent == main.parent and p.name.startswith(names)]


def _member_order(member: FamilyMember) -> tuple[int, int, str]:
    main = MAIN_COMPONENTS.index(member.component) if member.component in MAIN_COMPONENTS else len(MAIN_COMPONENTS)
    variant = VARIANTS.index(member.variant) if member.variant in VARIANTS else len(VARIANTS)
    return main, variant, member.key


def family_of(folder: Path, files: list[Path] | None = None) -> list[FamilyMember]:
    """The folder's ONNX files (under onnx/, or beside config.json), told by their bytes, each with its data files,
    the main component's first."""
    files = _listing(folder) if files is None else files
    members = []
    for path in files:
        if path.suffix != ".onnx" or detect_format(path) != "onnx":
            continue
        component, variant = _member_names(path.stem)
        data = _data_files(path, files)
        members.append(
            FamilyMember(
                key=path.stem,
                component=component,
                variant=variant,
                file=path.relative_to(folder).as_posix(),
                path=str(path),
                size_bytes=path.stat().st_size + sum(p.stat().st_size for p in data),
                data_files=[p.name for p in data],
            )
        )
    return sorted(members, key=_member_order)


def pick_member(family: list[FamilyMember], wanted: str, folder: str = "") -> FamilyMember:
    """The member ``wanted`` names: its variant (q4: the main component's), its key (decoder_model_merged_q4), or its
    file (onnx/model_q4.onnx, model_q4.onnx); refused by name with the ones there are."""
    text = wanted.strip().removeprefix("./")
    for match in (
        lambda m: m.file == text or m.file.rsplit("/", 1)[-1] == text,
        lambda m: m.key == text,
        lambda m: m.variant == text,
    ):
        found = [m for m in family if match(m)]
        if found:
            return found[0]  # the family is in order: the main component's first
    there = pgettext("list", ", ").join(f"{m.variant} ({m.file})" for m in family) or _("none")
    raise IntakeError(
        _("The folder '{folder}' has no ONNX file '{wanted}'; its ONNX files are: {there}.").format(
            folder=brief(Path(folder).name), wanted=brief(wanted, 80), there=there
        )
    )


def _refuse_code(folder: Path, code: list[Path], limits: IntakeLimits) -> None:
    if code and not limits.allow_code_archives:
        listed = pgettext("list", ", ").join(brief(p.name, 60) for p in code[:5])
        raise UnsafeModelError(
            _(
                "The folder '{folder}' holds Python code ({files}), which transformers runs when trust_remote_code "
                "is on. This instance does not accept code (its operator can set WORKBENCH_ALLOW_CODE_ARCHIVES=true); "
                "upload the folder without its .py files (a model type transformers knows needs none)."
            ).format(folder=brief(folder.name), files=listed)
        )


def _weights(folder: Path, files: list[Path], limits: IntakeLimits) -> tuple[list[Path], list[Path]]:
    """The folder's safetensors and pickled weights (told by their bytes), the pickles' opcodes checked, their
    sizes within the limit."""
    from core.model.pickles import pickle_globals, refuse_pickle

    tops = [p for p in files if p.parent == folder]
    safetensors = [p for p in tops if p.suffix == ".safetensors" and detect_format(p) == "safetensors"]
    pickled = [] if safetensors else [p for p in tops if p.suffix == ".bin" and p.name.startswith("pytorch_model")]
    for path in pickled:
        fmt = detect_format(path)
        if fmt not in ("state_dict-zip", "legacy-torch"):
            raise UnsafeModelError(
                _("'{file}' is not PyTorch weights saved with torch.save ({format}), so it was not opened.").format(
                    file=brief(path.name), format=fmt
                )
            )
        refuse_pickle(pickle_globals(_pickle_bytes(path, fmt, limits)), path.name)
    total = sum(p.stat().st_size for p in safetensors + pickled)
    if total > limits.max_initializer_bytes:
        raise LimitExceededError(
            _("The weights of '{folder}' take {size} MB, more than this instance accepts ({most} MB).").format(
                folder=brief(folder.name),
                size=number(total / 2**20, 0),
                most=number(limits.max_initializer_bytes / 2**20, 0),
            )
        )
    return safetensors, pickled


def checked_weights(folder: Path, limits: IntakeLimits) -> tuple[list[Path], list[Path]]:
    """The folder's safetensors and pickled weights, checked as intake checks them (again, where they are loaded)."""
    return _weights(folder, _listing(folder), limits)


def _pickle_bytes(path: Path, fmt: str, limits: IntakeLimits) -> bytes:
    """The pickle of a torch.save file: data.pkl inside its zip (checked as any archive), or the file's start."""
    import zipfile

    from core.model.archives import check_zip

    if fmt == "legacy-torch":
        with path.open("rb") as fh:
            return fh.read(64 << 20)
    check_zip(path, limits)
    with zipfile.ZipFile(path) as zf:
        inner = next((n for n in zf.namelist() if n.endswith("data.pkl")), "")
        return zf.read(inner)[: 64 << 20] if inner else b""


def _safetensors_parameters(paths: list[Path]) -> int | None:
    """The parameters the safetensors headers list (the header alone is read, capped)."""
    total = 0
    for path in paths:
        with path.open("rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if size > 16 << 20:
                return None
            try:
                header = json.loads(fh.read(size))
            except ValueError:
                return None
        for name, entry in header.items() if isinstance(header, dict) else []:
            shape = entry.get("shape") if isinstance(entry, dict) and name != "__metadata__" else None
            if isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape):
                total += math.prod(shape)
    return total


def _variants_said(family: list[FamilyMember]) -> str:
    return pgettext("list", ", ").join(m.variant if m.component == family[0].component else m.key for m in family)


def _lm_signature(folder: Path) -> tuple[list[TensorSpec], list[TensorSpec], GenerativeLayout | None]:
    """A causal language model's inputs and outputs as its export with a cache takes and gives them
    (core.model.causal_lm): the ids, the mask of past + new, the positions, and each layer's past and present; and
    its cache, recognised from them as an export's is (so that every plan starts from a prefill, the past empty)."""
    import onnx

    from core.model.causal_lm import cache_sizes, signature
    from core.model.recognise import recognise

    inputs, outputs = signature(cache_sizes(folder))
    graphless = onnx.ModelProto()  # no graph to read attention nodes from: the names, shapes and config say it all
    return inputs, outputs, recognise(graphless, inputs, outputs, folder).layout


def _code_notes(folder: Path, config: dict[str, Any], code: list[Path]) -> list[Note]:
    notes: list[Note] = []
    auto_map = config.get("auto_map")
    if isinstance(auto_map, dict) and auto_map:
        classes = pgettext("list", ", ").join(brief(str(v), 80) for v in list(auto_map.values())[:3])
        notes.append(warning(NEEDS_OWN_CODE, classes=classes))
    elif code:
        files = pgettext("list", ", ").join(brief(p.name, 60) for p in code[:5])
        notes.append(note(CODE_NEVER_RUN, files=files, model_type=brief(str(config.get("model_type", "?")), 60)))
    return notes


def _tokenizer_note(files: list[Path], folder: Path) -> Note:
    found = [p.name for p in files if p.parent == folder and p.name in TOKENIZER_FILES]
    return note(TOKENIZER, files=", ".join(found)) if found else note(NO_TOKENIZER)


def describe_folder(folder: Path, name: str, limits: IntakeLimits, variant: str = "") -> ModelRecord:
    """The record of a Hugging Face folder (``variant``: one of its ONNX files instead, pick_member's names)."""
    if not folder.is_dir():
        raise IntakeError(_("'{folder}' is not a folder.").format(folder=brief(folder.name)))
    files = _listing(folder)
    code = [p for p in files if p.suffix == ".py"]
    _refuse_code(folder, code, limits)
    config = read_config(folder)
    family = family_of(folder, files)
    safetensors, pickled = _weights(folder, files, limits) if config else ([], [])
    notes: list[Note | str] = [*_code_notes(folder, config, code), _tokenizer_note(files, folder)]
    if pickled:
        notes.append(note(PICKLED_WEIGHTS, files=", ".join(p.name for p in pickled[:3])))
    if safetensors + pickled and not is_causal_lm(config):
        notes.append(warning(NOT_CAUSAL, architecture=brief(_architecture(config) or "?", 80)))
    if family:
        notes.append(note(FAMILY, count=len(family), variants=_variants_said(family)))
    weights = safetensors + pickled
    if variant or not weights or not is_causal_lm(config) or config.get("auto_map"):
        if not family:
            raise IntakeError(_nothing_to_run(folder, config, weights))
        return _describe_member(folder, family, variant, name, limits, notes)
    inputs, outputs, layout = _lm_signature(folder)
    main = folder / CONFIG_FILE
    return ModelRecord(
        id=sha256_files(main, weights),
        name=name or folder.name.removesuffix("_unzipped"),
        format="hf",
        size_bytes=sum(p.stat().st_size for p in weights),
        path=str(folder),
        files=[str(p) for p in files],
        inputs=inputs,
        outputs=outputs,
        parameter_count=_safetensors_parameters(safetensors) if safetensors else None,
        architecture=_architecture(config),
        notes=notes,
        folder=str(folder),
        family=family,
        generative=layout,
    )


def _nothing_to_run(folder: Path, config: dict[str, Any], weights: list[Path]) -> str:
    if weights and config and not is_causal_lm(config):
        return _(
            "The folder '{folder}' holds the weights of {architecture}, which is not a causal language model, and "
            "no ONNX file: export it to ONNX first (optimum-cli export onnx), or give its ONNX file."
        ).format(folder=brief(folder.name), architecture=brief(_architecture(config) or "?", 80))
    if weights and config.get("auto_map"):
        return _(
            "The folder '{folder}' needs its own code to build its model (auto_map in config.json), which is never "
            "run here, and holds no ONNX file. Export it to ONNX where you trust its code, and give the ONNX file."
        ).format(folder=brief(folder.name))
    return _(
        "The folder '{folder}' holds neither a config.json with weights (model.safetensors) nor an ONNX file "
        "(onnx/model.onnx): it is no Hugging Face model folder. Save one with save_pretrained, or give a model file."
    ).format(folder=brief(folder.name))


def _describe_member(
    folder: Path,
    family: list[FamilyMember],
    variant: str,
    name: str,
    limits: IntakeLimits,
    notes: list[Note | str],
) -> ModelRecord:
    """The record of one ONNX file of the folder (the main one unless ``variant`` names another), its family beside
    it."""
    from core.model.onnx_file import describe_onnx

    member = pick_member(family, variant, str(folder)) if variant else family[0]
    main = Path(member.path)
    shown = name or f"{folder.name.removesuffix('_unzipped')}/{member.key}"
    record = describe_onnx(main, main.parent, shown, limits)
    record.notes[:0] = [note(ONNX_OF_FOLDER, file=member.file, folder=brief(folder.name, 80)), *notes]
    record.folder, record.family = str(folder), family
    if record.generative is None and main.parent != folder:  # under onnx/: the config.json above it says the sizes
        record.generative = _recognised_with(main, record, folder)
    return record


def _recognised_with(main: Path, record: ModelRecord, folder: Path) -> GenerativeLayout | None:
    """The cache of an ONNX file under onnx/, told with the folder's config.json (its head count and head size,
    where the file's shapes leave them open)."""
    import onnx

    from core.model.recognise import recognise

    if not any("past" in s.name for s in record.inputs):
        return None
    model = onnx.load_model(str(main), load_external_data=False)
    return recognise(model, record.inputs, record.outputs, folder).layout


def relative_member(path: Path) -> tuple[Path, str] | None:
    """(the folder, the file's path in it) when ``path`` is an ONNX file under a Hugging Face folder's onnx/
    (FOLDER/onnx/model_q4.onnx, a config.json in FOLDER); None otherwise (a file given alone is read alone)."""
    folder = path.parent.parent
    if path.parent.name != ONNX_FOLDER or not _regular(folder / CONFIG_FILE):
        return None
    return folder, f"{ONNX_FOLDER}/{path.name}"


def folder_tokenizer(record: ModelRecord) -> str:
    """The tokenizer.json a worker is given for a language model: "" when it lies beside the model (the worker finds
    it there) or nowhere; the one at the top of the model's Hugging Face folder (its ONNX files under onnx/)."""
    from core.model.cache_config import TOKENIZER_FILE

    if record.generative is None or record.generative.tokenizer or not record.folder:
        return ""
    found = Path(record.folder) / TOKENIZER_FILE
    return str(found) if found.is_file() and not found.is_symlink() else ""
