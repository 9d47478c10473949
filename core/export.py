"""PyTorch to ONNX with a chosen exporter, opset and dynamic axes, then verified every time.

``export_model`` is the worker job behind the Export page and ``python -m core export``: it exports, runs
the checker and strict shape inference, loads the result in ONNX Runtime, and compares it with PyTorch at
the export shape and at another size of every dynamic axis, which is how a dynamic axis that the exporter
quietly fixed is caught.
"""

from __future__ import annotations

import logging
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ExportError
from core.model import ModelRecord
from core.torchload import TorchSource, example_tensors, load_module, module_op_counts
from core.workspace import safe_filename

__all__ = [
    "EXPORTERS",
    "ExportOptions",
    "ExportReport",
    "choose_exporter",
    "default_options",
    "export_model",
    "plain_warnings",
    "reproduce_code",
]

# exporter -> (opsets it can be asked for, opsets it really produces as asked, one-line description)
EXPORTERS: dict[str, tuple[range, range, str]] = {
    "dynamo": (
        range(9, 26),
        range(17, 26),
        "torch.export-based (dynamo=True): PyTorch's default, captures the graph with torch.export",
    ),
    "legacy": (range(9, 21), range(9, 21), "TorchScript-based (dynamo=False): traces the model; deprecated"),
}
DEFAULT_OPSET = 18
ATOL, RTOL = 1e-4, 1e-3


@dataclass
class ExportOptions:
    """What the user chose on the Export page (JSON-able, so it can travel to the worker)."""

    input_shapes: dict[str, list[int]]  # ONNX input name -> shape, in the model's argument order
    input_dtypes: dict[str, str] = field(default_factory=dict)
    dynamic_axes: dict[str, dict[str, str]] = field(default_factory=dict)  # input -> {axis: label}
    output_names: list[str] = field(default_factory=list)
    exporter: str = "dynamo"
    opset: int = DEFAULT_OPSET
    optimize: bool = True  # dynamo: optimize=True; legacy: do_constant_folding=True
    external_data: bool = False


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class OutputDiff:
    output: str
    max_abs: float
    max_rel: float
    ok: bool


@dataclass
class ShapeTrial:
    """One run of PyTorch and ONNX Runtime side by side at one set of input shapes."""

    label: str  # "export shape" or e.g. "seq = 21"
    input_shapes: dict[str, list[int]]
    ok: bool
    axis: str = ""  # the dynamic axis this trial varies, e.g. "tokens axis 1 (seq)"
    error: str = ""
    diffs: list[OutputDiff] = field(default_factory=list)


@dataclass
class ExportReport:
    ok: bool
    exporter: str
    exporter_reason: str
    opset_requested: int
    opset_produced: int | None
    opset_note: str
    onnx_path: str
    files: list[str]
    checks: list[Check]
    trials: list[ShapeTrial]
    torch_ops: dict[str, int]
    onnx_ops: dict[str, int]
    changes: list[str]
    warnings: list[str]
    code: str
    seconds: float
    record: ModelRecord | None = None
    traced_shapes: dict[str, list[int]] = field(default_factory=dict)  # what the exporter saw, when it differs


def choose_exporter(kind: str, requested: str) -> tuple[str, str]:
    """The exporter that can handle this kind of model, and why it was picked."""
    if kind == "torchscript":
        return "legacy", (
            "A TorchScript archive can only be exported by the legacy exporter: torch.export cannot take a "
            "ScriptModule."
        )
    if kind == "pt2":
        return "dynamo", "A .pt2 file is already a torch.export program, which only the dynamo exporter takes."
    if requested not in EXPORTERS:
        raise ExportError(f"Unknown exporter {requested!r}; the exporters are: {', '.join(EXPORTERS)}.")
    if requested == "dynamo":
        return "dynamo", "You chose the torch.export-based exporter, PyTorch's default."
    return "legacy", "You chose the legacy TorchScript exporter (deprecated in PyTorch, still widely used)."


