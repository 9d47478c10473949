"""What the commands share: opening a model by path or sample name, exporting a PyTorch one first, parsing
comma-separated options, and printing JSON."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.files import model_paths, unpack_folder
from core.cli.language import add_language_argument, choose_language, environment_language
from core.errors import TargetError, WorkbenchError
from core.i18n import _, number, pgettext
from core.jobs import EXPORT, INTAKE, SAMPLE, Backend, run
from core.jobs.wire import to_data
from core.model.intake_request import IntakeRequest
from core.model.records import ModelRecord, format_shape
from core.model.shapes import parse_dims
from core.notes import Note, read_note, say
from core.settings import load_settings

if TYPE_CHECKING:
    from core.jobs.cluster.client import Cluster

__all__ = [
    "add_language_argument",
    "choose_language",
    "environment_language",
    "add_code_arguments",
    "add_runtime_arguments",
    "add_target_argument",
    "as_onnx",
    "cluster_at",
    "code_choice",
    "copy_made",
    "print_made",
    "describe",
    "english_data",
    "environment_json",
    "in_own_folder",
    "intake_request",
    "nodes_text",
    "padded",
    "width",
    "target_backend",
    "ints",
    "parse_input",
    "print_json",
    "print_record",
    "provider_names",
    "runtime_choice",
    "split",
]


def width(text: str) -> int:
    """How many columns ``text`` takes in a terminal: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def padded(text: str, columns: int, right: bool = False) -> str:
    """``text`` padded with spaces to ``columns`` terminal columns (on the left when ``right``)."""
    space = " " * max(columns - width(text), 0)
    return space + text if right else text + space


def add_code_arguments(parser: Any) -> None:
    """--class and --args: how to build a model given as its own code and weights (model.py,weights.pt)."""
    parser.add_argument(
        "--class",
        dest="code_class",
        default="",
        metavar="NAME",
        help="with a model's own code (model.py,weights.pt or package.zip,weights.safetensors): the nn.Module class "
        "to build (default: the one the weights fit)",
    )
    parser.add_argument(
        "--args", dest="code_args", default="", metavar="JSON", help="its constructor's arguments, a JSON object"
    )


def code_choice(args: Any) -> tuple[str, str]:
    """The class and arguments --class and --args give (empty for a command without them)."""
    return getattr(args, "code_class", ""), getattr(args, "code_args", "")


def describe(model: str, code: tuple[str, str] = ("", "")) -> ModelRecord:
    """The record of ``model``: a file path, several paths joined by ',' (model + data files, or a model's code
    and its weights, built as ``code`` (class, JSON arguments) says), a Hugging Face folder (or one of its ONNX
    files, FOLDER/onnx/model_q4.onnx: read with its folder, whose family it lists) or sample:NAME. Relative paths
    are the caller's, not the worker's."""
    if model.startswith("sample:"):
        from core.model import cards, zoo  # the samples' table and their package versions: only for a sample

        name = model.removeprefix("sample:")
        zoo.get_sample(name)  # a clear error for an unknown name before a worker starts
        card = cards.known(name)
        return card if card is not None else run(SAMPLE, zoo.SampleRequest(name=name))
    return run(INTAKE, intake_request(model, code))


def intake_request(model: str, code: tuple[str, str] = ("", ""), unpack_dir: str = "") -> IntakeRequest:
    """What ``describe`` asks a worker to recognise for ``model``, a path or paths (not sample:NAME): for a job
    that recognises the files and goes on with them in the same worker (the inspect command's). A .zip of a model
    folder is unpacked into ``unpack_dir`` (core.cli.files.unpack_folder; a fresh one when none is given)."""
    from core.model.hf_folder import relative_member

    paths = model_paths(model)
    missing = [str(p) for p in paths if not (p.is_file() or p.is_dir())]
    if missing:
        raise WorkbenchError(
            _("No such file: {paths} (give a path to a model file, a Hugging Face folder, or sample:NAME).").format(
                paths=", ".join(missing)
            )
        )
    variant = ""
    member = relative_member(paths[0]) if len(paths) == 1 and paths[0].suffix == ".onnx" else None
    if member is not None:  # an ONNX file of a Hugging Face folder: read with the folder, beside its family
        folder, variant = member
        paths = [folder]
    return IntakeRequest(
        paths=[str(p) for p in paths],
        unpack_dir=unpack_dir or unpack_folder(),
        code_class=code[0],
        code_args=code[1],
        variant=variant,
    )


