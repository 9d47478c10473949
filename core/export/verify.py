"""Verification of an export: the checker, strict shape inference, ONNX Runtime, and PyTorch at every dynamic axis.

Comparing at another size of every dynamic axis is what catches an axis that the exporter quietly fixed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.export.options import Check, ExportOptions, ShapeTrial
from core.i18n import N_, _
from core.model.checks import onnx_checks
from core.model.torchload import example_tensors
from core.notes import Note, clauses, note, warning
from core.runtime.ort import NUMPY_TYPES, explain_session_error, ort_message
from core.runtime.outputs import ATOL, RTOL, compare_outputs, flatten_outputs

if TYPE_CHECKING:
    import onnxruntime
    import torch

# What a report says: kept in it as notes (core.notes: the template and its values), said in the reader's language
# where shown (the Export page, the command line; its JSON in English)
EXPORT_SHAPE = N_("export shape")
_VALID = N_("the model is valid ONNX")  # the checker's and shape inference's other words: core.model.checks
_LOADS = N_("loads in ONNX Runtime")
_AXIS = N_("{name} axis {axis} ({label})")
_TORCH_FAILS = N_("PyTorch itself fails at this shape: {error}")
UNCHECKED = N_(
    "Not checked: PyTorch itself refuses {label} at every size tried ({sizes}): the program's own guards allow no "
    "other size near the export's. It said: {error}"
)
OTHER_SIZES = (8, 16, 32, 64)  # a size PyTorch refuses is tried again this far past the export's (a stride's multiple)
_NOT_DYNAMIC = N_(
    "ONNX Runtime fails when {axis} changes, so this axis is not really dynamic: the exporter baked its size into "
    "the graph. ORT said: {message}"
)
_DIFFER = N_("The outputs differ beyond {atol} + {rtol}·|value|")
_DIFFER_WHEN = N_("The outputs differ beyond {atol} + {rtol}·|value| when {axis} changes")
_VOID = N_("Proves nothing: {why}.")
_ALL_NAN, _ALL_ZERO, _CONSTANT = N_("all NaN"), N_("all zero"), N_("constant {value}")
_OUTPUT_IS = N_("'{name}' {kind}")
_BOTH_GIVE = N_("PyTorch and ONNX Runtime both give {listed}, so any graph with outputs of these shapes would match")
UNPROVEN = N_(
    "The comparison with PyTorch at {where} does not test the model: {why}. A model built without its trained "
    "weights does this (a head initialised to zero); export it with its weights, or on inputs that make its "
    "outputs vary, to test it."
)
_INTO_CONV, _INTO_NEIGHBOURS = N_("into the preceding Conv weights"), N_("into neighbouring weights")
_FOLDED = N_("{count} BatchNorm layer(s) were folded {where}: no BatchNormalization node is left.")
_STAYED = N_("{count} BatchNorm layer(s) stayed as BatchNormalization nodes (folding was off).")
_DROPPED = N_("{count} Dropout layer(s) were removed: they do nothing at inference.")
_LINEAR_ONE = N_(
    "{count} Linear layer(s) in PyTorch; the ONNX graph does its matrix products with {first} node(s) (MatMul "
    "also carries any attention products)."
)
_LINEAR_TWO = N_(
    "{count} Linear layer(s) in PyTorch; the ONNX graph does its matrix products with {first} and {second} "
    "node(s) (MatMul also carries any attention products)."
)
_IDENTITIES = N_(
    "{count} Identity node(s) were left by the exporter: each passes a tensor on unchanged under a new name (the "
    "legacy exporter does so for a weight whose values another shares, such as the equal biases BatchNorm folding "
    "leaves). They cost nothing: ONNX Runtime removes them at its basic level, and the graph view folds those of "
    "weights into the nodes that read them, as it does weights."
)
_FLATTEN = N_("{count} Flatten layer(s) became Reshape.")

__all__ = [
    "EXPORT_SHAPE",
    "OTHER_SIZES",
    "UNCHECKED",
    "UNPROVEN",
    "call_module",
    "describe_changes",
    "load_session",
    "proves_nothing",
    "run_trials",
    "static_checks",
    "trial_shapes",
    "unproven_warning",
]


def call_module(model: torch.nn.Module | torch.export.ExportedProgram, tensors: list[Any]) -> list[Any]:
    """PyTorch's outputs for ``tensors``, as a list (an ExportedProgram runs through its module)."""
    import torch

    with torch.no_grad():
        runner = model.module() if isinstance(model, torch.export.ExportedProgram) else model
        out = runner(*tensors)
    if isinstance(out, dict):
        out = list(out.values())
    return list(out) if isinstance(out, (tuple, list)) else [out]


