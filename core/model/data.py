"""Real data for the input plan: an image made into an image-shaped input, in the worker (the image file is
untrusted bytes like any upload), with the resize and the normalisation stated."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from core.access import ReadPath, WritePath
from core.errors import BenchmarkError, PlanTooLargeError, brief
from core.i18n import N_, _, number
from core.model.arrays import check_npz, listed
from core.model.inputs import DATA_FILE, FROM_DATA_FILE, BenchInput, input_bytes, readable_bytes, shape_at
from core.notes import note

__all__ = [
    "NORMALISATIONS",
    "ImageRequest",
    "NpzRequest",
    "check_image_fits",
    "image_bytes",
    "image_input",
    "image_layout",
    "npz_inputs",
]

MAX_IMAGE_PIXELS = 50_000_000  # a header that claims more is refused before any pixel is decoded
MAX_IMAGE_SIDE = 2**31 - 1  # Pillow sizes an image in C ints: a side past this is no image it can make
_BAND_BYTES = 16 << 20  # the float64 arithmetic is done a band of one channel's rows at a time, in arrays this size
# why an input holds real data (a note of the plan, core.notes)
FROM_IMAGE = N_("{file}, {width}×{height} resized to {to_width}×{to_height} (bilinear), {normalisation}")
FROM_ARRAY = N_("array '{name}' of {file}")
# key -> (what the page says, marked: translated where shown; mean, std) over values scaled to [0, 1]
NORMALISATIONS: dict[str, tuple[str, tuple[float, ...], tuple[float, ...]]] = {
    "imagenet": (N_("scaled to [0, 1], then ImageNet's mean and std"), (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "unit": (N_("scaled to [0, 1]"), (0.0,), (1.0,)),
    "signed": (N_("scaled to [-1, 1]"), (0.5,), (0.5,)),
    "raw": (N_("pixel values 0–255"), (0.0,), (1 / 255,)),
}


def image_layout(spec: BenchInput) -> str:
    """ "NCHW" or "NHWC" when ``spec`` (a float input of rank 4 with 1–4 channels) can take an image, else ""."""
    shape = spec.shape
    if len(shape) != 4 or not spec.dtype.startswith("float") or spec.role:  # a language model's cache is no image
        return ""
    if shape[1] in (1, 3, 4):
        return "NCHW"
    if shape[3] in (1, 3, 4):
        return "NHWC"
    return ""


def _image_size(spec: BenchInput, layout: str) -> tuple[int, int, int]:
    """Channels, height and width of the picture an image-shaped input is made from."""
    _batch, *dims = spec.shape if layout == "NCHW" else [spec.shape[0], spec.shape[3], spec.shape[1], spec.shape[2]]
    channels, height, width = (int(d) for d in dims)
    return channels, height, width


def image_bytes(spec: BenchInput) -> int:
    """The memory making the image-shaped ``spec`` from a picture takes at its peak, in Python ints (no shape
    overflows): the picture resized to the plan (Pillow's copy and its bytes while they are handed over, about two
    bytes a value), the input's own array, and the few bands of float64 it is filled with (3×8000×8000 float32:
    943 MiB measured, 1,163 MiB counted here)."""
    channels, height, width = _image_size(spec, image_layout(spec))
    array = input_bytes(dataclasses.replace(spec, batch_axis=None, shape=[1, *spec.shape[1:]]))  # made at batch 1
    return channels * height * width * 2 + array + 4 * _BAND_BYTES


def check_image_fits(spec: BenchInput, memory_bytes: int | None, where: str = "") -> None:
    """Refuse, before any picture is opened, an image-shaped ``spec`` that Pillow cannot size, or that no picture
    can be made into in ``memory_bytes`` (a worker's memory limit, None where it is not known; ``where`` says
    which setting it is), naming the input, its shape, its size and what making it takes."""
    layout = image_layout(spec)
    if not layout:
        return
    _channels, height, width = _image_size(spec, layout)
    shape = brief(shape_at(spec), 200)
    needed = image_bytes(spec)
    if memory_bytes is not None and needed > memory_bytes:
        raise PlanTooLargeError(
            _(
                "Input '{name}' is {dtype} {shape}: {size}, and making it from a picture takes {needed}; a worker "
                "may use at most {limit}{where}. No picture was read: choose smaller dims in the input plan, then "
                "give the picture."
            ).format(
                name=brief(spec.name),
                dtype=spec.dtype,
                shape=shape,
                size=readable_bytes(input_bytes(spec)),
                needed=readable_bytes(needed),
                limit=readable_bytes(memory_bytes),
                where=where,
            )
        )
    if min(height, width) < 1 or max(height, width) > MAX_IMAGE_SIDE:
        raise PlanTooLargeError(
            _(
                "Input '{name}' is {dtype} {shape}: no image is made more than {most} pixels high or wide, or "
                "less than 1. No picture was read: choose other dims in the input plan, then give the picture."
            ).format(name=brief(spec.name), dtype=spec.dtype, shape=shape, most=number(MAX_IMAGE_SIDE))
        )


@dataclass(frozen=True, kw_only=True)
class ImageRequest:
    """Input ``spec`` of the plan, its values taken from the picture ``image``."""

    image: ReadPath
    spec: BenchInput
    out_dir: WritePath
    normalise: str = "imagenet"  # a key of NORMALISATIONS
    memory_bytes: int | None = None  # the worker's memory limit, checked before the picture is opened
    where: str = ""  # which setting that limit is, for the refusal


@dataclass(frozen=True, kw_only=True)
class NpzRequest:
    """The plan ``inputs`` with real data from the .npz at ``path``."""

    path: ReadPath
    inputs: list[BenchInput]
    out_dir: WritePath


def image_input(request: ImageRequest) -> BenchInput:
    """The request's input with its values taken from its image: decoded, converted to the input's channels,
    resized to its height and width, normalised, written as an .npy in ``out_dir``. Runs in the worker."""
    import numpy as np
    from PIL import Image

    image, spec, out_dir, normalise = request.image, request.spec, request.out_dir, request.normalise

    layout = image_layout(spec)
    if not layout:
        raise BenchmarkError(f"Input '{spec.name}' ({spec.dtype}, {spec.shape}) is not shaped like an image.")
    if normalise not in NORMALISATIONS:
        raise BenchmarkError(f"Unknown normalisation {normalise!r}; choose from {', '.join(NORMALISATIONS)}.")
    check_image_fits(spec, request.memory_bytes, request.where)  # before a byte of the picture is read
    channels, height, width = _image_size(spec, layout)
    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    try:
        with Image.open(image) as opened:
            size = opened.size
            if size[0] * size[1] > MAX_IMAGE_PIXELS:
                raise BenchmarkError(f"The image is {size[0]}×{size[1]}; at most {MAX_IMAGE_PIXELS:,} pixels are read.")
            mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
            pixels = np.asarray(opened.convert(mode).resize((width, height), Image.Resampling.BILINEAR))
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise BenchmarkError(f"The file could not be read as an image ({type(exc).__name__}: {exc}).") from None
    label, mean, std = NORMALISATIONS[normalise]
    pixels = pixels.reshape(height, width, channels)  # bytes: the float64 arithmetic is done a band at a time
    means, stds = np.resize(np.asarray(mean), channels), np.resize(np.asarray(std), channels)
    array = np.empty((1, channels, height, width) if layout == "NCHW" else (1, height, width, channels), spec.dtype)
    rows = max(1, _BAND_BYTES // (width * 8))
    for top in range(0, height, rows):
        for channel in range(channels):
            band = (pixels[top : top + rows, :, channel] / 255.0 - means[channel]) / stds[channel]
            if layout == "NCHW":
                array[0, channel, top : top + rows] = band
            else:
                array[0, top : top + rows, :, channel] = band
    target = Path(out_dir) / f"{spec.name.replace('/', '_')[:60]}.npy"
    np.save(target, array)
    why = note(
        FROM_IMAGE,
        file=Path(image).name,
        width=str(size[0]),
        height=str(size[1]),
        to_width=str(width),
        to_height=str(height),
        normalisation=note(label),
    )
    return dataclasses.replace(spec, values="data", data=str(target), why=why)


def npz_inputs(request: NpzRequest) -> list[BenchInput]:
    """The plan with real data from an .npz (one array per input, named after it; the inputs it lacks keep their
    values): each array is checked (dtype, the model's fixed dims), its first sample taken along the batch axis,
    and written as an .npy in ``out_dir``. Its open dims take the array's sizes. Runs in the worker."""
    import numpy as np

    path, inputs, out_dir = request.path, request.inputs, request.out_dir

    check_npz(path, "data file", BenchmarkError)
    with np.load(path, allow_pickle=False) as archive:  # object arrays were refused above, never loaded
        arrays = {name: archive[name] for name in archive.files}
    names = [s.name for s in inputs]
    extra = [n for n in arrays if n not in names]
    if extra or not arrays:
        raise BenchmarkError(f"The data file's arrays {listed(extra)} match no input; the inputs are: {listed(names)}.")
    plan = []
    for spec in inputs:
        array = arrays.get(spec.name)
        if array is None:
            plan.append(spec)
            continue
        plan.append(_from_array(spec, array, Path(path).name, Path(out_dir)))
    return plan


def _from_array(spec: BenchInput, array: object, file: str, out: Path) -> BenchInput:
    import numpy as np

    data = np.asarray(array)
    if spec.dtype == "str" and data.dtype.kind != "U":
        raise BenchmarkError(
            f"'{spec.name}' in the data file is {data.dtype}; the model takes strings, a tensor(string) (save them "
            "with np.array(texts, dtype=str))."
        )
    if data.dtype != np.dtype(spec.dtype) and spec.dtype != "str":
        raise BenchmarkError(
            f"'{spec.name}' in the data file is {data.dtype}; the model takes {spec.dtype} (save it with "
            f".astype(np.{spec.dtype}))."
        )
    if data.ndim != len(spec.shape):
        raise BenchmarkError(f"'{spec.name}' in the data file has {data.ndim} dims; the input has {len(spec.shape)}.")
    open_axes = {d.axis for d in spec.free}
    wrong = [a for a in range(data.ndim) if a not in open_axes and data.shape[a] != spec.shape[a]]
    if wrong:
        raise BenchmarkError(
            f"'{spec.name}' in the data file has shape {list(data.shape)}; the model fixes axis {wrong[0]} at "
            f"{spec.shape[wrong[0]]}."
        )
    if spec.batch_axis is not None and data.shape[spec.batch_axis] > 1:
        data = np.take(data, [0], axis=spec.batch_axis)  # the batch sweep repeats it
    target = out / f"{spec.name.replace('/', '_')[:60]}.npy"
    np.save(target, data)
    shape = [int(d) for d in data.shape]
    free = [
        dataclasses.replace(d, value=shape[d.axis], why=note(FROM_DATA_FILE), source=note(DATA_FILE)) for d in spec.free
    ]
    why = note(FROM_ARRAY, name=spec.name, file=file)
    return dataclasses.replace(spec, shape=shape, free=free, values="data", data=str(target), why=why)