# ----------------------------------------------------------------------------------------------- warnings
_PLAIN: list[tuple[str, str]] = [
    (
        r"legacy TorchScript-based ONNX export",
        "The legacy exporter is deprecated and will be removed from PyTorch; "
        "prefer the torch.export-based exporter when it handles your model.",
    ),
    (
        r"Converting a tensor to a Python boolean",
        "The model branches on a tensor's value (an `if` on a tensor). "
        "Tracing records only the branch taken for the example input; other inputs may need the other branch.",
    ),
    (
        r"Converting a tensor to a Python (integer|index|number)",
        "The model turns a tensor into a Python number; "
        "tracing freezes that number, so a size that depends on the input may be fixed in the graph.",
    ),
    (
        r"highest supported|opset version .* is not supported",
        "The exporter does not support the opset you asked for; see the opset note.",
    ),
    (r"dynamic_axes.*(converted|deprecated)", "dynamic_axes was converted to dynamic_shapes for torch.export."),
    (
        r"use operator set version (\d+) because the requested opset_version (\d+)",
        r"The torch.export exporter "
        r"builds the graph at opset \1 and then converts it down to opset \2.",
    ),
    (
        r"Failed to convert the model to the target version (\d+)",
        r"Converting down to opset \1 failed, so the "
        "model keeps the exporter's own opset (see the opset note).",
    ),
]
_NOISE = re.compile(
    r"torchvision is not installed|isinstance\(treespec|Please remove usage of this function|"
    r"TypedStorage is deprecated|_register_pytree_node|not supported by the onnxscript version converter"
)


def plain_warnings(messages: list[str]) -> list[str]:
    """The exporter's warnings in plain words: known ones explained, noise dropped, repeats counted."""
    counts: Counter[str] = Counter()
    for message in messages:
        if _NOISE.search(message):
            continue
        for pattern, plain in _PLAIN:
            match = re.search(pattern, message)
            if match:
                counts[match.expand(plain)] += 1
                break
        else:
            first = next((line.strip() for line in message.splitlines() if line.strip()), "")
            if first:
                counts[first[:300]] += 1
    return [f"{text} (×{n})" if n > 1 else text for text, n in counts.items()]


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


# ----------------------------------------------------------------------------------------------- export
def _identifier(label: str, fallback: str) -> str:
    cleaned = re.sub(r"\W", "_", label.strip())
    return cleaned if cleaned and not cleaned[0].isdigit() else fallback


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


def _call(model: Any, tensors: list[Any]) -> list[Any]:
    import torch

    with torch.no_grad():
        runner = model.module() if isinstance(model, torch.export.ExportedProgram) else model
        out = runner(*tensors)
    if isinstance(out, dict):
        out = list(out.values())
    return list(out) if isinstance(out, (tuple, list)) else [out]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_BOILERPLATE = re.compile(r"^(Traceback|File |from user code|This is step \d|Next steps|For more information|#|\^)")
_CAUSE = re.compile(
    r"Constraints violated|Not all values of|specializ|Unsupported|not supported|Could not|cannot|Error:|failed",
    re.IGNORECASE,
)


def _clean_runtime_message(message: str) -> str:
    """ORT's message without its source paths and C++ signatures."""
    message = re.sub(r"/onnxruntime_src/\S+\s*", "", message)
    message = re.sub(r"onnxruntime::\S+\(.*?\)\s*", "", message)
    return re.sub(r"\s+", " ", message).strip()


def _explain_export_failure(exc: Exception, exporter: str, opset: int) -> ExportError:
    # the exporter wraps the real cause (torch.export's error) in its own; read the whole chain
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    text = _ANSI.sub("", "\n".join(f"{type(e).__name__}: {e}" for e in reversed(chain)))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _BOILERPLATE.match(line.strip())]
    reason = next((line for line in lines if _CAUSE.search(line) and len(line) > 20), lines[0] if lines else "")
    reason = reason.rstrip(".:")[:400] or type(exc).__name__
    fixed = re.search(r"inferred a static shape of (\d+) for dimension inputs\['(\w+)'\]\.shape\[(\d+)\]", text)
    if fixed:
        size, argument, axis = fixed.groups()
        reason = f"axis {axis} of the model's argument '{argument}' is marked dynamic, but the model fixes it at {size}"
    other = "legacy" if exporter == "dynamo" else "dynamo"
    hints = []
    if re.search(r"Constraints violated|Not all values of|specializ|static shape of", text):
        hints.append(
            "untick the dynamic axes the model fixes (for example the channels, or the image size "
            "before a Linear layer), or give them another example size"
        )
    hints.append(f"try the {other} exporter")
    if re.search(r"opset|Unsupported: ONNX export of operator", text):
        hints.append("try a higher opset")
    if re.search(r"data.dependent|GuardOnDataDependent|control flow", text, re.IGNORECASE):
        hints.append("the model's control flow depends on input values; the legacy exporter traces one branch")
    return ExportError(
        f"The {exporter} exporter could not export this model: {reason}. What to do: {'; or '.join(hints)}."
    )