def static_checks(path: Path) -> tuple[list[Check], Any]:
    """The full checker and strict shape inference; returns the checks and the model proto (weights left out)."""
    checks, proto = onnx_checks(path, _VALID)
    if proto is None:  # a file onnx cannot read at all: its own error, as it says it
        import onnx

        proto = onnx.load_model(str(path), load_external_data=False)
    return checks, proto


def load_session(path: Path) -> tuple[Check, Any]:
    """The model in ONNX Runtime's CPU provider, and the check that says whether it loaded."""
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # in words where the refusal is a known one (core.runtime.refusals)
        words = str(explain_session_error(exc, "load the model", str(path)))
        return Check(note(_LOADS), False, Note.kept(words[:1200], "warning")), None
    return Check(note(_LOADS), True, Note.kept(f"ONNX Runtime {ort.__version__}, CPUExecutionProvider")), session


def trial_shapes(options: ExportOptions) -> list[tuple[str, Note | None, dict[str, list[int]]]]:
    """The export shape, then one trial per dynamic axis with only that axis changed (and that axis, in words)."""
    trials: list[tuple[str, Note | None, dict[str, list[int]]]] = [
        (EXPORT_SHAPE, None, {k: list(v) for k, v in options.input_shapes.items()})
    ]
    for name, dims in options.dynamic_axes.items():
        for axis_text, label in dims.items():
            axis = int(axis_text)
            shapes = {k: list(v) for k, v in options.input_shapes.items()}
            size = shapes[name][axis]
            new = (3 if size != 3 else 2) if axis == 0 else size + 5
            # every input that shares this label changes with it (seq in ids and mask together)
            for other, other_dims in options.dynamic_axes.items():
                for other_axis, other_label in other_dims.items():
                    if other_label == label:
                        shapes[other][int(other_axis)] = new
            label_text = f"{label} = {new}"
            if any(t[0] == label_text for t in trials):
                continue
            trials.append((label_text, note(_AXIS, name=name, axis=axis, label=label), shapes))
    return trials


def _feed(session: onnxruntime.InferenceSession, arguments: dict[str, Any]) -> dict[str, Any]:
    """The ORT feed from the call's arguments, by name (in the arguments' order when the exporter named the
    inputs its own way). A Python scalar kept as a graph input goes in as a 0-d array of the input's type."""
    import numpy as np

    graph_inputs = session.get_inputs()
    named = all(i.name in arguments for i in graph_inputs)
    values = [arguments[i.name] for i in graph_inputs] if named else list(arguments.values())
    tensors = [v for v in values if hasattr(v, "detach")] if not named and len(values) > len(graph_inputs) else values
    return {
        i.name: v.detach().numpy() if hasattr(v, "detach") else np.asarray(v, dtype=NUMPY_TYPES.get(i.type, "float32"))
        for i, v in zip(graph_inputs, tensors, strict=False)
    }


