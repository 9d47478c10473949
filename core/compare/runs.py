"""Running one side of a comparison in groups of tensors, so that memory stays bounded whatever the model's size.

Each ONNX side is optimized once by ONNX Runtime at the level it is compared at, and ORT saves the optimized graph
(``optimized_model_filepath``, its weights in one external file beside it). Only the tensors that graph still
computes can be compared: a tensor a fusion took away is computed by neither run, and marking it an output would
stop ORT from making the very fusion being compared. So the tensors are asked of the *optimized* graph, run again
with optimization off (it is already optimized: the same kernels, the same numbers), a group at a time, each group
its own extra outputs; the caller measures each array against the other side's and drops it before the next group.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import CompareError
from core.i18n import _

if TYPE_CHECKING:
    import onnx

    from core.compare.eager import EagerSide

__all__ = ["Prepared", "bound_heap", "feeds_for", "learn_sizes", "prepare", "release_freed", "run_group"]

_DATA = "weights.data"
_CAST = "InsertedPrecisionFreeCast_"
_M_MMAP_THRESHOLD, _MAPPED_FROM = -3, 1 << 18  # glibc's mallopt: blocks of 256 KiB and more are mapped


@dataclass(kw_only=True)
class Prepared:
    """One side's optimized graph (weights left in their file), and what it computes."""

    folder: Path
    model: onnx.ModelProto  # the optimized graph, its weights external
    provider: str
    producers: dict[str, tuple[str, str, str]]  # tensor -> (node name, op type, domain) in the optimized graph
    outputs: list[str]  # the model's outputs, in order
    input_types: dict[str, str]  # input -> numpy dtype
    aliases: dict[str, str]  # a tensor -> the name ORT gave it (where it computes a float16 node in float32)
    sizes: dict[str, int]  # tensor -> its bytes, where the optimized graph gives its whole shape


def release_freed() -> None:
    """Hand the heap's freed memory back to the system (glibc keeps it otherwise): a session or a model read and
    dropped left about its weights' size held, under the next side's session (100 MB of ResNet-50's 98 MB)."""
    import contextlib
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError, TypeError):  # not glibc: its allocator does without
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)


def bound_heap() -> None:
    """Every large block (a group's tensors, a session's buffers) mapped on its own and handed back when freed: glibc
    otherwise raises its threshold for that as blocks come and go and keeps them in its heap, and the ResNet-50-sized
    pair's peak varied by 30 MB from run to run. Set once for the worker's process (one job each)."""
    import contextlib
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError, TypeError):  # not glibc
        ctypes.CDLL(ctypes.util.find_library("c")).mallopt(_M_MMAP_THRESHOLD, _MAPPED_FROM)


def prepare(path: str, level: str, provider: str, folder: Path) -> Prepared:
    """Optimize ``path`` at ``level`` on ``provider`` once and read back what ORT made of it."""
    import onnx
    import onnxruntime as ort

    from core.runtime.ort import LEVELS, NUMPY_TYPES, explain_session_error, session_options
    from core.runtime.refusals import standard_opset

    folder.mkdir(parents=True, exist_ok=True)
    options = session_options(level)
    options.log_severity_level = 3  # not the warning that an ALL-level file fits only this kind of machine: it is
    options.optimized_model_filepath = str(folder / "optimized.onnx")  # read back here, on this machine
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", _DATA)
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    if provider not in ort.get_available_providers():
        raise CompareError(
            _(
                "The provider {provider} is not in this build of ONNX Runtime; the available ones are {available}."
            ).format(provider=provider, available=", ".join(ort.get_available_providers()))
        )
    try:
        session = ort.InferenceSession(path, options, providers=[provider])
    except Exception as exc:
        raise explain_session_error(exc, _("open the model"), path) from None
    input_types = {i.name: NUMPY_TYPES.get(i.type, "float32") for i in session.get_inputs()}
    del session
    release_freed()
    model = onnx.load_model(str(folder / "optimized.onnx"), load_external_data=False)
    foreign = _attributes_beyond_opset(model)
    if foreign:  # ORT's own optimizer wrote them; a new session refuses them, and every group would fail
        raise CompareError(
            _(
                "ONNX Runtime's graph of this model at {level} cannot be run again to read its tensors: its optimizer "
                "gave {ops} an attribute that the model's opset {opset} does not have, and a new session refuses it. "
                "Compare this model at a lower level (a quantized model's QDQ nodes are rewritten this way at the "
                "higher levels)."
            ).format(level=LEVELS[level].name, ops=", ".join(foreign), opset=standard_opset(model))
        )
    producers = {}
    for position, node in enumerate(model.graph.node):
        for tensor in node.output:
            if tensor:
                producers[tensor] = (node.name or f"{node.op_type}_{position}", node.op_type, node.domain)
    outputs = [o.name for o in model.graph.output]
    # a provider without a float16 kernel for a node computes it in float32 between Casts ORT inserts, and the
    # node's output is renamed: the tensor is still the node's, in float32
    aliases = {}
    for tensor in list(producers):
        base = tensor.removeprefix(_CAST)
        if base != tensor and base not in producers:
            producers[base], aliases[base] = producers[tensor], tensor
    return Prepared(
        folder=folder, model=model, provider=provider, producers=producers, outputs=outputs,
        input_types=input_types, aliases=aliases, sizes={},
    )  # fmt: skip


