"""Compare two models tensor by tensor, on one input plan, in bounded memory.

How (and why it stays bounded and honest):

1. Each side is optimized once by ONNX Runtime at the level it is compared at, and the optimized graph is saved
   (core.compare.runs). Only tensors that the optimized graphs of *both* sides still compute are compared, matched
   by name (the float16 converter and the quantizers keep the names of the tensors they convert; the exporter's
   node scopes name the PyTorch module of each node). A tensor a fusion took away is not recomputed unfused to
   get at it: that would compare another model than the one asked. The report says which tensors could not be
   compared, and why.
2. The shared tensors are taken in the reference's graph order, in groups; each group is one run of an
   optimized graph with that group as its outputs. The reference runs first, alone, and each of its tensors is
   written to disk as it comes (core.compare.spool); then the second model runs the same groups and each of its
   tensors is measured against the reference's read back, and both are dropped. So one model's session and one
   group of one side are held at a time (``group_mb``; the next group is sized from the bytes the last one took),
   never both models' tensors. Time grows with the tensors' total bytes over ``group_mb`` runs; memory does not.
3. Each node of the reference is within the tolerance when all its compared outputs are. The first divergence is
   the earliest node out of tolerance that no error reaches through its inputs (core.compare.divergence).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.compare.divergence import first_divergence, int4_blocks, introducing, model_kind, node_errors, taint
from core.compare.eager import INSIDE_MODULE, EagerSide, eager_feeds, prepare_eager
from core.compare.lm_step import Stepped, at_step, divergence_layer, layer_errors, past_divergence
from core.compare.measures import Graph, graph_of, measure
from core.compare.records import (
    TOLERANCE_RULE,
    CompareReport,
    CompareRequest,
    CompareSide,
    TensorError,
    Uncompared,
)
from core.compare.runs import Prepared, bound_heap, feeds_for, learn_sizes, prepare, release_freed, run_group
from core.compare.spool import Spool
from core.errors import CompareError
from core.i18n import N_, _
from core.model.inputs import describe_values, make_inputs
from core.model.onnx_file import read_tensor_data
from core.model.weightless import split_weights
from core.notes import note
from core.runtime.ort import LEVELS

if TYPE_CHECKING:
    import onnx

__all__ = ["NOTHING_COMPARED", "NO_OUTPUT", "ONLY_OUTPUTS", "compare_models"]

FUSED_AWAY = N_("fused or folded away by ONNX Runtime at the first model's level")
NOT_IN_B = N_("not computed by the second model (fused, renamed or removed there)")
NOT_COMPARABLE = N_("another shape or type in the two models (a re-laid-out or converted tensor)")
# a comparison that compared no output says so, and no verdict stands on it ("compared 0 tensors… No node leaves the
# tolerance" with exit 0 read as agreement)
NOTHING_COMPARED = N_(
    "Nothing was compared: the two models share no tensor of the same name, shape and type, and their outputs "
    "could not be paired by position either (another number, shape or type). Compare two versions of one model, "
    "or a model and its variant."
)
NO_OUTPUT = N_(
    "No output was compared: the second model has no output of the first's name, shape and type, so whether the "
    "two models answer alike was not checked; only tensors inside them were."
)
ONLY_OUTPUTS = N_(
    "No tensor inside the models was compared (they share no tensor name): only their outputs, paired by position."
)
# a smaller file is read as it is: twice its size is little, and splitting a graph of many small nodes takes a while
# (0.35 s for 30,003 nodes in 3.6 MB)
_SPLIT_FROM = 16 << 20
_FIRST_GROUP = 16  # tensors in the first group, to learn their size (each group costs a session of each model)


def _silent(fraction: float, message: str) -> None:
    pass


def _load(path: str, shown: str = "") -> onnx.ModelProto:
    import onnx

    try:
        return onnx.load_model(path, load_external_data=False)
    except Exception as exc:
        raise CompareError(
            _("{path} is not an ONNX model onnx can read: {error}").format(path=shown or path, error=exc)
        ) from None


def _graph_file(side: CompareSide, folder: Path) -> str:
    """The file this side's structure and session are read from: an ONNX model that holds its weights, as a graph
    without them and its weights in a data file beside it (core.model.weightless), so that onnx reads the structure
    alone and ONNX Runtime maps the weights, where each held the file's bytes and its parsed copy at once."""
    path = Path(side.path)
    if side.torch_source is not None or not path.is_file() or path.stat().st_size < _SPLIT_FROM:  # read as it is
        return side.path
    split = split_weights(path, folder)
    return str(split) if split is not None else side.path


