"""PyTorch to ONNX with a chosen exporter, opset and dynamic axes, then verified every time.

``export_model`` is the worker job behind the Export page and ``python -m core export``: it exports, runs
the checker and strict shape inference, loads the result in ONNX Runtime, and compares it with PyTorch at
the export shape and at another size of every dynamic axis (verify.py).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from core.errors import ExportError
from core.export.code import dynamic_shapes, export_example_shapes, reproduce_code
from core.export.messages import Collect, explain_export_failure, plain_warnings
from core.export.options import (
    EXPORTERS,
    Check,
    ExportOptions,
    ExportReport,
    ExportRequest,
    choose_exporter,
    names_of_tensors,
)
from core.export.verify import (
    call_module,
    describe_changes,
    load_session,
    run_trials,
    static_checks,
    unproven_warning,
)
from core.i18n import N_, _
from core.model.intake import IntakeRequest, describe_files
from core.model.notes import EXPORTED_FROM, note
from core.model.records import ModelRecord
from core.model.torchload import example_tensors, load_module, module_op_counts
from core.notes import Note, warning
from core.settings import IntakeLimits
from core.workspace import safe_filename, shown_name

if TYPE_CHECKING:
    import torch

__all__ = ["export_model"]

EXPORTING = N_("Exporting with the {exporter} exporter at opset {opset}")  # the progress as an export starts
# the app's own notes among the exporter's warnings, and the opset note: kept in the report as notes (core.notes),
# said in the reader's language where shown
_EXTERNAL = N_(
    "The weights take more than one protobuf file can hold (2 GB), so they were written to an external .onnx.data file."
)
_RETRACED = N_(
    "The program's dims are written as expressions ({dims}), which ONNX's exporter does not take: it was traced again "
    "from its own module with those axes automatic (Dim.AUTO)."
)
_TRACED_AT_2 = N_(
    "torch.export treats an axis of size 1 as a constant, so the dynamic axes of size 1 were traced at size 2; the "
    "checks below still run at the shapes you chose."
)
_OPSET_DIFFERS = N_("You asked for opset {requested}; the {exporter} exporter produced opset {produced}.")
_OPSET_DIFFERS_LEGACY = N_(
    "You asked for opset {requested}; the {exporter} exporter produced opset {produced}. The legacy exporter can "
    "produce opsets 9–20 as asked."
)
_OPSET_OUTSIDE = N_("Opset {requested} is outside what the {exporter} exporter normally honours.")

PROTOBUF_LIMIT = 2**31 - 2**26  # 2 GB, less room for the graph itself
_LOGGERS = ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")


def _check_opset(exporter: str, opset: int) -> None:
    """Refuse an opset the exporter does not take (a model's export and a language model's, before any loading)."""
    asked = EXPORTERS[exporter][0]
    if opset not in asked:
        raise ExportError(
            f"The {exporter} exporter takes opsets {asked.start}–{asked.stop - 1}; you asked for {opset}."
        )


def _check_request(options: ExportOptions, exporter: str) -> None:
    _check_opset(exporter, options.opset)
    for input_name, dims in options.dynamic_axes.items():
        if input_name not in options.input_shapes:
            raise ExportError(f"A dynamic axis names the input {input_name!r}, which the model does not have.")
        for axis in dims:
            if not 0 <= int(axis) < len(options.input_shapes[input_name]):
                raise ExportError(
                    f"Input {input_name!r} has no axis {axis} (its shape is {options.input_shapes[input_name]})."
                )


def _output_axes(
    options: ExportOptions, outputs: list[Any], input_shapes: dict[str, list[int]]
) -> dict[str, dict[int, str]]:
    """Outputs follow the inputs: an output dim equal to a dynamic input dim at the same axis shares its label."""
    axes: dict[str, dict[int, str]] = {}
    for name, tensor in zip(options.output_names, outputs, strict=False):
        for input_name, dims in options.dynamic_axes.items():
            for axis_text, label in dims.items():
                axis = int(axis_text)
                if axis < tensor.dim() and tensor.shape[axis] == input_shapes[input_name][axis]:
                    axes.setdefault(name, {})[axis] = label
    return axes


def _run_export(
    model: torch.nn.Module | torch.export.ExportedProgram,
    tensors: list[Any],
    path: Path,
    exporter: str,
    options: ExportOptions,
    output_axes: dict[str, dict[int, str]],
) -> None:
    import torch

    # torch.export specializes a Python scalar into a constant; a scripted module keeps it as a graph input
    names = list(options.input_shapes) if exporter == "legacy" else names_of_tensors(options)
    settings: dict[str, Any] = {
        "opset_version": options.opset,
        "input_names": names,
        "output_names": options.output_names or None,
        "dynamo": exporter == "dynamo",
    }
    if exporter == "dynamo":
        # a program's dims are dynamic already: for one, dynamic_shapes only names them in the ONNX model
        settings["dynamic_shapes"] = dynamic_shapes(options)
        settings.update(optimize=options.optimize, external_data=options.external_data, verbose=False)
    else:
        dynamic = {n: {int(a): lbl for a, lbl in options.dynamic_axes.get(n, {}).items()} for n in names}
        dynamic.update(output_axes)
        settings.update(do_constant_folding=options.optimize, dynamic_axes={k: v for k, v in dynamic.items() if v})
    torch.onnx.export(model, tuple(tensors), str(path), **settings)


def _weight_bytes(model: torch.nn.Module | torch.export.ExportedProgram) -> int:
    import torch

    state = model.state_dict if isinstance(model, torch.export.ExportedProgram) else model.state_dict()
    tensors = state.values()
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def _target(out_dir: str, file_name: str) -> Path:
    """Where the model goes; an earlier export of the same name (and its data file) is removed first."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = safe_filename(file_name, "model").removesuffix(".onnx") or "model"
    path = out / f"{stem}.onnx"
    for stale in (path, path.with_name(path.name + ".data")):
        stale.unlink(missing_ok=True)
    return path


