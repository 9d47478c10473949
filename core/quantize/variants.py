"""The variants, made with ONNX Runtime's own tools: quantize_dynamic, quantize_static, convert_float_to_float16."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import QuantizeError
from core.i18n import N_, _
from core.model.proto import (
    FLOAT_TYPES,
    constants_to_initializers,
    iter_tensors,
    tensor_elements,
    tensor_nbytes,
    walk_graphs,
)
from core.notes import Note, note
from core.quantize.accuracy import accuracy, outputs
from core.quantize.calibration import CalibrationReader
from core.quantize.judge import Tolerance
from core.quantize.records import INTEGER_OPS, NO_FLOAT32, VARIANTS, variant_label

if TYPE_CHECKING:
    import onnx

    from core.model.inputs import BenchInput


__all__ = [
    "file_size",
    "is_large",
    "make_variant",
    "range_inputs",
    "refuse_unquantizable",
    "stage_source",
    "unstage_source",
    "weight_bytes",
]

# the nodes FP16 keeps in float32, and why (notes of the variant: said where shown)
KEPT_AS_ASKED = N_("{op} '{name}' (as asked)")
KEPT_OUT_OF_RANGE = N_("{op} '{name}' (its values leave float16's range)")
KEPT_SENSITIVE = N_("{op} ×{count} (numerically sensitive: float16 lost the accuracy)")
CONSTANTS_MOVED = N_(
    "{count} weight tensor(s) were held in Constant nodes; they were turned into initializers first, because ONNX "
    "Runtime's quantizers only quantize initializers. The outputs are the same."
)  # a note of the report (said where shown)


def stage_source(source: Path, out: Path, notes: list[Note | str]) -> Path:
    """The model seen from a folder of ``out`` through links (with its external-data files): ORT's quantizers
    write scratch files beside the model they read, and the model's own folder is read-only in the sandbox.
    Weights held in Constant nodes (Paddle and TF exports) become initializers there first: ORT's quantizers
    only quantize initializers."""
    import onnx

    staged = out / "source"
    staged.mkdir(parents=True, exist_ok=True)
    model = onnx.load_model(str(source), load_external_data=False)
    locations = {e.value for _, t in iter_tensors(model) for e in t.external_data if e.key == "location"}
    for name in [source.name, *sorted(locations)]:
        link = staged / name
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            if name == source.name:
                link.symlink_to((source.parent / name).resolve())
            else:  # onnx's loader refuses a data file behind a link, or with a second hard link (an upload has one)
                shutil.copyfile(source.parent / name, link)
    moved = constants_to_initializers(model)
    if moved:
        (staged / source.name).unlink()
        onnx.save_model(model, str(staged / source.name))
        notes.append(note(CONSTANTS_MOVED, count=moved))
    return staged / source.name


def unstage_source(out: Path) -> None:
    """Remove what ``stage_source`` made, once every variant is made and measured: links are never read back from
    a job's folder (core.jobs.outputs), and the model they lead to is the job's input anyway."""
    staged = out / "source"
    for link in [p for p in staged.rglob("*") if p.is_symlink() or (p.is_file() and p.suffix != ".onnx")]:
        link.unlink()  # a link, or a copy of the external data: the job's input, never an output
    if staged.is_dir() and not any(p.is_file() for p in staged.rglob("*")):
        shutil.rmtree(staged)


def refuse_unquantizable(model: onnx.ModelProto) -> None:
    quantized = sorted({n.op_type for n in model.graph.node if n.op_type in INTEGER_OPS})
    if quantized:
        raise QuantizeError(
            _("The model is already quantized: it has {ops} nodes. Quantize the float model instead.").format(
                ops=", ".join(quantized)
            )
        )
    float_weights = [t for _, t in iter_tensors(model) if t.data_type in FLOAT_TYPES and tensor_elements(t) > 1]
    if not float_weights:
        raise QuantizeError(_("The model has no float weights, so there is nothing to quantize or convert."))


def range_inputs(specs: list[BenchInput], seed: int) -> list[dict[str, Any]]:
    """The inputs FP16's range is checked on when Tune makes a variant, and when Deploy makes the one Tune chose
    again: two, at seeds of their own (the held-out inputs that judge it start at ``seed + 1``)."""
    from core.model.inputs import make_inputs

    return [make_inputs(specs, 1, seed + 10_000 + k) for k in range(2)]


def is_large(source: Path) -> bool:
    """Whether a variant of ``source`` must keep its weights in external data (refusing a model no quantizer
    takes)."""
    import onnx

    model = onnx.load_model(str(source), load_external_data=False)
    refuse_unquantizable(model)
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    return external or source.stat().st_size > 1 << 30


def file_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*") if f.is_file())


def weight_bytes(path: Path) -> int:
    import onnx

    return sum(tensor_nbytes(t) for _, t in iter_tensors(onnx.load_model(str(path), load_external_data=False)))


def make_variant(
    key: str,
    source: Path,
    pre: Path | None,
    out: Path,
    calibration: list[dict[str, Any]],
    large: bool,
    kept_float32: list[Note | str] | None = None,
    keep: list[str] | None = None,
) -> Path:
    """Write variant ``key`` of ``source`` into ``out`` (static variants start from the pre-processed ``pre``).
    FP16 lists the nodes it kept in float32 in ``kept_float32``. The nodes ``keep`` names stay as they are: not
    quantized, or in float32 (what Compare advises)."""
    keep = keep or []
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_dynamic, quantize_static

    _label, mode, options = VARIANTS[key]
    target = out / f"{source.stem}.{key}.onnx"
    if mode == "dynamic":
        weight = QuantType.QInt8 if options["weight_type"] == "qint8" else QuantType.QUInt8
        quantize_dynamic(
            str(source), str(target), weight_type=weight, use_external_data_format=large, nodes_to_exclude=keep
        )
    elif mode == "static":
        assert pre is not None
        method = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
                  "percentile": CalibrationMethod.Percentile}[options["method"]]  # fmt: skip
        fmt = QuantFormat.QDQ if options["format"] == "qdq" else QuantFormat.QOperator
        quantize_static(
            str(pre), str(target), CalibrationReader(calibration), quant_format=fmt, calibrate_method=method,
            activation_type=QuantType.QUInt8 if fmt == QuantFormat.QOperator else QuantType.QInt8,
            weight_type=QuantType.QInt8, use_external_data_format=large, nodes_to_exclude=keep,
        )  # fmt: skip
    else:
        kept = _to_float16(source, target, options["keep_io_types"], calibration[:2], large, keep)
        if kept_float32 is not None:
            kept_float32.extend(kept)
    changed = _changed_ops(source, target)
    if mode != "fp16" and not changed:
        raise QuantizeError(
            _("{variant}: no node was quantized. {why}").format(
                variant=variant_label(key), why=_why_nothing_quantized(source)
            )
        )
    return target


_QUANTIZABLE = {"Conv", "MatMul", "Gemm", "Attention", "ConvTranspose", "LSTM", "GRU"}


def _why_nothing_quantized(source: Path) -> str:
    """Where the ops ORT could quantize are, when none of the main graph's were."""
    import onnx

    model = onnx.load_model(str(source), load_external_data=False)
    inner = Counter(
        n.op_type for v in walk_graphs(model) if v.path != "main" for n in v.graph.node if n.op_type in _QUANTIZABLE
    )
    if inner:
        ops = ", ".join(f"{op} ×{n}" for op, n in inner.most_common())
        return _(
            "The ops it could quantize ({ops}) are inside If/Loop/Scan bodies, which ONNX Runtime's quantizers "
            "leave as they are; FP16 converts them."
        ).format(ops=ops)
    return _(
        "ONNX Runtime quantizes Conv, MatMul, Gemm, Attention and a few others; this model has none it could take."
    )


