"""The headless command line: ``python -m core samples|info|inspect|export`` over the same functions as the pages."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core import zoo
from core.errors import IntakeError, WorkbenchError
from core.jobs import run_job
from core.model import ModelRecord, format_shape
from core.records import from_jsonable, to_jsonable
from core.settings import load_settings

__all__ = ["main"]


def describe(model: str) -> ModelRecord:
    """The record of ``model``: a file path, several paths joined by ',' (model + data files) or sample:NAME."""
    settings = load_settings()
    if model.startswith("sample:"):
        name = model.removeprefix("sample:")
        zoo.get_sample(name)  # a clear error for an unknown name before a worker starts
        data = run_job("intake.describe_sample", {"name": name})
    else:
        paths = model.split(",")
        data = run_job(
            "intake.describe_files",
            {
                "paths": paths,
                "max_nodes": settings.max_nodes,
                "max_initializer_bytes": settings.max_initializer_bytes,
                "allow_code_archives": settings.allow_code_archives,
            },
        )
    return from_jsonable(ModelRecord, data)


def as_onnx(model: str, work_dir: Path) -> tuple[ModelRecord, ModelRecord | None]:
    """The ONNX model behind ``model`` and the PyTorch model it came from (if any).

    A PyTorch model (sample:NAME, a state_dict, TorchScript, .pt2) is first exported with its default settings
    into ``work_dir``, as the Export page would with no changes; the export is verified like any other.
    """
    from core.export import ExportReport, default_options
    from core.torchload import source_of

    record = describe(model)
    if not record.is_pytorch:
        return record, None
    print(f"exporting {record.name} to ONNX with the default settings…", file=sys.stderr)
    data = run_job(
        "export.run",
        {
            "source": to_jsonable(source_of(record)),
            "options": to_jsonable(default_options(record)),
            "out_dir": str(work_dir),
            "file_name": f"{record.name}.onnx",
        },
    )
    report = from_jsonable(ExportReport, data)
    if report.record is None or not report.ok:
        failed = [c.detail for c in report.checks if not c.ok] + [t.error for t in report.trials if t.error]
        raise WorkbenchError(f"Exporting {record.name} to ONNX failed: {'; '.join(failed) or 'see the Export page'}")
    return report.record, record


def _split(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _print_record(record: ModelRecord) -> None:
    print(f"{record.name}  ({record.format_label})")
    print(f"  id         {record.id}")
    print(f"  size       {record.size_bytes:,} bytes")
    if record.parameter_count is not None:
        print(f"  parameters {record.parameter_count:,}")
    if record.opset is not None:
        print(f"  opset      {record.opset}   ir_version {record.ir_version}   producer {record.producer or '-'}")
    if record.node_count is not None:
        print(f"  nodes      {record.node_count:,}")
    for label, specs in (("input ", record.inputs), ("output", record.outputs)):
        for spec in specs:
            dynamic = ", ".join(f"{v} on axis {k}" for k, v in spec.dynamic_axes.items())
            extra = f"   dynamic: {dynamic}" if dynamic else ""
            print(f"  {label}     {spec.name}: {spec.dtype} {format_shape(spec.shape)}{extra}")
    for note in record.notes:
        print(f"  note       {note}")


def _cmd_samples(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "title": s.title,
            "description": s.description,
            "inputs": {k: list(v) for k, v in s.inputs.items()},
            "dynamic_axes": {k: {str(a): n for a, n in v.items()} for k, v in s.dynamic_axes.items()},
        }
        for s in zoo.SAMPLES.values()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            shapes = ", ".join(f"{k} {format_shape(v)}" for k, v in row["inputs"].items())
            print(f"{row['name']:<12} {shapes:<24} {row['description']}")
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    record = describe(args.model)
    if args.json:
        data = to_jsonable(record)
        data["format_label"] = record.format_label
        print(json.dumps(data, indent=2))
    else:
        _print_record(record)
    return 0


def _parse_shape(text: str) -> tuple[str, list[int]]:
    name, _, dims = text.partition("=")
    try:
        return name, [int(d) for d in dims.replace("x", ",").split(",") if d.strip()]
    except ValueError:
        raise WorkbenchError(f"--input {text!r}: expected NAME=1,3,112,112") from None


def _parse_dynamic(text: str) -> tuple[str, str, str]:
    match = re.fullmatch(r"(.+):(\d+)=(\w+)", text)
    if not match:
        raise WorkbenchError(f"--dynamic {text!r}: expected NAME:AXIS=label, e.g. input:0=batch")
    return match.group(1), match.group(2), match.group(3)


def _cmd_export(args: argparse.Namespace) -> int:
    from core.export import ExportReport, default_options
    from core.torchload import source_of

    record = describe(args.model)
    if not record.is_pytorch:
        raise WorkbenchError(f"'{args.model}' is already ONNX; export takes a PyTorch model (sample:NAME, .pt, .pt2).")
    options = default_options(record, args.exporter)
    options.exporter = args.exporter
    for text in args.input:
        name, shape = _parse_shape(text)
        if name not in options.input_shapes and len(options.input_shapes) == 1 and record.format == "torchscript":
            options.input_shapes = {name: shape}
        elif name not in options.input_shapes:
            raise WorkbenchError(f"--input names {name!r}; the model's inputs are: {', '.join(options.input_shapes)}")
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
    out = Path(args.output).resolve()
    data = run_job(
        "export.run",
        {
            "source": to_jsonable(source_of(record)),
            "options": to_jsonable(options),
            "out_dir": str(out.parent),
            "file_name": out.name,
        },
    )
    report = from_jsonable(ExportReport, data)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        _print_export(report)
    return 0 if report.ok else 1


def _print_export(report: Any) -> None:
    mark = {True: "ok ", False: "FAIL"}
    print(f"{report.onnx_path}  ({report.exporter} exporter, opset {report.opset_produced}, {report.seconds:.1f} s)")
    if report.opset_note:
        print(f"  note  {report.opset_note}")
    for check in report.checks:
        print(f"  {mark[check.ok]}  {check.name}: {check.detail}")
    for trial in report.trials:
        worst = max((d.max_abs for d in trial.diffs), default=float("nan"))
        detail = trial.error or f"max abs diff {worst:.2e}"
        print(f"  {mark[trial.ok]}  matches PyTorch at {trial.label}: {detail}")
    for change in report.changes:
        print(f"  change  {change}")
    for warning in report.warnings:
        print(f"  warning  {warning}")


def _cmd_inspect(args: argparse.Namespace) -> int:
    from core.decode import DecodedModel, summary

    try:
        record = describe(args.model)
        path = record.path
    except IntakeError as exc:
        # a damaged or refused file: decode what can be decoded (its first fields) and say what went wrong
        path = args.model.split(",")[0]
        if not Path(path).is_file():
            raise
        print(f"error: {exc}", file=sys.stderr)
        decoded = from_jsonable(DecodedModel, run_job("decode.run", {"path": path, "with_text": False}))
        print(
            json.dumps(summary(decoded), indent=2)
            if args.json
            else "\n".join(
                [f"  byte {f.offset:<5} {f.hex:<38} field {f.number} {f.field} = {f.value}" for f in decoded.header]
                + [f"  problem    {p}" for p in decoded.problems]
            )
        )
        return 1
    if record.format != "onnx":
        raise WorkbenchError(f"inspect reads ONNX; '{args.model}' is a {record.format_label}. Export it first.")
    decoded = from_jsonable(DecodedModel, run_job("decode.run", {"path": path, "with_text": False}))
    data = summary(decoded)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(
        f"{record.name}  ir_version {decoded.ir_version}, producer {decoded.producer_name or '-'} "
        f"{decoded.producer_version}".rstrip()
    )
    print("  opsets     " + ", ".join(f"{d} {v}" for d, v in decoded.opsets.items()))
    for label, specs in (("input ", decoded.inputs), ("output", decoded.outputs)):
        for spec in specs:
            print(f"  {label}     {spec.name}: {spec.dtype} {format_shape(spec.shape)}")
    print(
        f"  nodes      {decoded.node_count:,} in the main graph, {decoded.total_node_count:,} in all; "
        f"{decoded.subgraph_count} subgraph(s), {len(decoded.functions)} function(s)"
    )
    print("  ops        " + ", ".join(f"{op} {n}" for op, n in decoded.op_counts.items()))
    print(
        f"  weights    {decoded.initializer_count:,} initializers, {decoded.parameter_count:,} parameters, "
        f"{decoded.initializer_bytes:,} bytes"
        + (f", external: {', '.join(decoded.external_files)}" if decoded.external_files else "")
    )
    print(f"  checker    {'passes' if decoded.checker_ok else decoded.checker_message}")
    print(f"  shapes     {decoded.shapes_known} of {decoded.shapes_total} intermediate tensors known")
    for field in decoded.header:
        print(f"  byte {field.offset:<5} {field.hex:<38} field {field.number} {field.field} = {field.value}")
    for problem in decoded.problems:
        print(f"  problem    {problem}")
    return 0


def _provider_names(text: str | None) -> list[str] | None:
    """'cuda,cpu' or full names -> ORT provider names, in the order given."""
    from core.partition import PROVIDERS

    if not text:
        return None
    by_short = {short.lower(): name for name, (short, _, _) in PROVIDERS.items()}
    names = []
    for part in _split(text):
        lowered = part.lower()
        names.append(by_short.get(lowered) or by_short.get(lowered.removesuffix("executionprovider")) or part)
    return names


def _cmd_partition(args: argparse.Namespace) -> int:
    import tempfile

    from core.optimize import OptimizationReport, grouped
    from core.partition import PartitionResult, short_name

    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        record, _ = as_onnx(args.model, Path(tmp))
        data = run_job(
            "partition.run",
            {
                "path": record.path,
                "providers": _provider_names(args.providers),
                "level": args.level,
                "simulate": _split(args.simulate),
                "with_layout": False,
            },
        )
        result = from_jsonable(PartitionResult, data)
        levels = None
        if args.levels:
            out_dir = Path(args.out_dir).resolve() if args.out_dir else Path(tmp) / "optimized"
            levels = from_jsonable(
                OptimizationReport, run_job("optimize.levels", {"path": record.path, "out_dir": str(out_dir)})
            )
    if args.json:
        print(json.dumps(_partition_json(result, levels, bool(args.out_dir)), indent=2))
        return 0
    for message in result.unavailable.values():
        print(f"note: {message}", file=sys.stderr)
    for report in result.reports:
        print(report.summary)
        for subgraph in report.subgraphs:
            ops = ", ".join(f"{op} {n}" for op, n in subgraph.ops.items())
            print(f"  subgraph {subgraph.index:<3} {short_name(subgraph.provider):<8} {subgraph.nodes:>5} nodes  {ops}")
        if report.unsupported_ops:
            print(f"  unsupported ops: {', '.join(report.unsupported_ops)}")
        for line in report.log:
            print(f"  ORT log  {line.strip()}")
        for note in report.notes:
            print(f"  note  {note}")
    if levels is not None:
        print(f"optimization levels ({levels.original_nodes} nodes in the model):")
        for level in levels.levels:
            print(f"  {level.name:<12} {level.node_count:>6} nodes  {', '.join(level.transformers) or '-'}")
            for rewrite, count in grouped(level.rewrites):
                print(f"      {rewrite.kind:<8} {rewrite.text}" + (f" (×{count})" if count > 1 else ""))
            if args.out_dir:
                print(f"      saved   {level.path}")
    return 0


def _partition_json(result: Any, levels: Any, saved: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": result.model,
        "node_count": result.node_count,
        "available": result.available,
        "unavailable": result.unavailable,
    }
    reports = []
    for report in result.reports:
        reports.append(
            {
                "title": report.title,
                "simulated": report.simulated,
                "summary": report.summary,
                "providers_requested": report.providers_requested,
                "level": report.level,
                "nodes": [
                    {"name": n.name, "op_type": n.op_type, "domain": n.domain, "graph": n.graph, "provider": n.provider}
                    for n in report.nodes
                ],
                "providers": report.providers,
                "subgraphs": to_jsonable(report.subgraphs),
                "fallback": report.fallback,
                "copies": to_jsonable(report.copies),
                "unsupported_ops": report.unsupported_ops,
                "log": report.log,
                "notes": report.notes,
            }
        )
    data.update(reports[0])  # the real partition at the top level; simulated ones under "simulations"
    data["simulations"] = reports[1:]
    if levels is not None:
        data["levels"] = {
            level.name: {
                "node_count": level.node_count,
                "op_counts": level.op_counts,
                "transformers": level.transformers,
                "rewrites": [{"kind": r.kind, "text": r.text} for r in level.rewrites],
                **({"path": level.path} if saved else {}),
            }
            for level in levels.levels
        }
    return data


def _ints(text: str | None, what: str) -> list[int] | None:
    try:
        return [int(v) for v in _split(text)] or None
    except ValueError:
        raise WorkbenchError(f"{what} takes whole numbers separated by commas, e.g. 1,2,4; got {text!r}") from None


def _cmd_bench(args: argparse.Namespace) -> int:
    import tempfile

    from core.bench import BenchReport, default_inputs
    from core.store import Store
    from core.torchload import source_of

    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        record, torch_record = as_onnx(args.model, Path(tmp))
        if args.torch:
            torch_record = describe(args.torch)
            if not torch_record.is_pytorch:
                raise WorkbenchError(f"--torch {args.torch!r} is a {torch_record.format_label}, not a PyTorch model.")
        if args.no_eager:
            torch_record = None
        levels = [level.lower().removesuffix("_all") for level in _split(args.levels)] or None
        data = run_job(
            "bench.run",
            {
                "onnx_path": record.path,
                "inputs": to_jsonable(default_inputs(record, torch_record)),
                "torch_source": to_jsonable(source_of(torch_record)) if torch_record else None,
                "model": torch_record.name if torch_record and args.model.startswith("sample:") else record.name,
                "model_id": record.id,
                "levels": levels,
                "providers": _provider_names(args.providers),
                "threads": _ints(args.threads, "--threads"),
                "batches": _ints(args.batch, "--batch"),
                "iterations": args.iters,
                "warmup": args.warmup,
                "time_budget_s": args.budget,
                "seed": args.seed,
            },
        )
    report = from_jsonable(BenchReport, data)
    if not args.no_save:
        Store(load_settings().store_url).save(report)
    if args.json:
        out = {k: v for k, v in to_jsonable(report).items() if k != "results"}
        out["results"] = [{k: v for k, v in to_jsonable(r).items() if k != "samples_ms"} for r in report.results]
        print(json.dumps(out, indent=2))
        return 0
    print(report.headline)
    print(f"{'configuration':<32} {'median':>9} {'p90':>9} {'p99':>9} {'items/s':>10} {'speedup':>15} {'max diff':>9}")
    for r in report.results:
        speedup = f"{r.speedup:.2f}× ({r.speedup_low:.1f}–{r.speedup_high:.1f})" if r.speedup is not None else "-"
        diff = f"{r.max_abs_diff:.1e}" if r.max_abs_diff is not None else "-"
        print(
            f"{r.label:<32} {r.median_ms:>7.3f}ms {r.p90_ms:>7.3f}ms {r.p99_ms:>7.3f}ms {r.throughput:>10,.0f} "
            f"{speedup:>15} {diff:>9}"
        )
    env = report.environment
    print(f"machine  {env.machine}: {env.cpu}, {env.physical_cores} cores ({env.logical_cores} logical), {env.os}")
    print("versions " + ", ".join(f"{k} {v}" for k, v in env.versions.items()))
    for note in report.notes:
        print(f"note     {note}")
    if not args.no_save:
        print(f"saved    run {report.id} in the history")
    return 0


def _variant_key(args: argparse.Namespace) -> str:
    if args.mode == "dynamic":
        return f"dynamic-{args.weight_type}"
    if args.mode == "fp16":
        return "fp16" if args.keep_io else "fp16-all"
    return f"static-{args.format}-{args.method}"


def _cmd_quantize(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from core.bench import default_inputs
    from core.quantize import QuantizeReport

    key = _variant_key(args)
    calibration_file, calibration_count = "", 32
    if args.calibration:
        if args.calibration.isdigit():
            calibration_count = int(args.calibration)
        else:
            calibration_file = str(Path(args.calibration).resolve())
            if not Path(calibration_file).is_file():
                raise WorkbenchError(f"--calibration {args.calibration!r}: no such file (give a count or an .npz)")
    out = Path(args.output).resolve()
    with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
        record, torch_record = as_onnx(args.model, Path(tmp))
        data = run_job(
            "quantize.run",
            {
                "path": record.path,
                "out_dir": str(Path(tmp) / "variants"),
                "inputs": to_jsonable(default_inputs(record, torch_record)),
                "variants": [key],
                "calibration_count": calibration_count,
                "calibration_file": calibration_file,
                "iterations": args.iters,
                "threads": args.threads,
            },
        )
        report = from_jsonable(QuantizeReport, data)
        original, variant = report.variants[0], report.variants[1]
        if variant.error:
            raise WorkbenchError(variant.error)
        out.parent.mkdir(parents=True, exist_ok=True)
        for produced in Path(variant.path).parent.glob(Path(variant.path).name + "*"):
            shutil.copyfile(produced, out.parent / produced.name.replace(Path(variant.path).name, out.name, 1))
    if args.json:
        data["output"] = str(out)
        print(json.dumps(data, indent=2))
        return 0
    assert variant.latency is not None and original.latency is not None and variant.accuracy is not None
    acc = variant.accuracy
    print(f"{out}  ({variant.label})")
    print(f"  size      {variant.size_bytes:,} bytes, {original.size_bytes / max(variant.size_bytes, 1):.2f}× smaller")
    print(
        f"  latency   median {variant.latency.median_ms:.3f} ms against {original.latency.median_ms:.3f} ms: "
        f"{variant.speedup:.2f}× (95 % CI {variant.speedup_low:.2f}–{variant.speedup_high:.2f}), "
        f"{report.threads} thread(s)"
    )
    top1 = f", top-1 agreement {acc.top1_agreement:.1%}" if acc.top1_agreement is not None else ""
    print(
        f"  accuracy  max abs error {acc.max_abs_error:.2e}, mean {acc.mean_abs_error:.2e}, "
        f"cosine {acc.cosine_similarity:.6f}{top1} on {report.held_out}"
    )
    print("  runs      " + (", ".join(f"{op} ×{n}" for op, n in variant.integer_ops.items()) or "no integer ops"))
    print(f"  data      calibration: {report.calibration}")
    for note in report.notes:
        print(f"  note      {note}")
    return 0


def serve_command(port: int, address: str) -> list[str]:
    """The streamlit command for these settings: its upload limit follows max_upload_mb, and hosted mode shows
    no error details (Streamlit reads both at start, before any page runs)."""
    settings = load_settings()
    return [
        sys.executable, "-m", "streamlit", "run", "streamlit_app.py",
        "--server.port", str(port), "--server.address", address, "--server.headless", "true",
        "--server.maxUploadSize", str(settings.max_upload_mb),
        "--client.showErrorDetails", "none" if settings.hosted else "full",
    ]  # fmt: skip


def _cmd_serve(args: argparse.Namespace) -> int:
    import os

    from core.settings import PROJECT_ROOT

    command = serve_command(args.port, args.address)
    settings = load_settings()
    print(
        f"ONNX Workbench ({settings.mode} mode) is starting: open http://localhost:{args.port} (Ctrl+C stops it)",
        file=sys.stderr,
    )
    os.chdir(PROJECT_ROOT)
    os.execv(sys.executable, command)
    return 0  # not reached


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="ONNX Workbench without a browser.")
    sub = parser.add_subparsers(dest="command", required=True)
    samples = sub.add_parser("samples", help="list the built-in sample models")
    samples.add_argument("--json", action="store_true", help="print JSON")
    samples.set_defaults(func=_cmd_samples)
    info = sub.add_parser("info", help="recognise a model file and print its record")
    info.add_argument("model", help="a path, 'model.onnx,model.onnx.data', or sample:NAME")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_cmd_info)
    inspect_ = sub.add_parser("inspect", help="decode an ONNX model: header bytes, opsets, nodes, weights")
    inspect_.add_argument("model", help="an .onnx path ('model.onnx,model.onnx.data' with external data)")
    inspect_.add_argument("--json", action="store_true", help="print JSON")
    inspect_.set_defaults(func=_cmd_inspect)
    export = sub.add_parser("export", help="export a PyTorch model to ONNX and verify it")
    export.add_argument("model", help="sample:NAME, a state_dict/safetensors file, a TorchScript archive or a .pt2")
    export.add_argument("-o", "--output", required=True, help="where to write the .onnx")
    export.add_argument("--exporter", choices=["dynamo", "legacy"], default="dynamo")
    export.add_argument("--opset", type=int, help="ONNX opset (default 18)")
    export.add_argument("--input", action="append", default=[], metavar="NAME=1,3,112,112", help="input shape")
    export.add_argument(
        "--dynamic",
        action="append",
        default=[],
        metavar="NAME:AXIS=label",
        help="a dynamic axis; replaces the model's default dynamic axes",
    )
    export.add_argument("--no-dynamic", action="store_true", help="export with every axis fixed")
    export.add_argument("--no-optimize", action="store_true", help="keep BatchNorm and constants unfolded")
    export.add_argument("--external-data", action="store_true", help="weights in a .onnx.data file beside the model")
    export.add_argument("--json", action="store_true", help="print the verification report as JSON")
    export.set_defaults(func=_cmd_export)
    partition = sub.add_parser("partition", help="which execution provider runs which node; optimization levels")
    partition.add_argument("model", help="an .onnx path, or a PyTorch model (exported first with its defaults)")
    partition.add_argument("--providers", help="in order of preference, e.g. cuda,cpu (default: cpu)")
    partition.add_argument("--level", default="all", choices=["disable", "basic", "extended", "layout", "all"])
    partition.add_argument("--simulate", help="simulated partitions, e.g. nnapi,coreml")
    partition.add_argument("--levels", action="store_true", help="also compare the graph at every optimization level")
    partition.add_argument("--out-dir", help="with --levels: keep the optimized model of each level here")
    partition.add_argument("--json", action="store_true", help="print JSON")
    partition.set_defaults(func=_cmd_partition)
    bench = sub.add_parser("bench", help="PyTorch eager against ONNX Runtime: latency, throughput, speedup")
    bench.add_argument("model", help="an .onnx path, or a PyTorch model (exported first with its defaults)")
    bench.add_argument("--torch", help="the PyTorch model behind an .onnx file (sample:NAME or a path)")
    bench.add_argument("--no-eager", action="store_true", help="measure ONNX Runtime only")
    bench.add_argument("--levels", default="disable,all", help="ORT optimization levels (default disable,all)")
    bench.add_argument("--providers", help="ORT execution providers to measure, e.g. cpu (default cpu)")
    bench.add_argument("--threads", help="intra-op threads to sweep, e.g. 1,2 (default: all cores)")
    bench.add_argument("--batch", help="batch sizes to sweep when the batch axis is dynamic, e.g. 1,8")
    bench.add_argument("--iters", type=int, default=200, help="measured calls per configuration (default 200)")
    bench.add_argument("--warmup", type=int, default=20, help="warm-up calls per configuration (default 20)")
    bench.add_argument("--budget", type=float, default=120.0, help="time budget for measuring, seconds")
    bench.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    bench.add_argument("--no-save", action="store_true", help="do not save the run in the history")
    bench.add_argument("--json", action="store_true", help="print JSON")
    bench.set_defaults(func=_cmd_bench)
    quantize = sub.add_parser("quantize", help="an INT8 or FP16 variant, with size, latency and accuracy")
    quantize.add_argument("model", help="an .onnx path, or a PyTorch model (exported first with its defaults)")
    quantize.add_argument("--mode", choices=["dynamic", "static", "fp16"], required=True)
    quantize.add_argument("--format", choices=["qdq", "qoperator"], default="qdq", help="static: QDQ or QOperator")
    quantize.add_argument("--method", choices=["minmax", "entropy", "percentile"], default="minmax")
    quantize.add_argument("--weight-type", choices=["qint8", "quint8"], default="qint8", help="dynamic: weights")
    quantize.add_argument("--no-keep-io", dest="keep_io", action="store_false", help="fp16: float16 inputs too")
    quantize.add_argument("--calibration", help="static: a sample count (default 32) or an .npz of real inputs")
    quantize.add_argument("-o", "--output", required=True, help="where to write the variant")
    quantize.add_argument("--iters", type=int, default=100, help="measured calls per model (default 100)")
    quantize.add_argument("--threads", type=int, default=0, help="intra-op threads (default: all cores)")
    quantize.add_argument("--json", action="store_true", help="print JSON")
    quantize.set_defaults(func=_cmd_quantize)
    serve = sub.add_parser("serve", help="start the web app with the upload limit and error details of the settings")
    serve.add_argument("--port", type=int, default=8501)
    serve.add_argument("--address", default="0.0.0.0")
    serve.set_defaults(func=_cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