def _dynamic_shapes(options: ExportOptions) -> tuple[dict[int, str] | None, ...]:
    """torch.export's dynamic_shapes, one entry per input in order: axis -> a valid identifier, or None."""
    return tuple(
        {int(a): _identifier(lbl, f"d{a}") for a, lbl in options.dynamic_axes.get(n, {}).items()} or None
        for n in options.input_shapes
    )


def _run_export(
    model: Any,
    tensors: list[Any],
    path: Path,
    exporter: str,
    options: ExportOptions,
    output_axes: dict[str, dict[int, str]],
) -> None:
    import torch

    names = list(options.input_shapes)
    common: dict[str, Any] = {
        "opset_version": options.opset,
        "input_names": names,
        "output_names": options.output_names or None,
    }
    if exporter == "dynamo":
        if not isinstance(model, torch.export.ExportedProgram):
            common["dynamic_shapes"] = _dynamic_shapes(options)
        torch.onnx.export(
            model,
            tuple(tensors),
            str(path),
            dynamo=True,
            optimize=options.optimize,
            external_data=options.external_data,
            verbose=False,
            **common,
        )
    else:
        dynamic = {n: {int(a): lbl for a, lbl in options.dynamic_axes.get(n, {}).items()} for n in names}
        dynamic.update(output_axes)
        torch.onnx.export(
            model,
            tuple(tensors),
            str(path),
            dynamo=False,
            do_constant_folding=options.optimize,
            dynamic_axes={k: v for k, v in dynamic.items() if v},
            **common,
        )


def export_example_shapes(options: ExportOptions, exporter: str) -> dict[str, list[int]]:
    """The shapes the exporter sees. torch.export treats a size of 0 or 1 as a constant even on an axis
    marked dynamic, so for the dynamo exporter such an axis is traced at size 2; verification still runs at
    the shapes the user chose."""
    shapes = {k: list(v) for k, v in options.input_shapes.items()}
    if exporter == "dynamo":
        for name, dims in options.dynamic_axes.items():
            for axis in dims:
                if shapes[name][int(axis)] < 2:
                    shapes[name][int(axis)] = 2
    return shapes


PROTOBUF_LIMIT = 2**31 - 2**26  # 2 GB, less room for the graph itself


def _weight_bytes(model: Any) -> int:
    import torch

    state = model.state_dict if isinstance(model, torch.export.ExportedProgram) else model.state_dict()
    tensors = state.values()
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def _trial_shapes(options: ExportOptions) -> list[tuple[str, str, dict[str, list[int]]]]:
    """The export shape, then one trial per dynamic axis with only that axis changed."""
    trials = [("export shape", "", {k: list(v) for k, v in options.input_shapes.items()})]
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
            trials.append((label_text, f"{name} axis {axis} ({label})", shapes))
    return trials


def _compare(reference: list[Any], produced: list[Any], names: list[str]) -> list[OutputDiff]:
    import numpy as np

    diffs = []
    for name, ref, out in zip(names, reference, produced, strict=False):
        ref_np = ref.detach().cpu().numpy().astype(np.float64)
        out_np = np.asarray(out).astype(np.float64)
        if ref_np.shape != out_np.shape:
            diffs.append(OutputDiff(name, float("inf"), float("inf"), False))
            continue
        delta = np.abs(ref_np - out_np)
        max_abs = float(delta.max()) if delta.size else 0.0
        max_rel = float((delta / np.maximum(np.abs(ref_np), 1e-12)).max()) if delta.size else 0.0
        ok = bool(np.all(delta <= ATOL + RTOL * np.abs(ref_np)))
        diffs.append(OutputDiff(name, max_abs, max_rel, ok))
    return diffs


