"""Calibration and held-out data: an uploaded .npz checked against the model's inputs, or generated from a seed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from core.access import ReadPath
from core.errors import QuantizeError
from core.i18n import N_, _, pgettext
from core.model.arrays import check_npz, listed
from core.model.inputs import BenchInput, make_inputs
from core.model.records import format_shape
from core.notes import Note, note

__all__ = ["CalibrationData", "CalibrationReader", "CalibrationRequest", "check_calibration", "split_data"]

# where the data came from, and what a reader should know of it (core.notes: said where shown)
FROM_NPZ = N_("{count} samples from the uploaded .npz")
LAST_OF_NPZ = N_("the last {count} samples of the uploaded .npz (kept out of calibration)")
GENERATED = N_("{count} generated inputs (seed {seed}, {shapes})")
GENERATED_NPZ_SMALL = N_("{count} generated inputs (seed {seed}, {shapes}); the .npz is too small to split")
GENERATED_CALIBRATION = N_(
    "Calibration used generated inputs: static quantization's scales are only as good as the data they were measured "
    "on. Upload an .npz of real inputs for scales (and accuracy) you can trust."
)
ONE_IMAGE = N_(
    "{names} take(s) the one image you gave, in calibration and held-out inputs alike: accuracy is then measured on "
    "data the calibration saw. An .npz of many real inputs gives a fair check."
)


def _samples_from_npz(path: str, specs: list[BenchInput]) -> list[dict[str, Any]]:
    """Split an .npz of calibration data into model inputs, after checking names, dtypes and shapes.

    Each array is named after an input and holds N samples along its first axis: the model's batch axis
    (one sample per call) or, for a fixed batch b, N/b calls of b samples.
    """
    import numpy as np

    check_npz(path)
    try:
        with np.load(path, allow_pickle=False) as archive:  # pickled (object) arrays are refused, never loaded
            arrays = {name: archive[name] for name in archive.files}
    except Exception as exc:
        raise QuantizeError(
            _("The calibration file is not a readable .npz archive of arrays: {reason}").format(reason=exc)
        ) from exc
    names = [s.name for s in specs]
    problems = []
    missing = [n for n in names if n not in arrays]
    extra = [n for n in arrays if n not in names]
    if missing:
        problems.append(_("no array for input(s) {names}").format(names=listed(missing)))
    if extra:
        problems.append(
            _("array(s) {names} match no input (the inputs are: {inputs})").format(
                names=listed(extra), inputs=listed(names)
            )
        )
    counts = set()
    for spec in specs:
        array = arrays.get(spec.name)
        if array is None:
            continue
        if array.dtype != np.dtype(spec.dtype):
            problems.append(
                _("'{name}' is {dtype}, the model takes {expected} (convert with .astype(np.{expected}))").format(
                    name=spec.name, dtype=array.dtype, expected=spec.dtype
                )
            )
        per_call = 1 if spec.batch_axis is not None else spec.shape[0] if spec.shape else 1
        expected = spec.shape[1:] if spec.shape else []
        if array.ndim != len(spec.shape) or list(array.shape[1:]) != expected:
            problems.append(
                _("'{name}' has shape {shape}; expected [N, {dims}] (N samples along the first axis)").format(
                    name=spec.name, shape=list(array.shape), dims=", ".join(map(str, expected))
                )
            )
        elif array.shape[0] % per_call:
            problems.append(
                _("'{name}' holds {count} samples, not a multiple of the batch {batch}").format(
                    name=spec.name, count=array.shape[0], batch=per_call
                )
            )
        else:
            counts.add(array.shape[0] // per_call)
    if len(counts) > 1:
        problems.append(_("the arrays hold different numbers of samples ({counts})").format(counts=sorted(counts)))
    if problems:
        raise QuantizeError(
            _("The calibration data does not fit the model: {problems}.").format(
                problems=pgettext("clauses", "; ").join(problems)
            )
        )
    calls = counts.pop() if counts else 0
    if calls == 0:
        raise QuantizeError(_("The calibration file holds no samples."))
    samples = []
    for i in range(calls):
        feed = {}
        for spec in specs:
            per_call = 1 if spec.batch_axis is not None else spec.shape[0]
            feed[spec.name] = arrays[spec.name][i * per_call : (i + 1) * per_call]
        samples.append(feed)
    return samples


@dataclass(frozen=True, kw_only=True)
class CalibrationRequest:
    """Whether the .npz at ``path`` fits the plan ``inputs`` as calibration data."""

    path: ReadPath
    inputs: list[BenchInput]


def check_calibration(request: CalibrationRequest) -> int:
    """The number of calibration calls in the file, or a QuantizeError saying why it does not fit."""
    return len(_samples_from_npz(request.path, request.inputs))


def _generated(specs: list[BenchInput], count: int, seed: int) -> list[dict[str, Any]]:
    return [make_inputs(specs, 1, seed + i) for i in range(count)]


class CalibrationReader:
    """ORT's CalibrationDataReader protocol over a list of feeds."""

    def __init__(self, samples: list[dict[str, Any]]) -> None:
        self._samples = samples
        self._iter: Iterator[dict[str, Any]] = iter(samples)

    def get_next(self) -> dict[str, Any] | None:
        return next(self._iter, None)

    def rewind(self) -> None:
        self._iter = iter(self._samples)