FP16_MAX = 65504.0


# ops whose float16 arithmetic can lose a model's accuracy (normalizations, reductions, exponentials): kept in
# float32 when the plain conversion's outputs are out of tolerance on the calibration inputs
SENSITIVE_OPS = [
    "BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization", "Softmax",
    "LogSoftmax", "ReduceMean", "ReduceSum", "ReduceSumSquare", "Pow", "Sqrt", "Exp", "Log", "Erf",
]  # fmt: skip


def _to_float16(
    source: Path, target: Path, keep_io_types: bool, feeds: list[dict[str, Any]], large: bool, keep: list[str]
) -> list[Note | str]:
    """ORT's float16 converter with its block list of ops that have no float16 kernel; every node whose float32
    values on the calibration inputs leave float16's range (and the nodes that read them) kept in float32; and
    when the outputs are then still out of tolerance on those inputs, the numerically sensitive ops too.
    Returns what was kept in float32, and why."""
    import onnx
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST

    model = onnx.load_model(str(source))
    if not any(t.data_type == 1 for t in model.graph.initializer) and not any(
        n.op_type == "Constant" for n in model.graph.node
    ):
        raise QuantizeError(_(NO_FLOAT32))
    for index, node in enumerate(model.graph.node):
        node.name = node.name or f"{node.op_type}_{index}"  # the converter blocks nodes by name
    checked = bool(feeds) and not large
    blocked = _out_of_range(model, feeds) if checked else []
    blocked += [name for name in keep if name not in blocked]
    original = model.SerializeToString()
    converted = _convert(onnx.load_from_string(original), keep_io_types, DEFAULT_OP_BLOCK_LIST, blocked)
    sensitive = Counter(n.op_type for n in model.graph.node if n.op_type in SENSITIVE_OPS)
    retried = checked and bool(sensitive) and not _agrees(original, converted, feeds[:1])
    if retried:
        converted = _convert(
            onnx.load_from_string(original), keep_io_types, DEFAULT_OP_BLOCK_LIST + SENSITIVE_OPS, blocked
        )
    onnx.save_model(converted, str(target), save_as_external_data=large, location=f"{target.name}.data")
    ops = {n.name: n.op_type for n in model.graph.node}
    kept: list[Note | str] = [
        note(KEPT_AS_ASKED if name in keep else KEPT_OUT_OF_RANGE, op=ops.get(name, "?"), name=name) for name in blocked
    ]
    if retried:
        kept += [note(KEPT_SENSITIVE, op=op, count=n) for op, n in sensitive.items()]
    return kept


