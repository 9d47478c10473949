"""export: a PyTorch model to ONNX, verified, as the Export page does."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from core import jobs
from core.cli.common import add_code_arguments, code_choice, describe, parse_input, print_json
from core.errors import WorkbenchError
from core.export import ExportOptions, ExportReport, ExportRequest, default_options
from core.i18n import _
from core.jobs import EXPORT
from core.model.inputs import SCALAR_TYPES
from core.model.records import ModelRecord
from core.notes import say


def _parse_dynamic(text: str) -> tuple[str, str, str]:
    match = re.fullmatch(r"(.+):(\d+)=(\w+)", text)
    if not match:
        raise WorkbenchError(
            _("--dynamic {text}: expected NAME:AXIS=label, e.g. input:0=batch").format(text=repr(text))
        )
    return match.group(1), match.group(2), match.group(3)


__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument(
        "model",
        help="sample:NAME, a state_dict/safetensors file, a TorchScript archive, a .pt2, or a model's code and its "
        "weights joined by ',' (model.py,weights.pt)",
    )
    add_code_arguments(parser)
    parser.add_argument("-o", "--output", required=True, help="where to write the .onnx")
    parser.add_argument("--exporter", choices=["dynamo", "legacy"], default="dynamo")
    parser.add_argument("--opset", type=int, help="ONNX opset (default 18)")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=1,3,112,112", help="input shape")
    parser.add_argument(
        "--value", action="append", default=[], metavar="NAME=16000", help="a Python int, float or bool argument"
    )
    parser.add_argument(
        "--dynamic",
        action="append",
        default=[],
        metavar="NAME:AXIS=label",
        help="a dynamic axis; replaces the model's default dynamic axes",
    )
    parser.add_argument("--no-dynamic", action="store_true", help="export with every axis fixed")
    parser.add_argument("--no-optimize", action="store_true", help="keep BatchNorm and constants unfolded")
    parser.add_argument("--external-data", action="store_true", help="weights in a .onnx.data file beside the model")
    parser.add_argument("--json", action="store_true", help="print the verification report as JSON")
    parser.set_defaults(func=run)


def _options(args: argparse.Namespace, record: ModelRecord) -> ExportOptions:
    """The model's default export options with the command line's changes."""
    given = dict(parse_input(text) for text in args.input)
    specs = [
        dataclasses.replace(s, shape=list[int | str](given[s.name])) if s.shape is None and s.name in given else s
        for s in record.inputs
    ]
    options = default_options(dataclasses.replace(record, inputs=specs), args.exporter)
    options.exporter = args.exporter
    for text in args.value:
        name, _sep, value = text.partition("=")
        if options.input_dtypes.get(name) not in SCALAR_TYPES:
            scalars = [n for n, d in options.input_dtypes.items() if d in SCALAR_TYPES]
            raise WorkbenchError(
                _("--value {name}: the model's Python scalar arguments are: {scalars}").format(
                    name=repr(name), scalars=", ".join(scalars) or _("none")
                )
            )
        try:
            options.input_values[name] = float(value == "true") if value in ("true", "false") else float(value)
        except ValueError:
            raise WorkbenchError(
                _("--value {text}: expected NAME=NUMBER, e.g. sr=16000").format(text=repr(text))
            ) from None
    for text in args.input:
        name, shape = parse_input(text)
        if (
            name not in options.input_shapes
            and len(options.input_shapes) == 1
            and record.format in ("torchscript", "code")
        ):
            options.input_shapes = {name: shape}
        elif name not in options.input_shapes:
            raise WorkbenchError(
                _("--input names {name}; the model's inputs are: {inputs}").format(
                    name=repr(name), inputs=", ".join(options.input_shapes)
                )
            )
        options.input_shapes[name] = shape
    if args.dynamic or args.no_dynamic:
        options.dynamic_axes = {}
    for text in args.dynamic:
        name, axis, label = _parse_dynamic(text)
        options.dynamic_axes.setdefault(name, {})[axis] = label
    if args.opset is not None:
        options.opset = args.opset
    options.optimize = not args.no_optimize
    options.external_data = args.external_data
    return options


def run(args: argparse.Namespace) -> int:
    from core.model.torchload import source_of

    record = describe(args.model, code_choice(args))
    if not record.is_pytorch:
        raise WorkbenchError(
            _("“{model}” is already ONNX; export takes a PyTorch model (sample:NAME, .pt, .pt2).").format(
                model=args.model
            )
        )
    out = Path(args.output).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    # The job writes into a folder of its own beside the output, whose files are then moved next to it: the
    # sandbox never gives a job a whole home folder, /tmp or the project to write into (core.jobs.sandbox).
    with tempfile.TemporaryDirectory(prefix=".export-", dir=out.parent) as private:
        request = ExportRequest(
            source=source_of(record), options=_options(args, record), out_dir=private, file_name=out.name
        )
        report = _moved_out(jobs.run(EXPORT, request), private)
    if args.json:
        print_json(report)
    else:
        _print_export(report)
    return 0 if report.ok else 1


def _moved_out(report: ExportReport, private: str) -> ExportReport:
    """``report`` once its files (the model and its data file) are moved from ``private`` to the folder above
    it, replacing an earlier export of the same name (and its data file)."""
    folder = Path(private).parent

    def moved(path: str) -> str:
        return str(folder / Path(path).relative_to(private)) if Path(path).is_relative_to(private) else path

    main = Path(moved(report.onnx_path))
    for stale in (main, main.with_name(main.name + ".data")):
        stale.unlink(missing_ok=True)
    for name in report.files:
        os.replace(name, moved(name))
    record = report.record
    if record is not None:
        record = dataclasses.replace(record, path=moved(record.path), files=[moved(f) for f in record.files])
    return dataclasses.replace(
        report,
        onnx_path=moved(report.onnx_path),
        files=[moved(f) for f in report.files],
        record=record,
        code=report.code.replace(private, str(folder)),
    )


def _print_export(report: ExportReport) -> None:
    mark = {True: _("ok "), False: _("FAIL")}
    print(
        _("{path}  ({exporter} exporter, opset {opset}, {seconds} s)").format(
            path=report.onnx_path,
            exporter=report.exporter,
            opset=report.opset_produced,
            seconds=f"{report.seconds:.1f}",
        )
    )
    if report.opset_note is not None:
        print("  " + _("note  {note}").format(note=say(report.opset_note)))
    if report.reused:
        print("  " + _("reused  an export of this sample with the same settings, made on this machine before"))
    for check in report.checks:
        detail = say(check.detail) if check.detail is not None else ""
        print(f"  {mark[check.ok]}  {say(check.name)}: {detail}")
    for trial in report.trials:
        worst = max((d.max_abs for d in trial.diffs), default=float("nan"))
        detail = say(trial.error) if trial.error is not None else _("max abs diff {value}").format(value=f"{worst:.2e}")
        verdict = _("VOID") if trial.proves_nothing is not None else mark[trial.ok]
        verdict = _("SKIP") if trial.unchecked is not None else verdict  # PyTorch refused every size tried
        print(f"  {verdict}  " + _("matches PyTorch at {inputs}: {detail}").format(inputs=trial.label, detail=detail))
    for greedy in report.greedy:  # a language model's: the tokens both engines generated from each prompt
        for eager, onnx in zip(greedy.eager, greedy.onnx, strict=True):
            print("  " + _("tokens  {prompt}  PyTorch {eager}  ONNX Runtime {onnx}").format(
                prompt=greedy.label, eager=" ".join(map(str, eager)), onnx=" ".join(map(str, onnx))
            ))  # fmt: skip
    for change in report.changes:
        print("  " + _("change  {change}").format(change=say(change)))
    for warning in report.warnings:
        print("  " + _("warning  {warning}").format(warning=say(warning)))