@dataclass(kw_only=True)
class CalibrationData:
    """The feeds that set static quantization's scales, and the held-out feeds accuracy is measured on."""

    calibration: list[dict[str, Any]]
    held_out: list[dict[str, Any]]
    calibration_text: Note | str  # where they came from, as a note ("" when nothing is calibrated)
    held_out_text: Note


def split_data(
    specs: list[BenchInput],
    calibration_file: str,
    count: int,
    held_out: int,
    seed: int,
    notes: list[Note | str],
    static: bool = True,
) -> CalibrationData:
    """Calibration data from the .npz (its last quarter held out when it is large enough) or generated from
    ``seed``; held-out inputs always come from data the calibration never saw. Without a ``static`` variant the
    same inputs are made (FP16 checks its conversion on them), but nothing is calibrated, so nothing says so."""
    data = _split(specs, calibration_file, count, held_out, seed)
    if not static:  # dynamic INT8 finds its activation ranges at run time; FP16 has none to find
        data.calibration_text = ""
        return data
    if not calibration_file:
        notes.append(note(GENERATED_CALIBRATION))
        fixed = [s.name for s in specs if s.real_data]
        if fixed:
            notes.append(note(ONE_IMAGE, names=listed(fixed)))
    return data


def _split(specs: list[BenchInput], calibration_file: str, count: int, held_out: int, seed: int) -> CalibrationData:
    other_seed = seed + 100_000
    shapes = "; ".join(f"{s.name} {format_shape(list(s.shape))}" for s in specs)
    if calibration_file:
        samples = _samples_from_npz(calibration_file, specs)
        if len(samples) >= 8:
            cut = max(1, len(samples) // 4)
            return CalibrationData(
                calibration=samples[:-cut],
                held_out=samples[-cut:],
                calibration_text=note(FROM_NPZ, count=len(samples) - cut),
                held_out_text=note(LAST_OF_NPZ, count=cut),
            )
        return CalibrationData(
            calibration=samples,
            held_out=_generated(specs, held_out, other_seed),
            calibration_text=note(FROM_NPZ, count=len(samples)),
            held_out_text=note(GENERATED_NPZ_SMALL, count=held_out, seed=str(other_seed), shapes=shapes),
        )
    return CalibrationData(
        calibration=_generated(specs, count, seed),
        held_out=_generated(specs, held_out, other_seed),
        calibration_text=note(GENERATED, count=count, seed=str(seed), shapes=shapes),
        held_out_text=note(GENERATED, count=held_out, seed=str(other_seed), shapes=shapes),
    )