@contextmanager
def _collected_warnings() -> Iterator[list[str]]:
    """Every warning and warning-level log line the exporters emit while the block runs."""
    collector = Collect()
    loggers = [logging.getLogger(n) for n in _LOGGERS]
    for logger in loggers:
        logger.addHandler(collector)
    messages: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield messages
    finally:
        for logger in loggers:
            logger.removeHandler(collector)
        messages.extend([str(w.message) for w in caught] + collector.messages)


def _export(
    model: torch.nn.Module | torch.export.ExportedProgram, path: Path, exporter: str, options: ExportOptions
) -> tuple[ExportOptions, list[str], list[Note]]:
    """Run the exporter; returns the options as used (output names filled in, external data when needed),
    the exporter's messages, and the app's own notes."""
    notes: list[Note] = []
    if _weight_bytes(model) > PROTOBUF_LIMIT and not options.external_data:
        options = dataclasses.replace(options, external_data=True)  # one protobuf cannot hold more than 2 GB
        notes.append(warning(_EXTERNAL))
    export_shapes = export_example_shapes(options, exporter)
    tensors = example_tensors(
        export_shapes, options.input_dtypes, values=options.input_values, kinds=options.input_kinds
    )
    reference = call_module(model, tensors)
    if not options.output_names:
        names = [f"output_{i}" for i in range(len(reference))] if len(reference) > 1 else ["output"]
        options = dataclasses.replace(options, output_names=names)
    output_axes = _output_axes(options, reference, export_shapes)
    with _collected_warnings() as messages:
        try:
            _run_export(_plain_dims(model, tensors, notes), tensors, path, exporter, options, output_axes)
        except ExportError:
            raise
        except Exception as exc:
            raise explain_export_failure(exc, exporter, options.opset) from None
    if export_shapes != options.input_shapes:
        notes.append(warning(_TRACED_AT_2))
    return options, messages, notes


def _plain_dims(
    model: torch.nn.Module | torch.export.ExportedProgram, tensors: list[Any], notes: list[Note]
) -> torch.nn.Module | torch.export.ExportedProgram:
    """A torch.export program whose dims are expressions (``2*h``, as torch.export's own suggested fixes write them)
    traced again from its module with those axes automatic (Dim.AUTO): ONNX's exporter takes only dims that are
    plain symbols, and failed with "expected sympy.Symbol" on the program as saved. Any other model as it is."""
    import torch

    if not isinstance(model, torch.export.ExportedProgram):
        return model
    users = set(model.graph_signature.user_inputs)
    shapes = [
        getattr(node.meta.get("val"), "shape", None)
        for node in model.graph.nodes
        if node.op == "placeholder" and node.name in users
    ]
    dims = [d for shape in shapes if shape is not None for d in shape if isinstance(d, torch.SymInt)]
    if all(d.node.expr.is_Symbol for d in dims):
        return model
    dynamic = tuple(
        {axis: torch.export.Dim.AUTO for axis, d in enumerate(shape) if isinstance(d, torch.SymInt)} or None
        if shape is not None
        else None
        for shape in shapes
    )
    notes.append(note(_RETRACED, dims=", ".join(sorted({str(d.node.expr) for d in dims if not d.node.expr.is_Symbol}))))
    return torch.export.export(model.module(), tuple(tensors), dynamic_shapes=dynamic)