def _trial(
    model: torch.nn.Module | torch.export.ExportedProgram,
    session: onnxruntime.InferenceSession,
    options: ExportOptions,
    label: str,
    axis: Note | None,
    shapes: dict[str, list[int]],
    seed: int,
) -> ShapeTrial:
    """PyTorch and ONNX Runtime side by side at one set of input shapes."""
    tensors = example_tensors(
        shapes, options.input_dtypes, seed=seed, values=options.input_values, kinds=options.input_kinds
    )
    try:
        expected = call_module(model, tensors)
    except Exception as exc:
        failed = warning(_TORCH_FAILS, error=str(exc))
        return ShapeTrial(label=label, input_shapes=shapes, ok=False, axis=axis, error=failed)
    feed = _feed(session, dict(zip(shapes, tensors, strict=True)))
    try:
        produced = session.run(None, feed)
    except Exception as exc:
        message = ort_message(str(exc).strip().splitlines()[0])[:500]
        said = warning(_NOT_DYNAMIC, axis=axis, message=message) if axis is not None else Note.kept(message, "warning")
        return ShapeTrial(label=label, input_shapes=shapes, ok=False, axis=axis, error=said)
    names = [o.name for o in session.get_outputs()]
    diffs = compare_outputs(expected, produced, names)
    ok = all(d.ok for d in diffs)
    void = proves_nothing(expected, produced, names) if ok else None
    error: Note | None = None
    if not ok:  # the tolerances as Python writes them (1e-04), not to the reader's three figures
        error = (
            warning(_DIFFER_WHEN, atol=f"{ATOL:g}", rtol=f"{RTOL:g}", axis=axis)
            if axis is not None
            else warning(_DIFFER, atol=f"{ATOL:g}", rtol=f"{RTOL:g}")
        )
    if void is not None:  # matched, but on values any graph of the right shapes could give: not counted as passed
        error = warning(_VOID, why=void)
    return ShapeTrial(
        label=label,
        input_shapes=shapes,
        ok=ok and void is None,
        axis=axis,
        error=error,
        diffs=diffs,
        proves_nothing=void,
    )


def _sameness(values: Any) -> Note | None:
    """How an output is the same everywhere: "all zero", "all NaN", "constant 0.5"; None when its values vary."""
    import numpy as np

    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if not array.size:
        return None
    if np.isnan(array).all():
        return note(_ALL_NAN)
    if not np.isfinite(array).all():
        return None
    if not array.any():
        return note(_ALL_ZERO)
    if array.size > 1 and (array == array.flat[0]).all():
        return note(_CONSTANT, value=f"{array.flat[0]:.4g}")
    return None


def proves_nothing(expected: list[Any], produced: list[Any], names: list[str]) -> Note | None:
    """Why a comparison that matched tests nothing, or None: when every output is all zero, all NaN or one
    constant on both sides, any graph with outputs of the right shapes and that value would have matched."""
    kinds = []
    for k, (ref, got) in enumerate(zip(flatten_outputs(expected), flatten_outputs(produced), strict=False)):
        kind, other = _sameness(ref), _sameness(got)
        if kind is None or other is None or (kind != other and not (kind.key == other.key == _CONSTANT)):
            return None
        kinds.append(note(_OUTPUT_IS, name=names[k] if k < len(names) else f"output {k}", kind=kind))
    if not kinds:
        return None
    return note(_BOTH_GIVE, listed=clauses(kinds))


def unproven_warning(trials: list[ShapeTrial], where: str = "") -> Note | None:
    """The one warning for the comparisons that proved nothing, or None when every one tested the model; ``where``
    names them (by default their labels, as the command line writes them)."""
    why = next((t.proves_nothing for t in trials if t.proves_nothing is not None), None)
    if why is None:
        return None
    where = where or ", ".join(t.label for t in trials if t.proves_nothing is not None)
    return warning(UNPROVEN, where=where, why=why)


def run_trials(
    model: torch.nn.Module | torch.export.ExportedProgram,
    session: onnxruntime.InferenceSession,
    options: ExportOptions,
    progress: Callable[[float, str], None],
) -> list[ShapeTrial]:
    """The export shape, then each dynamic axis at another size (inputs that share its label change with it)."""
    plan = trial_shapes(options)
    trials = []
    for index, (label, axis, shapes) in enumerate(plan):
        shown = _(label) if label == EXPORT_SHAPE else label
        progress(0.7 + 0.25 * index / len(plan), _("Comparing with PyTorch at {where}").format(where=shown))
        trial = _trial(model, session, options, label, axis, shapes, seed=index + 1)
        if axis is not None and _refused(trial) and _program(model):  # its guards (an even height): a size they allow
            trial = _another_size(model, session, options, trial, seed=index + 1)
        trials.append(trial)
    return trials