def _changes(torch_ops: dict[str, int], onnx_ops: dict[str, int]) -> list[str]:
    notes = []
    batchnorms = sum(n for op, n in torch_ops.items() if op.startswith("BatchNorm") or "batch_norm" in op)
    if batchnorms and not onnx_ops.get("BatchNormalization"):
        convs = onnx_ops.get("Conv", 0)
        where = "into the preceding Conv weights" if convs else "into neighbouring weights"
        notes.append(f"{batchnorms} BatchNorm layer(s) were folded {where}: no BatchNormalization node is left.")
    elif batchnorms:
        notes.append(f"{batchnorms} BatchNorm layer(s) stayed as BatchNormalization nodes (folding was off).")
    dropouts = sum(n for op, n in torch_ops.items() if op.startswith("Dropout"))
    if dropouts and not onnx_ops.get("Dropout"):
        notes.append(f"{dropouts} Dropout layer(s) were removed: they do nothing at inference.")
    linears = sum(n for op, n in torch_ops.items() if op.endswith("Linear"))
    if linears:
        parts = [f"{onnx_ops[k]} {k}" for k in ("Gemm", "MatMul") if onnx_ops.get(k)]
        if parts:
            notes.append(
                f"{linears} Linear layer(s) in PyTorch; the ONNX graph does its matrix products with "
                f"{' and '.join(parts)} node(s) (MatMul also carries any attention products)."
            )
    flattens = torch_ops.get("Flatten", 0)
    if flattens and onnx_ops.get("Reshape") and not onnx_ops.get("Flatten"):
        notes.append(f"{flattens} Flatten layer(s) became Reshape.")
    return notes


def reproduce_code(source: TorchSource, options: ExportOptions, exporter: str, output_path: str) -> str:
    """Python that redoes this exact export outside the app."""
    lines = ["import torch", ""]
    if source.kind == "sample":
        lines += ["from core import zoo  # this project's sample zoo", f"model = zoo.build_model({source.name!r})"]
    elif source.kind == "state_dict":
        lines += [
            "from core import zoo  # this project's sample zoo",
            f"model = zoo.build_model({source.name!r})",
            f"model.load_state_dict(torch.load({Path(source.path).name!r}, weights_only=True))",
            "model.eval()",
        ]
    elif source.kind == "safetensors":
        lines += [
            "from safetensors.torch import load_file",
            "from core import zoo  # this project's sample zoo",
            f"model = zoo.build_model({source.name!r})",
            f"model.load_state_dict(load_file({Path(source.path).name!r}))",
            "model.eval()",
        ]
    elif source.kind == "torchscript":
        lines += [f"model = torch.jit.load({Path(source.path).name!r}).eval()"]
    else:
        lines += [f"model = torch.export.load({Path(source.path).name!r})"]
    lines.append("torch.manual_seed(0)")
    args = []
    traced = export_example_shapes(options, exporter)
    if traced != options.input_shapes:
        lines.append("# torch.export treats a dynamic axis of size 1 as a constant, so it is traced at size 2")
    for name, shape in traced.items():
        dtype = options.input_dtypes.get(name, "float32")
        var = _identifier(name, "x")
        if dtype.startswith("float"):
            lines.append(f"{var} = torch.randn({', '.join(map(str, shape))}, dtype=torch.{dtype})")
        else:
            lines.append(f"{var} = torch.randint(0, 10, ({', '.join(map(str, shape))},), dtype=torch.{dtype})")
        args.append(var)
    call = [
        "    model,",
        f"    ({', '.join(args)},),",
        f"    {Path(output_path).name!r},",
        f"    dynamo={exporter == 'dynamo'},",
        f"    opset_version={options.opset},",
        f"    input_names={list(options.input_shapes)!r},",
    ]
    if options.output_names:
        call.append(f"    output_names={options.output_names!r},")
    if exporter == "dynamo":
        if source.kind != "pt2":
            shapes = _dynamic_shapes(options)
            call.append(f"    dynamic_shapes={shapes!r},")
        call += [f"    optimize={options.optimize},", f"    external_data={options.external_data},"]
    else:
        dynamic = {n: {int(a): lbl for a, lbl in d.items()} for n, d in options.dynamic_axes.items() if d}
        call += [f"    dynamic_axes={dynamic!r},", f"    do_constant_folding={options.optimize},"]
    lines += ["", "torch.onnx.export(", *call, ")"]
    return "\n".join(lines) + "\n"