def _check(request: CompareRequest) -> None:
    for side in (request.a, request.b):
        if side.level not in LEVELS:
            raise CompareError(
                _("Unknown optimization level {level}; choose one of {levels}.").format(
                    level=repr(side.level), levels=", ".join(LEVELS)
                )
            )
    if not (request.rtol >= 0 and request.atol >= 0):
        raise CompareError(_("The tolerances must be zero or more."))
    if request.group_mb < 1:
        raise CompareError(_("A group must be allowed at least 1 MiB."))
    if request.step is not None and (request.a.torch_source is not None or request.b.torch_source is not None):
        raise CompareError(_("A step of a prompt compares two ONNX language models; PyTorch eager is not run here."))


class _Weights:
    """The weights of a node of the reference that differ in the second model (initializers or Constant nodes of
    the same name), read one tensor at a time."""

    def __init__(self, a_path: str, b_path: str, graph: Graph) -> None:
        self.paths = (a_path, b_path)
        self.graph = graph

    def sources(self, names: set[str]) -> list[tuple[dict[str, onnx.TensorProto], str]]:
        """The weights ``names`` of each model, read again when a divergence's cause is asked, one model at a time
        and only those kept (not held while the tensors are compared, nor both models' at once: a model's weights
        embedded in its file are all in memory while it is read)."""
        found = []
        for path in self.paths:
            found.append((self._tensors(_load(path), names), str(Path(path).parent)))
            release_freed()
        return found

    @staticmethod
    def _tensors(model: onnx.ModelProto, names: set[str]) -> dict[str, onnx.TensorProto]:
        import onnx

        found = {t.name: t for t in model.graph.initializer if t.name in names}
        for node in model.graph.node:
            if node.op_type == "Constant" and node.output and node.output[0] in names:
                for attribute in node.attribute:
                    if attribute.name == "value":
                        found[node.output[0]] = attribute.t
        kept = {}
        for name, tensor in found.items():  # copied out, so the model they were read from is freed
            kept[name] = onnx.TensorProto()
            kept[name].CopyFrom(tensor)
        return kept

    def __call__(self, index: int) -> list[tuple[str, float, float]]:
        """(name, largest difference, largest magnitude in the reference) of each weight of node ``index`` that
        differs (the difference is infinite where the second model's weight is not finite)."""
        import numpy as np
        from onnx.external_data_helper import uses_external_data
        from onnx.numpy_helper import to_array

        (a, a_dir), (b, b_dir) = self.sources(set(self.graph.inputs[index]))
        differ = []
        for name in self.graph.inputs[index]:
            if name not in a or name not in b:
                continue
            arrays = []
            for tensor, folder in ((a[name], a_dir), (b[name], b_dir)):
                if uses_external_data(tensor):  # read by the app: onnx refuses the app's hard-linked data files
                    tensor = read_tensor_data(tensor, Path(folder))
                arrays.append(to_array(tensor).reshape(-1))  # as stored: float64 only a slice at a time
                del tensor
            largest = _largest(arrays[0], arrays[0])
            if arrays[0].size != arrays[1].size or a[name].dims != b[name].dims:
                differ.append((name, float("inf"), largest))
            elif not np.array_equal(arrays[0], arrays[1]):
                differ.append((name, _largest(arrays[0], arrays[1], difference=True), largest))
        return differ


_SLICE = 1 << 20  # values of a weight taken to float64 at once (8 MiB): a 2 GB weight is not doubled twice


def _largest(a: Any, b: Any, difference: bool = False) -> float:
    """max |a| (or max |a − b|, with ``difference``) in float64, a slice at a time; nan where a value is nan."""
    import numpy as np

    found = 0.0
    for start in range(0, a.size, _SLICE):
        x = a[start : start + _SLICE].astype(np.float64)
        if difference:
            x -= b[start : start + _SLICE].astype(np.float64)
        value = float(np.abs(x).max())
        if value != value:  # nan: said as it is
            return value
        found = max(found, value)
    return found


Side = Prepared | EagerSide


def _prepare(side: CompareSide, path: str, request: CompareRequest, arrays: dict[str, Any], folder: Path) -> Side:
    """One side made ready: its export run eagerly module by module, or its ONNX file (``path``: its graph without
    its weights, or the file itself) optimized at its level."""
    if side.torch_source is not None:
        return prepare_eager(side.path, side.torch_source, request.inputs, arrays)
    return prepare(path, side.level, side.provider, folder)


def _level_name(side: CompareSide) -> str:
    return "PyTorch eager" if side.torch_source is not None else LEVELS[side.level].name


def _feeds(side: Side, arrays: dict[str, Any]) -> dict[str, Any]:
    return eager_feeds(side, arrays) if isinstance(side, EagerSide) else feeds_for(side, arrays)