def _attributes_beyond_opset(model: onnx.ModelProto) -> list[str]:
    """The standard ops of ``model``'s main graph that carry an attribute their schema at the model's opset lacks
    ("DequantizeLinear (axis)" at opset 11), as ORT's optimizer may write them."""
    import onnx

    from core.runtime.refusals import standard_opset

    opset, found = standard_opset(model) or 0, set()
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        try:
            known = onnx.defs.get_schema(node.op_type, opset, "").attributes
        except onnx.defs.SchemaError:
            continue
        extra = sorted(a.name for a in node.attribute if a.name not in known)
        if extra:
            found.add(f"{node.op_type} ({', '.join(extra)})")
    return sorted(found)


def learn_sizes(side: Prepared | EagerSide, feeds: dict[str, Any]) -> None:
    """The bytes of each tensor whose whole shape onnx's shape inference finds, at the shapes of ``feeds`` (what
    groups are sized by; the others are sized by the average of those measured)."""
    import onnx
    from onnx.helper import tensor_dtype_to_np_dtype

    model = onnx.ModelProto()
    model.CopyFrom(side.model)
    for given in model.graph.input:
        if given.name in feeds:
            shape = given.type.tensor_type.shape
            del shape.dim[:]
            for size in feeds[given.name].shape:
                shape.dim.add().dim_value = int(size)
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # a graph onnx cannot follow: sized by what is measured
        return
    sizes = {}
    for info in model.graph.value_info:
        tensor = info.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        if not tensor.HasField("shape") or min(dims, default=0) < 0:
            continue
        try:
            itemsize = tensor_dtype_to_np_dtype(tensor.elem_type).itemsize
        except (KeyError, TypeError):
            continue
        count = 1
        for dim in dims:
            count *= dim
        sizes[info.name] = count * itemsize
    sizes.update({base: sizes[alias] for base, alias in side.aliases.items() if alias in sizes})
    side.sizes.update(sizes)


def feeds_for(side: Prepared, arrays: dict[str, Any]) -> dict[str, Any]:
    """The plan's arrays as this side's inputs take them (a float16 variant's inputs get float16)."""
    import numpy as np

    missing = sorted(set(side.input_types) - set(arrays))
    if missing:
        raise CompareError(
            _("The two models do not take the same inputs: {missing} is not in the input plan ({plan}).").format(
                missing=", ".join(missing), plan=", ".join(arrays)
            )
        )
    return {name: np.asarray(arrays[name]).astype(dtype, copy=False) for name, dtype in side.input_types.items()}


def run_group(side: Prepared, names: list[str], feeds: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The values of ``names`` (tensors the optimized graph computes) on ``feeds``: one run of the optimized graph
    with those tensors as its only outputs (ORT then computes only what they need)."""
    import onnx
    import onnxruntime as ort

    from core.runtime.ort import explain_session_error, session_options

    model = onnx.ModelProto()
    model.CopyFrom(side.model)
    del model.graph.output[:]
    for name in names:
        model.graph.output.append(onnx.ValueInfoProto(name=side.aliases.get(name, name)))
    path = side.folder / "group.onnx"
    onnx.save_model(model, str(path))  # beside the weights' file, which it names
    try:
        session = ort.InferenceSession(str(path), session_options("disable"), providers=[side.provider])
        values = session.run([side.aliases.get(name, name) for name in names], feeds)
    except Exception as exc:
        raise explain_session_error(exc, _("run the model")) from None
    del session
    release_freed()
    while values:  # handed out one at a time, the caller drops each once measured
        yield names[len(names) - len(values)], values.pop(0)
