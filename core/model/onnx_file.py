"""An ONNX file opened safely: external data checked before any of it is read, limits, the model's record."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from core.errors import IntakeError, LimitExceededError, MissingDataError, UnsafeModelError, brief
from core.i18n import N_, _, number
from core.model.archives import unpack_bundle
from core.model.counts import ModelCounts, check_counts
from core.model.formats import detect_format, sha256_files
from core.model.graph_uses import graph_uses
from core.model.metadata import read_metadata
from core.model.notes import (
    CONSTANT_WEIGHTS,
    DEFAULT_INPUTS,
    DOMAIN_UNUSED,
    DOMAINS_IN_USE,
    DOMAINS_UNUSED,
    FUNCTIONS,
    SUBGRAPHS,
    Note,
    note,
)
from core.model.proto import (
    NOT_WEIGHT_TYPES,
    domain_use,
    expanded_node_count,
    external_entries,
    index_tables,
    itemsize,
    iter_tensors,
    non_utf8_text,
    parameter_count,
    tensor_elements,
    tensor_nbytes,
    value_specs,
)
from core.model.recognise import recognise
from core.model.records import ModelRecord
from core.settings import IntakeLimits

if TYPE_CHECKING:
    import onnx

__all__ = [
    "check_external_data",
    "check_model_size",
    "check_tensor_data",
    "describe_bundle",
    "describe_onnx",
    "read_external_data",
    "read_tensor_data",
]


_EXTERNAL = 1  # TensorProto.EXTERNAL
_TYPED_FIELDS = {  # TensorProto data type -> (field holding the values when raw_data is empty, values per element)
    1: ("float_data", 1), 14: ("float_data", 2), 2: ("int32_data", 1), 3: ("int32_data", 1), 4: ("int32_data", 1),
    5: ("int32_data", 1), 6: ("int32_data", 1), 9: ("int32_data", 1), 10: ("int32_data", 1), 16: ("int32_data", 1),
    7: ("int64_data", 1), 11: ("double_data", 1), 15: ("double_data", 2), 12: ("uint64_data", 1),
    13: ("uint64_data", 1),
}  # fmt: skip


_WHERE = {  # core.model.proto.iter_tensors's words for where a tensor is, as a message names it
    "initializer": N_("initializer"),
    "sparse initializer": N_("sparse initializer"),
    "sparse initializer's indices": N_("sparse initializer's indices"),
    "constant": N_("constant"),
    "attribute": N_("attribute"),
    "constant's indices": N_("constant's indices"),
    "attribute's indices": N_("attribute's indices"),
}


def check_tensor_data(label: str, tensor: onnx.TensorProto, elements: int | None = None) -> None:
    """Refuse a tensor whose dims promise other than the data it holds (inline data only); ``elements`` is
    tensor_elements(tensor) when the caller has it already."""
    if tensor.data_location == _EXTERNAL or tensor.data_type not in _TYPED_FIELDS:
        return
    promised = tensor_elements(tensor) if elements is None else elements
    raw = len(tensor.raw_data)
    if raw:
        held, expected, unit = raw, promised * itemsize(tensor.data_type), _("bytes")
    else:
        field_name, per_element = _TYPED_FIELDS[tensor.data_type]
        held, expected, unit = len(getattr(tensor, field_name)), promised * per_element, _("values")
    if held != expected:
        dims = "×".join(str(int(d)) for d in tensor.dims) or _("a scalar")
        raise IntakeError(
            _(
                "The {label} '{tensor}' has dims {dims} ({promised} elements, {expected} {unit}) but "
                "holds {held} {unit} of data. The file is damaged, or made to promise more than it "
                "holds; it was not loaded."
            ).format(
                label=_(label),
                tensor=brief(tensor.name),
                dims=brief(dims),
                promised=number(promised),
                expected=number(expected),
                unit=unit,
                held=number(held),
            )
        )


def read_external_data(model: onnx.ModelProto, folder: Path) -> onnx.ModelProto:
    """``model`` with its external data read in from ``folder``, each location checked first (``check_external_data``).
    onnx's own loader is not used: it refuses a data file that has a second hard link, and the app links an upload
    into its workspace (and a kept model into the library) rather than copy it."""
    import onnx

    check_external_data(model, folder)
    for _where, tensor in iter_tensors(model):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            _read_in(tensor, folder)
    return model


def read_tensor_data(tensor: onnx.TensorProto, folder: Path) -> onnx.TensorProto:
    """A copy of one ``tensor`` with its external data read in from ``folder`` (as ``read_external_data`` reads a
    model's: onnx's own loader refuses a data file with a second hard link, as the app's are), its location first
    checked to name a regular file in ``folder``, reached without links."""
    import onnx

    copy = onnx.TensorProto()
    copy.CopyFrom(tensor)
    if copy.data_location == onnx.TensorProto.EXTERNAL:
        holder = onnx.ModelProto()
        holder.graph.initializer.append(copy)  # the checks of a whole model's locations, for this one
        check_external_data(holder, folder)
        _read_in(copy, folder)
    return copy


def _read_in(tensor: onnx.TensorProto, folder: Path) -> None:
    import onnx

    entries = external_entries(tensor)
    with (folder / entries["location"]).open("rb") as data:
        data.seek(int(entries.get("offset", 0)))
        tensor.raw_data = data.read(int(entries["length"]) if "length" in entries else -1)
    tensor.data_location = onnx.TensorProto.DEFAULT
    del tensor.external_data[:]


def check_external_data(model: onnx.ModelProto, folder: Path) -> list[Path]:
    """Every external-data location must name a regular file inside ``folder``, reached without links,
    with offset and length inside that file. Returns the data files; raises before any of them is opened."""
    import onnx

    folder_real = folder.resolve()
    files: dict[str, Path] = {}
    for where, tensor in iter_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = external_entries(tensor)
        location = entries.get("location", "")
        label = _("{kind} '{name}'").format(kind=_(_WHERE.get(where, where)), name=brief(tensor.name))
        if not location:
            raise UnsafeModelError(
                _("The {label} says its data is in an external file but names none.").format(label=label)
            )
        if len(location) > 1024 or any(ord(c) < 32 for c in location) or any(len(p) > 255 for p in location.split("/")):
            raise UnsafeModelError(
                _(
                    "The {label} keeps its data in '{location}', which is no file name a model folder "
                    "can hold (control characters, or {count} characters). The file was not opened."
                ).format(label=label, location=brief(location), count=number(len(location)))
            )
        posix = location.replace("\\", "/")
        parts = PurePosixPath(posix).parts
        if posix.startswith("/") or (len(posix) > 1 and posix[1] == ":"):
            raise UnsafeModelError(
                _(
                    "The {label} keeps its data at the absolute path '{location}'. External data must "
                    "sit in the model's own folder; save the model with a relative location "
                    "(onnx.save(..., location='x.data'))."
                ).format(label=label, location=brief(location))
            )
        if ".." in parts:
            raise UnsafeModelError(
                _(
                    "The {label} keeps its data at '{location}', outside the model's folder. External "
                    "data must sit in the model's own folder, so this file was not opened."
                ).format(label=label, location=brief(location))
            )
        current = folder
        for part in parts:
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                raise MissingDataError(
                    _(
                        "The model keeps the data of {label} in '{location}' (at least {size}), which was not "
                        "uploaded. Select the .onnx and its data file(s) together, or upload a .zip of the model's "
                        "folder."
                    ).format(label=label, location=brief(location), size=_size(_needed(model, location)))
                ) from None
            if stat.S_ISLNK(mode):
                raise UnsafeModelError(
                    _(
                        "The data file '{location}' of {label} is a link. Links could point anywhere on this "
                        "machine, so they are not followed; copy the real file next to the model."
                    ).format(location=brief(location), label=label)
                )
        if not stat.S_ISREG(os.lstat(current).st_mode) or not current.resolve().is_relative_to(folder_real):
            raise UnsafeModelError(
                _("The data location '{location}' of {label} is not a regular file in the folder.").format(
                    location=brief(location), label=label
                )
            )
        _check_bounds(tensor, entries, label, location, current.stat().st_size)
        files[posix] = current
    return list(files.values())


def _size(nbytes: int) -> str:
    """Bytes as the upload box counts them (powers of 1024: its "1.0GB" is 1,024 MB)."""
    if nbytes >= 1 << 30:
        return f"{number(nbytes / (1 << 30), 2)} GB"
    return f"{number(nbytes / (1 << 20), 1)} MB" if nbytes >= 1 << 20 else f"{number(nbytes)} B"


def _needed(model: onnx.ModelProto, location: str) -> int:
    """The least a data file at ``location`` holds: the last byte any tensor wants of it."""
    import onnx

    end = 0
    for _where, tensor in iter_tensors(model):
        entries = external_entries(tensor) if tensor.data_location == onnx.TensorProto.EXTERNAL else {}
        if entries.get("location") == location:
            try:
                length = int(entries["length"]) if entries.get("length") else tensor_nbytes(tensor)
                end = max(end, int(entries.get("offset") or 0) + length)
            except ValueError:
                continue
    return end


def _check_bounds(tensor: onnx.TensorProto, entries: dict[str, str], label: str, location: str, size: int) -> None:
    """Refuse an external tensor whose offset and length are not numbers, negative, or past its file's end."""
    try:
        offset = int(entries.get("offset", "0") or 0)
        length = int(entries["length"]) if entries.get("length") else tensor_nbytes(tensor)
    except ValueError:
        raise UnsafeModelError(
            _("The {label} has an offset or length that is not a number.").format(label=label)
        ) from None
    if offset < 0 or length < 0:
        raise UnsafeModelError(
            _("The {label} has a negative offset ({offset}) or length ({length}).").format(
                label=label, offset=offset, length=length
            )
        )
    if offset + length > size:
        raise UnsafeModelError(
            _(
                "The {label} wants bytes {offset}–{end} of '{location}', but that file has only {size} bytes. The "
                "data file does not belong to this model or is truncated."
            ).format(label=label, offset=offset, end=offset + length, location=brief(location), size=size)
        )


def check_model_size(name: str, model: onnx.ModelProto, limits: IntakeLimits) -> ModelCounts:
    """Every count against its limit (core.model.counts), nodes as ONNX Runtime would inline local functions,
    and text that is not UTF-8."""
    counts = check_counts(model, name, limits)
    if model.functions:
        expanded = expanded_node_count(model)
        if expanded < 0:
            raise UnsafeModelError(
                _("'{name}' has a local function that calls itself: it never ends.").format(name=brief(name))
            )
        if expanded > limits.max_nodes:
            raise LimitExceededError(
                _(
                    "'{name}' has {nodes} nodes as written, but its local functions call each other so "
                    "that ONNX Runtime would inline them into {expanded} nodes; this instance accepts at "
                    "most {max_nodes} (setting WORKBENCH_MAX_NODES)."
                ).format(
                    name=brief(name),
                    nodes=number(counts.nodes),
                    expanded=number(expanded),
                    max_nodes=number(limits.max_nodes),
                )
            )
    bad = non_utf8_text(model)
    if bad:
        where = bad[0]
        if len(bad) > 1:
            where = _("{first} and {count} more").format(first=bad[0], count=number(len(bad) - 1))
        raise IntakeError(
            _(
                "'{name}' holds text that is not UTF-8 ({where}); ONNX requires UTF-8 names. "
                "Re-export the model, or fix its names with onnx's Python API."
            ).format(name=brief(name), where=where)
        )
    return counts


MAX_DOMAINS_CHARS = 240  # a model declares as many domains as it likes: a note names those that fit and counts the rest
MAX_DOMAIN_CHARS = 48


def _domains_said(domains: list[str]) -> str:
    """``domains`` as a note keeps them: those that fit in a few lines, each cut short, and how many more (a model's
    choice of names is never kept whole: a 480 KB list of domains is a line, not a page)."""
    said: list[str] = []
    for domain in domains:
        name = brief(domain, MAX_DOMAIN_CHARS)
        if said and sum(len(d) + 2 for d in said) + len(name) > MAX_DOMAINS_CHARS:
            break
        said.append(name)
    more = len(domains) - len(said)
    return ", ".join(said) + (f" (+{more:,})" if more else "")


def _domain_notes(model: onnx.ModelProto) -> list[Note]:
    """The operator domains beyond the standard ones, those nodes use apart from those only declared (exporters
    declare domains they end up not using: nothing custom runs for those)."""
    in_use, unused = domain_use(model)
    notes = []
    if in_use:
        notes.append(note(DOMAINS_IN_USE, domains=_domains_said(in_use)))
    if unused:
        notes.append(note(DOMAINS_UNUSED if len(unused) > 1 else DOMAIN_UNUSED, domains=_domains_said(unused)))
    return notes


def _card_notes(model: onnx.ModelProto, counts: ModelCounts, constant_weights: int) -> list[Note]:
    """What the card says of the graph: subgraphs, local functions, weights kept in Constant nodes, domains."""
    notes: list[Note] = []
    if counts.subgraphs:
        notes.append(note(SUBGRAPHS, subgraphs=counts.subgraphs, nodes=counts.nodes))
    if model.functions:
        notes.append(note(FUNCTIONS, count=len(model.functions)))
    if constant_weights:
        notes.append(note(CONSTANT_WEIGHTS, count=constant_weights))
    return notes + _domain_notes(model)


def _default_notes(model: onnx.ModelProto, initializer_names: set[str]) -> list[Note]:
    """Inputs that hold a default (an initializer of the same name, from IR 4 on: an IR 3 model lists every weight
    as an input): each is left at its default, never fed."""
    if model.ir_version < 4:
        return []
    defaults = [i.name for i in model.graph.input if i.name in initializer_names]
    if not defaults:
        return []
    return [note(DEFAULT_INPUTS, count=len(defaults), names=_domains_said(defaults))]


def _parsed(main: Path) -> onnx.ModelProto:
    """The ModelProto in ``main``, without its external data; a file that is none, or holds no graph, refused."""
    import onnx

    try:
        model = onnx.load_model(str(main), load_external_data=False)
    except Exception as exc:
        if "MaxDepth" in str(exc) or "recursion" in str(exc).lower():
            raise IntakeError(
                _(
                    "'{main}' holds subgraphs nested too deeply (If/Loop/Scan inside each other, about "
                    "30 levels or more) for the protobuf parser to read. No real model nests this deep; "
                    "the file may be crafted."
                ).format(main=main.name)
            ) from None
        raise IntakeError(
            _(
                "'{main}' looks like ONNX but could not be parsed ({kind}). The file may be "
                "truncated or damaged: upload it again, or re-export it."
            ).format(main=main.name, kind=type(exc).__name__)
        ) from None
    if not model.HasField("graph"):
        raise IntakeError(
            _("'{main}' is an ONNX ModelProto with no graph in it: there is no model to run.").format(main=main.name)
        )
    return model


def describe_onnx(main: Path, folder: Path, name: str, limits: IntakeLimits) -> ModelRecord:
    model = _parsed(main)
    counts = check_model_size(main.name, model, limits)
    data_files = check_external_data(model, folder)
    weight_bytes = constant_weights = 0
    labels = {"constant": N_("Constant value"), "attribute": N_("node attribute's tensor")}
    for where, tensor in iter_tensors(model):
        count = tensor_elements(tensor)
        check_tensor_data(labels.get(where, N_("weight")), tensor, count)
        weight_bytes += count * itemsize(tensor.data_type)
        # as Decode counts weights (core.decode.records.TensorInfo.is_weight): no scalar, no shape or index tensor
        constant_weights += where == "constant" and count > 1 and tensor.data_type not in NOT_WEIGHT_TYPES
    if weight_bytes > limits.max_initializer_bytes:
        raise LimitExceededError(
            _(
                "The model's weights take {weight_bytes} MB; this instance accepts at most "
                "{max_initializer_bytes} MB (setting WORKBENCH_MAX_INITIALIZER_MB)."
            ).format(
                weight_bytes=number(weight_bytes / 2**20, 0),
                max_initializer_bytes=number(limits.max_initializer_bytes / 2**20, 0),
            )
        )

    initializer_names = {t.name for t in model.graph.initializer}
    opsets = {op.domain or "ai.onnx": op.version for op in model.opset_import}
    notes: list[Note | str] = [*_card_notes(model, counts, constant_weights)]
    size = main.stat().st_size + sum(p.stat().st_size for p in data_files)
    inputs = value_specs(model.graph.input, skip=initializer_names)
    tables = index_tables(model.graph)
    found = graph_uses(model)  # what the graph does with each input: a waveform, a trip count, a branch's choice
    for spec in inputs:
        spec.vocabulary = tables.get(spec.name) or found.one_hot.get(spec.name)
        spec.use, spec.loop_axis = found.uses.get(spec.name, ""), found.loop_axes.get(spec.name)
    notes += _default_notes(model, initializer_names)
    outputs = value_specs(model.graph.output)
    recognition = recognise(model, inputs, outputs, folder)  # a language model's cache, or why it was not told
    notes += [recognition.note] if recognition.note is not None else []
    return ModelRecord(
        id=sha256_files(main, data_files),
        name=name or main.stem,
        format="onnx",
        size_bytes=size,
        path=str(main),
        files=[str(main)] + [str(p) for p in data_files],
        inputs=inputs,
        outputs=outputs,
        parameter_count=parameter_count(model),
        opset=opsets.get("ai.onnx"),
        ir_version=int(model.ir_version),
        producer=" ".join(filter(None, [model.producer_name, model.producer_version])),
        node_count=len(model.graph.node),
        runtime_nodes=_runtime_nodes(model, counts),
        external_data=[p.name for p in data_files],
        notes=notes,
        metadata=read_metadata(model),
        suppresses_boxes=found.suppression,
        generative=recognition.layout,
    )


def _runtime_nodes(model: onnx.ModelProto, counts: ModelCounts) -> int:
    """Nodes as ONNX Runtime runs the model: every graph's, every local function inlined at each call."""
    return max(counts.nodes, expanded_node_count(model) if model.functions else 0)


def describe_bundle(path: Path, name: str, limits: IntakeLimits, into: Path | None = None) -> ModelRecord:
    folder = unpack_bundle(path, limits, into)
    candidates = [p for p in sorted(folder.rglob("*")) if p.is_file() and detect_format(p) == "onnx"]
    if not candidates:
        raise IntakeError(_("'{file}' holds no readable ONNX model.").format(file=path.name))
    if len(candidates) > 1:
        listed = ", ".join(str(p.relative_to(folder)) for p in candidates[:5])
        raise IntakeError(
            _("'{file}' holds several ONNX models ({listed}); upload one model per archive.").format(
                file=path.name, listed=listed
            )
        )
    main = candidates[0]
    return describe_onnx(main, main.parent, name or main.stem, limits)