def _run(side: Side, names: list[str], feeds: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    return side.run(names, feeds) if isinstance(side, EagerSide) else run_group(side, names, feeds)


def _plan(graph: Graph, pa: Side, pb: Side) -> tuple[list[str], list[Uncompared]]:
    """The tensors both optimized graphs compute, in the reference's order, and those that could not be compared."""
    shared, lost_a, lost_b = [], [], []
    for index, outputs in enumerate(graph.outputs):
        if graph.ops[index] == "Constant":  # a weight, not a computed tensor: ORT makes it an initializer at
            continue  # every level (a Paddle export's 420 were said "fused or folded away" at DISABLE_ALL)
        for tensor in outputs:
            if tensor not in pa.producers:
                lost_a.append(tensor)
            elif tensor not in pb.producers:
                lost_b.append(tensor)
            else:
                shared.append(tensor)
    reasons = (
        INSIDE_MODULE if isinstance(pa, EagerSide) else FUSED_AWAY,
        INSIDE_MODULE if isinstance(pb, EagerSide) else NOT_IN_B,
    )
    uncompared = [
        Uncompared(reason=r, count=len(t), examples=t[:8]) for r, t in zip(reasons, (lost_a, lost_b), strict=True) if t
    ]
    return shared, uncompared


def _outputs(pa: Side, pb: Side, fa: dict[str, Any], fb: dict[str, Any], request: CompareRequest) -> list[TensorError]:
    """The models' outputs, by name when the second model has them all, else by position."""
    names_b = pa.outputs if set(pa.outputs) <= set(pb.outputs) else pb.outputs[: len(pa.outputs)]
    values_a = dict(_run(pa, pa.outputs, fa))
    values_b = dict(_run(pb, names_b, fb))
    compared = []
    for name, name_b in zip(pa.outputs, names_b, strict=False):
        found = measure(name, values_a.pop(name), values_b.pop(name_b), request.rtol, request.atol)
        if found is not None:
            compared.append(found)
    return compared


def _next_group(shared: list[str], start: int, sizes: dict[str, int], average: float, budget: int) -> list[str]:
    """The tensors of the next group: as many as fit in ``budget`` bytes by the sizes the optimized graph gives
    (else the average of those measured so far); a few to learn their size when neither is known."""
    names: list[str] = []
    total = 0.0
    for name in shared[start:]:
        size = sizes.get(name) or average or (total / len(names) if names else 0)  # else like the others
        if not size:
            return names or shared[start : start + _FIRST_GROUP]
        if names and total + size > budget:
            break
        names.append(name)
        total += size
    return names


def compare_models(request: CompareRequest, progress: Callable[[float, str], None] | None = None) -> CompareReport:
    """Run both models on the plan's inputs (batch 1, seeded) and measure every tensor they share."""
    progress = progress or _silent
    started = time.perf_counter()
    _check(request)
    bound_heap()
    with tempfile.TemporaryDirectory(prefix="workbench-compare-") as tmp:  # in the job's scratch folder
        return _compare(request, progress, started, Path(tmp))


def _compare(
    request: CompareRequest, progress: Callable[[float, str], None], started: float, tmp: Path
) -> CompareReport:
    a_path, b_path = _graph_file(request.a, tmp / "a-graph"), _graph_file(request.b, tmp / "b-graph")
    graph = graph_of(_load(a_path, request.a.path))  # one model read at a time: its structure kept
    release_freed()
    b_model = _load(b_path, request.b.path)
    b_graph, kind, b_int4 = graph_of(b_model), model_kind(b_model), int4_blocks(b_model)
    del b_model  # the weights are read again only for a cause
    release_freed()
    arrays = make_inputs(request.inputs, 1, request.seed) if request.step is None else {}
    stepped: Stepped | None = None
    progress(0.02, _("optimizing both models at their levels"))
    pa = _prepare(request.a, a_path, request, arrays, tmp / "a")
    pb = _prepare(request.b, b_path, request, arrays, tmp / "b")
    if isinstance(pa, Prepared) and isinstance(pb, Prepared) and request.step is not None:
        progress(0.04, _("driving both models through the prompt to step {step}").format(step=request.step.step))
        stepped = at_step(request, pa, pb)
        fa, fb = feeds_for(pa, stepped.feeds_a), feeds_for(pb, stepped.feeds_b)
    else:
        fa, fb = _feeds(pa, arrays), _feeds(pb, arrays)
    learn_sizes(pa, fa)
    shared, uncompared = _plan(graph, pa, pb)
    if not shared and not pa.outputs:
        raise CompareError(_("The two models have no tensor in common to compare."))
    measured, b_types, stats = _measure_all(shared, pa, pb, fa, fb, request, progress, tmp)
    if all(name in measured for name in pa.outputs):  # the outputs were among the shared tensors
        outputs = [measured[name] for name in pa.outputs]
    else:  # named otherwise in the second model: by position, in a run of their own
        outputs = _outputs(pa, pb, fa, fb, request)
    reached = taint(graph, measured)
    found_at = stats["times"]
    b_ops = {t: b_graph.ops[i] for t, i in b_graph.producer.items()}
    b_fused = {} if isinstance(pb, EagerSide) else {t: op for t, (_n, op, _d) in pb.producers.items()}
    context = {
        "b_ops": b_ops, "b_fused": b_fused, "b_types": b_types, "kind": kind, "b_int4": b_int4,
        "weights": _Weights(a_path, b_path, graph),
    }  # fmt: skip
    divergence = first_divergence(graph, measured, reached, context)
    nodes = node_errors(graph, measured, b_ops)
    step = stepped.report if stepped is not None else None
    if step is not None:  # per layer, and a divergence the past each model built brings in
        divergence = past_divergence(graph, divergence, step.past)
        step.layers, step.divergence_layer = layer_errors(graph, nodes), divergence_layer(graph, divergence)
    lost = [Uncompared(reason=NOT_COMPARABLE, count=len(stats["lost"]), examples=stats["lost"][:8])]
    keep = [graph.names[i] for i in introducing(graph, measured, reached)] if kind else []
    return CompareReport(
        a=request.a.label or Path(request.a.path).name,
        b=request.b.label or Path(request.b.path).name,
        a_level=_level_name(request.a),
        b_level=_level_name(request.b),
        tolerance=note(TOLERANCE_RULE, atol=f"{request.atol:g}", rtol=f"{request.rtol:g}"),
        rtol=request.rtol,
        atol=request.atol,
        inputs=_inputs(request, fa),
        outputs=outputs,
        nodes=nodes,
        matched=len(measured),
        uncompared=uncompared + (lost if stats["lost"] else []),
        first_divergence=divergence,
        b_kind=kind,
        keep_float32=keep[:50],
        groups=stats["groups"],
        peak_group_mb=stats["peak"] / 2**20,
        seconds=time.perf_counter() - started,
        seconds_to_divergence=(found_at[divergence.outputs[0].name] - started) if divergence else None,
        b_path=request.b.path,
        proves_nothing="" if outputs else (NO_OUTPUT if measured else NOTHING_COMPARED),
        lm=step,
    )


def _inputs(request: CompareRequest, feeds: dict[str, Any]) -> dict[str, str]:
    """The inputs, in words: the plan's, or at a step of a prompt what the first model was fed."""
    if request.step is None:
        return {s.name: f"{s.dtype} {list(s.shape)}, {describe_values(s).english()}" for s in request.inputs}
    return {name: f"{value.dtype} {list(value.shape)}" for name, value in feeds.items()}


def _measure_all(
    shared: list[str],
    pa: Side,
    pb: Side,
    fa: dict[str, Any],
    fb: dict[str, Any],
    request: CompareRequest,
    progress: Callable[[float, str], None],
    folder: Path,
) -> tuple[dict[str, TensorError], dict[str, str], dict[str, Any]]:
    """Every shared tensor measured: the reference's groups run first and written to disk, then the second model's
    same groups, each tensor measured against the reference's read back (one side's group held at a time)."""
    budget = request.group_mb << 20
    spool = Spool(folder / "spool")
    groups: list[list[str]] = []
    start, peak, average = 0, 0, 0.0
    while start < len(shared):
        names = _next_group(shared, start, pa.sizes, average, budget)
        held = 0
        for name, value_a in _run(pa, names, fa):
            held += getattr(value_a, "nbytes", 0)
            spool.put(name, value_a)
            del value_a
        groups.append(names)
        peak, start = max(peak, held), start + len(names)
        average = max(held / len(names), 1.0)
        progress(0.05 + 0.45 * start / len(shared), _("{done} of {total} tensors of the first model written").format(
            done=start, total=len(shared)
        ))  # fmt: skip
    measured: dict[str, TensorError] = {}
    b_types: dict[str, str] = {}
    times: dict[str, float] = {}
    lost: list[str] = []
    done = 0
    for names in groups:
        for name, value_b in _run(pb, names, fb):
            value_a = spool.take(name)
            b_types[name] = str(getattr(value_b, "dtype", ""))
            found = measure(name, value_a, value_b, request.rtol, request.atol)
            del value_a, value_b
            if found is None:
                lost.append(name)
            else:
                measured[name] = found
        times.update(dict.fromkeys(names, time.perf_counter()))
        done += len(names)
        progress(0.5 + 0.45 * done / len(shared), _("{done} of {total} tensors compared").format(
            done=done, total=len(shared)
        ))  # fmt: skip
    return measured, b_types, {"times": times, "lost": lost, "groups": len(groups), "peak": peak}