def _opset_note(requested: int, produced: int | None, exporter: str) -> Note | None:
    if produced != requested:
        said = _OPSET_DIFFERS_LEGACY if exporter == "dynamo" else _OPSET_DIFFERS
        return warning(said, requested=requested, exporter=exporter, produced=produced if produced is not None else "?")
    if requested not in EXPORTERS[exporter][1]:
        return warning(_OPSET_OUTSIDE, requested=requested, exporter=exporter)
    return None


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


class _Written(NamedTuple):
    """An exported file as checked: the checks, its proto (weights left out), the files written (the model, then its
    data file) and its session of ONNX Runtime (None: it did not load)."""

    checks: list[Check]
    proto: Any
    files: list[str]
    session: Any


def _checked(path: Path, report_progress: Callable[[float, str], None]) -> _Written:
    """What every export checks of the file it wrote: onnx's full checker, strict shape inference, then a session."""
    report_progress(0.55, _("Checking the ONNX model (checker, strict shape inference)"))
    checks, proto = static_checks(path)
    data_file = path.with_name(path.name + ".data")
    files = [str(path)] + ([str(data_file)] if data_file.exists() else [])
    report_progress(0.65, _("Loading the model in ONNX Runtime"))
    loaded, session = load_session(path)
    return _Written([*checks, loaded], proto, files, session)


def _exported_record(
    request: ExportRequest, written: _Written, limits: IntakeLimits | None, exporter: str
) -> ModelRecord:
    """The written model's record, its first note saying what it was exported from and how."""
    path, source = Path(written.files[0]), request.source
    record = describe_files(IntakeRequest(paths=written.files, name=shown_name(request.file_name, path.stem)), limits)
    record.notes.insert(
        0, note(EXPORTED_FROM, kind=source.kind, name=source.name or Path(source.path).name, exporter=exporter)
    )
    return record


def _report(
    written: _Written,
    trials: list[Any],
    *,
    exporter: str,
    reason: str,
    opset: int,
    torch_ops: dict[str, int],
    **more: Any,
) -> ExportReport:
    """The report of an export whose file is ``written`` (``more``: the report's fields that are the export's own:
    warnings, code, record...); it passes when there were trials, and every check and every trial passed."""
    produced = next((o.version for o in written.proto.opset_import if o.domain in ("", "ai.onnx")), None)
    onnx_ops = dict(Counter(n.op_type for n in written.proto.graph.node))
    return ExportReport(
        ok=all(c.ok for c in written.checks) and bool(trials) and all(t.ok for t in trials),
        exporter=exporter,
        exporter_reason=Note(key=reason),
        opset_requested=opset,
        opset_produced=produced,
        opset_note=_opset_note(opset, produced, exporter),
        onnx_path=written.files[0],
        files=written.files,
        checks=written.checks,
        trials=trials,
        torch_ops=torch_ops,
        onnx_ops=onnx_ops,
        changes=describe_changes(torch_ops, onnx_ops),
        **more,
    )


def export_model(
    request: ExportRequest,
    limits: IntakeLimits | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> ExportReport:
    """Export, verify, and describe the result. Runs in the worker."""
    if request.source.kind == "hf":  # a causal language model: exported with its cache, verified by generating
        from core.export.causal_lm import export_causal_lm

        return export_causal_lm(request, limits, progress)
    source, options = request.source, request.options
    report_progress = progress or _silent
    started = time.perf_counter()
    exporter, reason = choose_exporter(source.kind, options.exporter)
    _check_request(options, exporter)
    report_progress(0.05, _("Loading the PyTorch model"))
    model = load_module(source)
    path = _target(request.out_dir, request.file_name)
    exporting = (
        _("Exporting with the {exporter} exporter at opset {opset}; the first export in a process takes a few seconds")
        if exporter == "dynamo"
        else _(EXPORTING)
    )
    report_progress(0.15, exporting.format(exporter=exporter, opset=options.opset))
    used, messages, notes = _export(model, path, exporter, options)

    written = _checked(path, report_progress)
    trials = run_trials(model, written.session, used, report_progress) if written.session is not None else []
    record = _exported_record(request, written, limits, exporter)
    traced = export_example_shapes(used, exporter)
    return _report(
        written,
        trials,
        exporter=exporter,
        reason=reason,
        opset=used.opset,
        torch_ops=module_op_counts(model),
        warnings=[w for w in [unproven_warning(trials)] if w is not None] + plain_warnings(messages) + notes,
        code=reproduce_code(source, used, exporter, str(path)),
        seconds=time.perf_counter() - started,
        record=record,
        traced_shapes=traced if traced != used.input_shapes else {},
    )
