"""Upgrade an ONNX model to a newer opset with onnx's version converter, and check the new version.

Runs in the worker: the converter is native code, slow on large graphs, and can crash on a hostile model. The new
version is written beside nothing of the original's: its own file (and a copy of the external data, if any) in
the job's folder. It is checked by onnx's checker and strict shape inference, opened in ONNX Runtime, and run on
the input plan against the original wherever the original runs (core.upgrade.compare).
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import UpgradeError, brief
from core.i18n import _
from core.model.checks import CHECKER, onnx_checks
from core.model.inputs import make_inputs
from core.model.onnx_file import check_external_data
from core.notes import Note, warning
from core.runtime.refusals import missing_kernels, standard_opset
from core.upgrade import sentences as say
from core.upgrade.changes import describe_changes
from core.upgrade.compare import compare_versions
from core.upgrade.records import UpgradeReport, UpgradeRequest
from core.upgrade.repairs import align_legacy_broadcasts, repair_prelu_slopes

if TYPE_CHECKING:
    import onnx

__all__ = ["upgrade_model"]


def _silent(fraction: float, message: str) -> None:
    """Progress goes nowhere when nobody watches."""


def _target(model: onnx.ModelProto, opset: int) -> int:
    """The model's ai.onnx opset, once the asked ``opset`` is known to be a newer one the converter reaches."""
    import onnx

    before = standard_opset(model)
    newest = onnx.defs.onnx_opset_version()
    if before is None:
        raise UpgradeError(
            "The model imports no standard ONNX opset (ai.onnx), so there is nothing for the version converter to "
            "upgrade: its operators all belong to other domains."
        )
    if not before < opset <= newest:
        raise UpgradeError(
            f"The model is at opset {before}; an upgrade goes to a newer opset, from {before + 1} to {newest} (the "
            f"newest onnx {onnx.__version__} knows), not {opset}."
            if before < newest
            else f"The model is at opset {before}, the newest onnx {onnx.__version__} knows: there is nothing newer."
        )
    return before


_ASSERTION = re.compile(r"^\S+\.(?:cc|h):\d+: \w+: Assertion `.*?` failed: ")


def _convert(model: onnx.ModelProto, before: int, opset: int) -> onnx.ModelProto:
    import onnx
    from onnx import version_converter

    unknown = sorted(
        {n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx") and not onnx.defs.has(n.op_type)}
    )
    if unknown:
        raise UpgradeError(
            f"The model uses {brief(', '.join(unknown), 200)}, which onnx does not know as a standard operator "
            "(ai.onnx), so its version converter cannot upgrade it. Re-export the model from its source with a recent "
            "exporter."
        )
    try:
        converted = version_converter.convert_version(model, opset)
    except Exception as exc:  # the converter's adapters raise plain errors on what they cannot handle
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = _ASSERTION.sub("", first)  # its C++ source location and the assertion's code
        raise UpgradeError(
            f"onnx's version converter could not upgrade the model from opset {before} to {opset}: {brief(first, 300)}."
            " Try another target opset (a lower one needs fewer of its adapters), or re-export the model from its "
            "source with a recent exporter."
        ) from None
    # the converter keeps the IR version; an opset needs at least its own (an IR-3 model's new initializers, such
    # as Pad-11's pads, would have to be graph inputs there too)
    converted.ir_version = max(converted.ir_version, onnx.helper.find_min_ir_version_for(converted.opset_import))
    return converted


def _file_name(request: UpgradeRequest, source: Path) -> str:
    name = request.file_name or f"{source.stem}.opset{request.opset}.onnx"
    if not re.fullmatch(r"[^/\\\x00]{1,200}", name) or name in (".", ".."):
        raise UpgradeError(f"'{brief(name)}' is not a file name (no slashes, at most 200 characters).")
    return name


def _write(converted: onnx.ModelProto, source: Path, data_files: list[Path], out: Path, name: str) -> list[str]:
    """The new version into ``out``, with a copy of the original's external data (the converter leaves those
    tensors where they were, so their locations stay right beside the new file)."""
    import onnx

    out.mkdir(parents=True, exist_ok=True)
    target = out / name
    onnx.save_model(converted, str(target))
    files = [str(target)]
    for data in data_files:
        copy = out / data.relative_to(source.parent)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data, copy)
        files.append(str(copy))
    return files


def _kernels_note(converted: onnx.ModelProto, opset: int) -> list[Note]:
    lacking = [m.text for m in missing_kernels(converted) if m.domain == ""]
    if not lacking:
        return []
    return [warning(say.NO_KERNEL, opset=opset, ops=", ".join(lacking))]


def upgrade_model(request: UpgradeRequest, progress: Callable[[float, str], None] | None = None) -> UpgradeReport:
    """Upgrade the model to ``request.opset``, write the new version into ``request.out_dir``, and check it."""
    import onnx

    report_progress = progress or _silent
    started = time.perf_counter()
    source = Path(request.path)
    original = onnx.load_model(str(source), load_external_data=False)
    data_files = check_external_data(original, source.parent)  # before any data file is opened
    before = _target(original, request.opset)
    name = _file_name(request, source)
    converting = _("Converting from opset {before} to {after} with onnx's version converter")
    report_progress(0.05, converting.format(before=before, after=request.opset))
    working = onnx.ModelProto()
    working.CopyFrom(original)
    repairs = align_legacy_broadcasts(working)  # what the converter would carry over wrongly, put right first
    converted = _convert(working, before, request.opset)
    repairs += repair_prelu_slopes(original, converted)
    files = _write(converted, source, data_files, Path(request.out_dir), name)
    target = Path(files[0])
    report_progress(0.4, _("Checking the new version (checker, shape inference)"))
    changes, unchanged = describe_changes(original, converted, (before, request.opset))
    checks = onnx_checks(target, say.VALID)[0]
    report_progress(0.55, _("Running the new version and the original on the input plan"))
    feed = make_inputs(request.inputs, 1, seed=0)
    size = source.stat().st_size + sum(p.stat().st_size for p in data_files)
    compared = compare_versions(original, source, size, target, feed, request.reference_budget_s)
    checks += compared.checks
    by_name = {c.name.key: c.ok for c in checks}
    ran = by_name.get(say.RUNS_IN_ORT, False)
    valid = by_name[CHECKER] and (compared.compared_with is not None or all(by_name.values()))
    report_progress(1.0, _("Done"))
    return UpgradeReport(
        ok=ran and valid and all(c.ok for c in compared.checks),
        path=str(target),
        files=files,
        model=source.name,
        opset_before=before,
        opset_after=request.opset,
        ir_before=int(original.ir_version),
        ir_after=int(converted.ir_version),
        changes=[*repairs, *changes],
        unchanged_nodes=unchanged,
        checks=checks,
        compared_with=compared.compared_with,
        diffs=compared.diffs,
        notes=[*compared.notes, *_kernels_note(converted, request.opset)],
        seconds=time.perf_counter() - started,
    )