def as_onnx(
    model: str, work_dir: Path, code: tuple[str, str] = ("", ""), shapes: dict[str, list[int]] | None = None
) -> tuple[ModelRecord, ModelRecord | None]:
    """The ONNX model behind ``model`` and the PyTorch model it came from (if any).

    A PyTorch model (sample:NAME, a state_dict, TorchScript, .pt2, its own code) is first exported with its default
    settings into ``work_dir``, as the Export page would with no changes; the export is verified like any other.
    An input whose shape the model does not say (TorchScript, a model's code) is exported at its ``shapes`` entry.
    """
    import dataclasses

    from core.export import ExportRequest, default_options
    from core.export.verify import unproven_warning
    from core.model.torchload import source_of

    record = describe(model, code)
    if not record.is_pytorch:
        return record, None
    given = shapes or {}
    specs = [
        dataclasses.replace(s, shape=list[int | str](given[s.name])) if s.shape is None and s.name in given else s
        for s in record.inputs
    ]
    print(_("exporting {name} to ONNX with the default settings…").format(name=record.name), file=sys.stderr)
    request = ExportRequest(
        source=source_of(record),
        options=default_options(dataclasses.replace(record, inputs=specs)),
        out_dir=str(work_dir),
        file_name=f"{record.name}.onnx",
    )
    report = run(EXPORT, request)
    if report.record is None or not report.usable:
        failed = [say(c.detail) for c in report.checks if not c.ok and c.detail is not None]
        failed += [say(t.error) for t in report.trials if t.error is not None]
        raise WorkbenchError(
            _("Exporting {name} to ONNX failed: {why}").format(
                name=record.name, why=pgettext("clauses", "; ").join(failed) or _("see the Export page")
            )
        )
    unproven = unproven_warning(report.trials)
    if unproven is not None:  # nothing failed, but a comparison tested nothing: said, and the model still measured
        print(_("warning: {message}").format(message=say(unproven)), file=sys.stderr)
    return report.record, record