def _convert(model: onnx.ModelProto, keep_io_types: bool, op_block_list: list[str], node_block_list: list[str]) -> Any:
    from onnxruntime.transformers.float16 import convert_float_to_float16
    from onnxruntime.transformers.onnx_model import OnnxModel

    converted = OnnxModel(
        convert_float_to_float16(
            model, keep_io_types=keep_io_types, op_block_list=op_block_list, node_block_list=node_block_list
        )
    )
    _drop_round_trips(converted.model, set(node_block_list))
    converted.topological_sort()  # the converter appends its input Casts at the end; the checker wants order
    return converted.model


def _agrees(original: bytes, converted: Any, feeds: list[dict[str, Any]]) -> bool:
    """Whether the converted model's outputs stay close to the original's on ``feeds``: the tolerance's cosine
    and mean error, measured as the comparison table measures them."""
    import onnxruntime as ort

    reference = ort.InferenceSession(original, providers=["CPUExecutionProvider"])
    half = ort.InferenceSession(converted.SerializeToString(), providers=["CPUExecutionProvider"])
    measured = accuracy([outputs(reference, f) for f in feeds], [outputs(half, f) for f in feeds])
    tolerance = Tolerance()
    return (
        measured.cosine_similarity >= tolerance.min_cosine and measured.relative_error <= tolerance.max_relative_error
    )


def _drop_round_trips(model: onnx.ModelProto, blocked: set[str]) -> None:
    """The converter casts every output of a node kept in float32 to float16, and back for a reader that is
    kept too: that round trip overflows just as the node would have. Readers take the float32 value instead."""
    import onnx

    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}

    def cast_to(node: onnx.NodeProto) -> int | None:
        return next((a.i for a in node.attribute if a.name == "to"), None) if node.op_type == "Cast" else None

    inner = _names_used_in_subgraphs(model)  # a Cast whose value an If or Loop body reads stays
    dropped, orphans = set(), set()
    for node in graph.node:
        first = producer.get(node.input[0]) if node.input else None
        if cast_to(node) != onnx.TensorProto.FLOAT or first is None or cast_to(first) != onnx.TensorProto.FLOAT16:
            continue
        source = producer.get(first.input[0])
        if source is None or source.name not in blocked or node.output[0] in {o.name for o in graph.output} | inner:
            continue
        for reader in graph.node:
            reader.input[:] = [first.input[0] if i == node.output[0] else i for i in reader.input]
        dropped.add(node.name)
        orphans.add(first.name)
    kept = [n for n in graph.node if n.name not in dropped]
    used = {i for n in kept for i in n.input} | {o.name for o in graph.output} | inner
    kept = [n for n in kept if n.name not in orphans or n.output[0] in used]
    del graph.node[:]
    graph.node.extend(kept)


def _names_used_in_subgraphs(model: onnx.ModelProto) -> set[str]:
    """Every tensor name the nodes of If, Loop and Scan bodies read, at any depth (outer-scope values too)."""
    return {i for visit in walk_graphs(model) if visit.path != "main" for n in visit.graph.node for i in n.input}


def _out_of_range(model: onnx.ModelProto, feeds: list[dict[str, Any]]) -> list[str]:
    """Names of the main-graph nodes whose float outputs pass float16's range on ``feeds``, and of the nodes
    that read those outputs (a Cast to float16 in front of them would overflow)."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    listed = {o.name for o in probe.graph.output}
    names = [o for n in probe.graph.node for o in n.output if o and o not in listed]
    probe.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    wanted = [o.name for o in session.get_outputs()]
    large: set[str] = set()
    for feed in feeds:
        for name, value in zip(wanted, session.run(wanted, feed), strict=True):
            array = np.asarray(value)
            if array.dtype.kind == "f" and array.size and float(np.nanmax(np.abs(array))) > FP16_MAX:
                large.add(name)
    producers = [n.name for n in model.graph.node if large & set(n.output)]
    readers = [n.name for n in model.graph.node if large & set(n.input)]
    return list(dict.fromkeys(producers + readers))


def _changed_ops(before: Path, after: Path) -> dict[str, int]:
    import onnx

    old = Counter(n.op_type for n in onnx.load_model(str(before), load_external_data=False).graph.node)
    new = Counter(n.op_type for n in onnx.load_model(str(after), load_external_data=False).graph.node)
    return {op: n for op, n in new.items() if op in INTEGER_OPS and n > old.get(op, 0)}