def default_options(record: ModelRecord, exporter: str = "dynamo") -> ExportOptions:
    """Export settings from the model itself: its example shapes, dtypes, natural dynamic axes and names."""
    shapes: dict[str, list[int]] = {}
    for spec in record.inputs:
        if spec.shape is None:
            raise ExportError(
                f"The model does not say the shape of its input '{spec.name}' (TorchScript keeps no shapes). "
                "Give it, e.g. --input NAME=1,3,224,224 on the command line or in the shape box on the Export page."
            )
        shapes[spec.name] = [d if isinstance(d, int) and d > 0 else 1 for d in spec.shape]
    return ExportOptions(
        input_shapes=shapes,
        input_dtypes={s.name: s.dtype for s in record.inputs if s.dtype in _TORCH_DTYPES},
        dynamic_axes={s.name: dict(s.dynamic_axes) for s in record.inputs if s.dynamic_axes},
        output_names=[s.name for s in record.outputs] if record.format != "torchscript" else [],
        exporter=choose_exporter(record.format, exporter)[0] if record.format in ("torchscript", "pt2") else exporter,
    )


_TORCH_DTYPES = {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool"}


def export_model(
    source: dict[str, Any],
    options: dict[str, Any],
    out_dir: str,
    file_name: str = "model.onnx",
    progress: Callable[[float, str], None] | None = None,
) -> ExportReport:
    """Export, verify, and describe the result. Runs in the worker."""
    import onnx
    import onnxruntime as ort

    from core.intake import describe_files
    from core.records import from_jsonable

    report_progress = progress or (lambda fraction, message: None)
    started = time.perf_counter()
    src = from_jsonable(TorchSource, source)
    opts = from_jsonable(ExportOptions, options)
    exporter, reason = choose_exporter(src.kind, opts.exporter)
    asked, honoured, _ = EXPORTERS[exporter]
    if opts.opset not in asked:
        raise ExportError(
            f"The {exporter} exporter takes opsets {asked.start}–{asked.stop - 1}; you asked for {opts.opset}."
        )
    for input_name, dims in opts.dynamic_axes.items():
        if input_name not in opts.input_shapes:
            raise ExportError(f"A dynamic axis names the input {input_name!r}, which the model does not have.")
        for axis in dims:
            if not 0 <= int(axis) < len(opts.input_shapes[input_name]):
                raise ExportError(
                    f"Input {input_name!r} has no axis {axis} (its shape is {opts.input_shapes[input_name]})."
                )

    report_progress(0.05, "Loading the PyTorch model")
    model = load_module(src)
    weight_bytes = _weight_bytes(model)
    if weight_bytes > PROTOBUF_LIMIT and not opts.external_data:
        opts.external_data = True  # a single protobuf cannot hold more than 2 GB
    export_shapes = export_example_shapes(opts, exporter)
    tensors = example_tensors(export_shapes, opts.input_dtypes)
    reference = _call(model, tensors)
    if not opts.output_names:
        opts.output_names = [f"output_{i}" for i in range(len(reference))] if len(reference) > 1 else ["output"]
    output_axes = _output_axes(opts, reference, export_shapes)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = safe_filename(file_name, "model").removesuffix(".onnx") or "model"
    path = out / f"{stem}.onnx"
    for stale in (path, path.with_name(path.name + ".data")):
        stale.unlink(missing_ok=True)
    first = "; the first export in a process takes a few seconds" if exporter == "dynamo" else ""
    report_progress(0.15, f"Exporting with the {exporter} exporter at opset {opts.opset}{first}")
    collector = _Collect()
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")]
    for logger in loggers:
        logger.addHandler(collector)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _run_export(model, tensors, path, exporter, opts, output_axes)
    except ExportError:
        raise
    except Exception as exc:
        raise _explain_export_failure(exc, exporter, opts.opset) from None
    finally:
        for logger in loggers:
            logger.removeHandler(collector)
    messages = [str(w.message) for w in caught] + collector.messages
    if weight_bytes > PROTOBUF_LIMIT and options.get("external_data") is False:
        messages.append(
            f"The weights take {weight_bytes / 1e9:.1f} GB, more than one protobuf file can hold, so "
            "they were written to an external .onnx.data file."
        )
    if export_shapes != opts.input_shapes:
        messages.append(
            "torch.export treats an axis of size 1 as a constant, so the dynamic axes of size 1 were traced at "
            "size 2; the checks below still run at the shapes you chose."
        )

    report_progress(0.55, "Checking the ONNX model (checker, strict shape inference)")
    checks: list[Check] = []
    try:
        onnx.checker.check_model(str(path), full_check=True)
        checks.append(Check("onnx.checker (full check)", True, "the model is valid ONNX"))
    except Exception as exc:
        checks.append(Check("onnx.checker (full check)", False, str(exc).strip().splitlines()[0][:400]))
    proto = onnx.load_model(str(path), load_external_data=False)
    try:
        onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
        checks.append(Check("strict shape inference", True, "every node's output type and shape can be inferred"))
    except Exception as exc:
        checks.append(Check("strict shape inference", False, str(exc).strip().splitlines()[0][:400]))
    opset_produced = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    opset_note = ""
    if opset_produced != opts.opset:
        opset_note = (
            f"You asked for opset {opts.opset}; the {exporter} exporter produced opset {opset_produced}. "
            + ("The legacy exporter can produce opsets 9–20 as asked." if exporter == "dynamo" else "")
        ).strip()
    elif opts.opset not in honoured:
        opset_note = f"Opset {opts.opset} is outside what the {exporter} exporter normally honours."
    files = [str(path)] + (
        [str(path.with_name(path.name + ".data"))] if path.with_name(path.name + ".data").exists() else []
    )

    report_progress(0.65, "Loading the model in ONNX Runtime")
    trials: list[ShapeTrial] = []
    session = None
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        checks.append(Check("loads in ONNX Runtime", True, f"ONNX Runtime {ort.__version__}, CPUExecutionProvider"))
    except Exception as exc:
        checks.append(Check("loads in ONNX Runtime", False, str(exc).strip()[:400]))
    if session is not None:
        feed_names = [i.name for i in session.get_inputs()]
        output_names = [o.name for o in session.get_outputs()]
        plan = _trial_shapes(opts)
        for index, (label, axis, shapes) in enumerate(plan):
            report_progress(0.7 + 0.25 * index / len(plan), f"Comparing with PyTorch at {label}")
            trial_inputs = example_tensors(shapes, opts.input_dtypes, seed=index + 1)
            try:
                expected = _call(model, trial_inputs)
            except Exception as exc:
                trials.append(ShapeTrial(label, shapes, False, axis, f"PyTorch itself fails at this shape: {exc}"))
                continue
            try:
                feed = {n: t.detach().numpy() for n, t in zip(feed_names, trial_inputs, strict=False)}
                produced = session.run(None, feed)
            except Exception as exc:
                message = _clean_runtime_message(str(exc).strip().splitlines()[0])[:500]
                if axis:
                    message = (
                        f"ONNX Runtime fails when {axis} changes, so this axis is not really dynamic: the "
                        f"exporter baked its size into the graph. ORT said: {message}"
                    )
                trials.append(ShapeTrial(label, shapes, False, axis, message))
                continue
            diffs = _compare(expected, produced, output_names)
            ok = all(d.ok for d in diffs)
            error = (
                ""
                if ok
                else (
                    f"The outputs differ beyond {ATOL:g} + {RTOL:g}·|value|" + (f" when {axis} changes" if axis else "")
                )
            )
            trials.append(ShapeTrial(label, shapes, ok, axis, error, diffs))
    torch_ops = module_op_counts(model)
    onnx_ops = dict(Counter(n.op_type for n in proto.graph.node))
    record = describe_files(files, name=path.stem)
    record.notes.insert(0, f"Exported from {src.kind} '{src.name or Path(src.path).name}' by the {exporter} exporter.")
    ok = all(c.ok for c in checks) and bool(trials) and all(t.ok for t in trials)
    return ExportReport(
        ok=ok,
        exporter=exporter,
        exporter_reason=reason,
        opset_requested=opts.opset,
        opset_produced=opset_produced,
        opset_note=opset_note,
        onnx_path=str(path),
        files=files,
        checks=checks,
        trials=trials,
        torch_ops=torch_ops,
        onnx_ops=onnx_ops,
        changes=_changes(torch_ops, onnx_ops),
        warnings=plain_warnings(messages),
        code=reproduce_code(src, opts, exporter, str(path)),
        seconds=time.perf_counter() - started,
        record=record,
        traced_shapes=export_shapes if export_shapes != opts.input_shapes else {},
    )