def _program(model: object) -> bool:
    """A saved torch.export program: its guards may forbid a size its dim allows. A module PyTorch cannot run at
    another size fixes that axis, and its trial fails as it should."""
    import torch

    return isinstance(model, torch.export.ExportedProgram)


def _refused(trial: ShapeTrial) -> bool:
    return trial.error is not None and trial.error.key == _TORCH_FAILS


def _another_size(
    model: torch.nn.Module | torch.export.ExportedProgram,
    session: onnxruntime.InferenceSession,
    options: ExportOptions,
    refused: ShapeTrial,
    seed: int,
) -> ShapeTrial:
    """The trial at the first size near the export's that PyTorch takes (OTHER_SIZES further, twice it, then
    OTHER_SIZES below it), on every input that shares the axis; when PyTorch refuses them all, the refused trial
    marked as not checked."""
    changed = [
        (name, axis)
        for name, dims in refused.input_shapes.items()
        for axis, size in enumerate(dims)
        if size != options.input_shapes[name][axis]
    ]
    if not changed:
        return refused
    base = options.input_shapes[changed[0][0]][changed[0][1]]
    label = refused.label.rpartition(" = ")[0] or refused.label
    tried = [refused.input_shapes[changed[0][0]][changed[0][1]]]
    below = [base - step for step in OTHER_SIZES if base - step >= 2]  # a program's maximum may be the export's
    for size in dict.fromkeys(s for s in [base + step for step in OTHER_SIZES] + [base * 2] + below if s not in tried):
        shapes = {k: list(v) for k, v in refused.input_shapes.items()}
        for name, axis in changed:
            shapes[name][axis] = size
        trial = _trial(model, session, options, f"{label} = {size}", refused.axis, shapes, seed)
        if not _refused(trial):
            return trial
        tried.append(size)
    error = refused.error.values.get("error", "") if refused.error is not None else ""
    unchecked = warning(UNCHECKED, label=label, sizes=", ".join(map(str, tried)), error=str(error))
    return dataclasses.replace(refused, error=unchecked, unchecked=unchecked)


def describe_changes(torch_ops: dict[str, int], onnx_ops: dict[str, int]) -> list[Note]:
    """What the export changed, in a learner's words: BatchNorm folded, Dropout removed, Linear → Gemm."""
    notes: list[Note] = []
    batchnorms = sum(n for op, n in torch_ops.items() if op.startswith("BatchNorm") or "batch_norm" in op)
    if batchnorms and not onnx_ops.get("BatchNormalization"):
        convs = onnx_ops.get("Conv", 0)
        notes.append(note(_FOLDED, count=batchnorms, where=note(_INTO_CONV if convs else _INTO_NEIGHBOURS)))
    elif batchnorms:
        notes.append(note(_STAYED, count=batchnorms))
    dropouts = sum(n for op, n in torch_ops.items() if op.startswith("Dropout"))
    if dropouts and not onnx_ops.get("Dropout"):
        notes.append(note(_DROPPED, count=dropouts))
    linears = sum(n for op, n in torch_ops.items() if op.endswith("Linear"))
    if linears:
        parts = [f"{onnx_ops[k]} {k}" for k in ("Gemm", "MatMul") if onnx_ops.get(k)]
        if len(parts) == 2:
            notes.append(note(_LINEAR_TWO, count=linears, first=parts[0], second=parts[1]))
        elif parts:
            notes.append(note(_LINEAR_ONE, count=linears, first=parts[0]))
    identities = onnx_ops.get("Identity", 0) - torch_ops.get("Identity", 0)
    if identities > 0:
        notes.append(note(_IDENTITIES, count=identities))
    flattens = torch_ops.get("Flatten", 0)
    if flattens and onnx_ops.get("Reshape") and not onnx_ops.get("Flatten"):
        notes.append(note(_FLATTEN, count=flattens))
    return notes