def split(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def ints(text: str | None, what: str) -> list[int] | None:
    try:
        return [int(v) for v in split(text)] or None
    except ValueError:
        raise WorkbenchError(
            _("{option} takes whole numbers separated by commas, e.g. 1,2,4; got {text}").format(
                option=what, text=repr(text)
            )
        ) from None


def parse_input(text: str) -> tuple[str, list[int]]:
    """--input NAME=1,3,112,112"""
    name, sep, dims = text.partition("=")
    if not sep or not name:
        raise WorkbenchError(_("--input {text}: expected NAME=1,3,112,112").format(text=repr(text)))
    return name, parse_dims(dims, f"the shape of --input {name}")


def provider_names(text: str | None) -> list[str] | None:
    """'cuda,cpu' or full names -> ORT provider names, in the order given."""
    from core.runtime.ort import PROVIDERS

    if not text:
        return None
    by_short = {known.short.lower(): name for name, known in PROVIDERS.items()}
    names = []
    for part in split(text):
        lowered = part.lower()
        names.append(by_short.get(lowered) or by_short.get(lowered.removesuffix("executionprovider")) or part)
    return names


def tokenizer_file(given: str) -> str:
    """``--tokenizer``'s tokenizer.json: the file, or the one in the folder given (exit 2 with the way out when there
    is none)."""
    from core.model.cache_config import TOKENIZER_FILE

    path = Path(given).expanduser().resolve()
    path = path / TOKENIZER_FILE if path.is_dir() else path
    if not path.is_file():
        raise WorkbenchError(
            _("--tokenizer {path}: no tokenizer.json there; give the file, or a folder that holds one.").format(
                path=repr(given)
            )
        )
    return str(path)


def add_runtime_arguments(parser: Any, *, providers: str, runtime: str, strict: str) -> None:
    """--providers, --runtime and --strict, as every command that runs a model on a runtime takes them (each
    command says in its help what they mean to it); read back with ``runtime_choice``."""
    parser.add_argument("--providers", help=providers)
    parser.add_argument("--runtime", default="default", help=runtime)
    parser.add_argument("--strict", action="store_true", help=strict)


def runtime_choice(args: argparse.Namespace) -> tuple[list[str], list[str] | None, bool]:
    """(the runtimes --runtime names, at least the default; the providers --providers names, None for the runtime's
    own; --strict)."""
    return split(args.runtime) or ["default"], provider_names(args.providers), bool(args.strict)


def nodes_text(counts: dict[str, int]) -> str:
    """A result's share of the nodes per provider: "OpenVINO 8, CPU 1 of 9"."""
    from core.runtime.ort import short_name

    total = sum(counts.values())
    shares = pgettext("list", ", ").join(f"{short_name(p)} {number(n)}" for p, n in counts.items())
    return _("{shares} of {total}").format(shares=shares, total=number(total))


def english_data(data: Any) -> Any:
    """JSON data (``to_data``'s) with each note in it as its English sentence, as a pipeline reads a record's
    sentences (docs/cli.md); a note is a mapping whose fields are a note's and nothing else (core.notes)."""
    if isinstance(data, dict):
        if data.keys() == _NOTE_FIELDS:
            return read_note(data).english()
        return {k: english_data(v) for k, v in data.items()}
    if isinstance(data, list):
        return [english_data(v) for v in data]
    return data


_NOTE_FIELDS = set(Note.__dataclass_fields__)


def print_json(value: Any) -> None:
    """``value`` as JSON, its notes as English sentences."""
    print(json.dumps(english_data(to_data(value)), indent=2))


def print_record(record: ModelRecord) -> None:
    print(f"{record.name}  ({_(record.format_label)})")
    print(f"  id         {record.id}")
    print("  " + _("size       {bytes} bytes").format(bytes=number(record.size_bytes)))
    if record.parameter_count is not None:
        print("  " + _("parameters {count}").format(count=number(record.parameter_count)))
    if record.opset is not None:
        print(
            "  "
            + _("opset      {opset}   ir_version {ir}   producer {producer}").format(
                opset=record.opset, ir=record.ir_version, producer=record.producer or "-"
            )
        )
    if record.node_count is not None:
        print("  " + _("nodes      {count}").format(count=number(record.node_count)))
    for label, specs in ((_("input "), record.inputs), (_("output"), record.outputs)):
        for spec in specs:
            dynamic = pgettext("list", ", ").join(
                _("{name} on axis {axis}").format(name=v, axis=k) for k, v in spec.dynamic_axes.items()
            )
            extra = "   " + _("dynamic: {axes}").format(axes=dynamic) if dynamic else ""
            print(f"  {label}     {spec.name}: {spec.dtype} {format_shape(spec.shape)}{extra}")
    for note in record.notes:
        print("  " + _("note       {note}").format(note=say(note)))


def add_target_argument(parser: Any) -> None:
    parser.add_argument(
        "--target",
        default=None,
        metavar="NAME",
        help="run on this target of the Ray cluster (see `python -m core targets`; needs cluster_address, "
        "WORKBENCH_CLUSTER_ADDRESS); default: this machine",
    )


def cluster_at(address: str) -> Cluster:
    """The cluster at ``address``, joined; a warning on stderr when it is used without token authentication."""
    from core.jobs.cluster.client import connect

    cluster = connect(address)
    if cluster.insecure:
        print(
            _(
                "warning: the Ray cluster at {address} is used without token authentication (cluster_insecure): "
                "anyone who reaches it can run code on its nodes."
            ).format(address=address),
            file=sys.stderr,
        )
    return cluster


def target_backend(target: str | None) -> Backend | None:
    """The backend of cluster target ``target`` (None: run here). Asking for a target that cannot be reached is
    an error here, not a fallback: the command was asked to run there."""
    from core.jobs.cluster.client import LOCAL

    if not target or target == LOCAL:
        return None
    address = load_settings().cluster_address
    if not address:
        raise TargetError(
            _(
                "--target {target} needs a Ray cluster: set cluster_address (WORKBENCH_CLUSTER_ADDRESS) to its "
                "head's host:port."
            ).format(target=target)
        )
    return cluster_at(address).backend(target)


def environment_json(environment: dict[str, Any] | None, target: str | None) -> dict[str, Any]:
    """The environment block of a command's JSON, naming the target the job ran on."""
    from core.jobs.cluster.client import LOCAL

    block = dict(environment or {})
    block["target"] = block.get("target") or target or LOCAL
    return block


def in_own_folder(record: ModelRecord, work_dir: Path, backend: Backend | None) -> ModelRecord:
    """``record`` as a job sent to a cluster target should read it: its files (the model and its data files)
    linked into a folder of their own, since a target receives the whole folder a model lies in (a model in a
    folder of many others would send them all). Unchanged when the job runs here, or for a built-in sample."""
    if backend is None or not record.path:
        return record
    if record.code is not None:
        raise TargetError(
            _(
                "“{name}” is built from your own code, which runs only on this machine; measure it here, or export "
                "it to ONNX first and send the .onnx to the target (with --no-eager)."
            ).format(name=record.name)
        )
    import dataclasses
    import os

    folder = Path(tempfile.mkdtemp(prefix="model-", dir=work_dir))
    moved = {}
    for name in dict.fromkeys([record.path, *record.files]):
        copy = folder / Path(name).name
        try:
            os.link(name, copy)
        except OSError:  # another file system
            shutil.copyfile(name, copy)
        moved[name] = str(copy)
    return dataclasses.replace(record, path=moved[record.path], files=[moved[f] for f in record.files])


def copy_made(variants: Sequence[Any], outputs: dict[str, Path], copy: Callable[[Path, Path], None]) -> list[Any]:
    """Of a quantization's ``variants`` (the original left out), those made, each copied to its output by ``copy``;
    when none was, an error that says why each failed."""
    made = [v for v in variants if not v.error]
    if not made:
        raise WorkbenchError("; ".join(f"{v.label}: {v.error}" for v in variants))
    for variant in made:
        copy(Path(variant.path), outputs[variant.key])
    return made


def print_made(variants: Sequence[Any], outputs: Mapping[str, Path]) -> Iterator[Any]:
    """A quantization's ``variants`` (the original first) as the human output says them: of each other one, why it
    was not made, or where it was written and its size against the original's; yields those made, whose own lines
    follow."""
    original = variants[0]
    for variant in variants[1:]:
        if variant.error:
            print(_("{variant}: not made: {error}").format(variant=variant.label, error=variant.error))
            continue
        print(f"{outputs[variant.key]}  ({variant.label})")
        print("  " + _("size      {bytes} bytes, {smaller}× smaller").format(
            bytes=number(variant.size_bytes), smaller=f"{original.size_bytes / max(variant.size_bytes, 1):.2f}"
        ))  # fmt: skip
        yield variant
