"""What an open dim of an input is, and the size of its kind: from the model's metadata (Ultralytics' ``imgsz``,
a text recogniser's ``character`` list), from the dim's name (``image_width``, ``seq_len``, ``frames``), from the
kind of input (an image, a line of text, audio, a sequence); a dim none of them explains has no size at all
until the user gives one (NO_HINT), so that nothing is measured on a made-up size.
"""

from __future__ import annotations

import re

from core.i18n import N_
from core.model.graph_uses import WAVEFORM
from core.model.records import ModelRecord, TensorSpec
from core.notes import Note, note

__all__ = [
    "NO_HINT",
    "SAMPLE_RATE",
    "dim_kind",
    "what_made",
    "image_layout",
    "is_audio",
    "open_dim_default",
    "state_batch",
]

NO_HINT = N_("no hint")  # the source of a dim nothing explains: the plan cannot run until it is given
IMAGE_CHANNELS = {1, 2, 3, 4}
CLASSIFIER_SIDE, DETECTOR_SIDE, SEQUENCE, AUDIO_CHUNK = 224, 640, 128, 512
TEXT_HEIGHT, TEXT_WIDTH = 48, 320  # a line of text as PaddleOCR's recognisers take it
DIRECTION_HEIGHT, DIRECTION_WIDTH = 48, 192  # a line of text as PaddleOCR's direction classifier (0° or 180°) takes it
TEXT_MAX_HEIGHT = 64  # an image this low with a free width is a line of text (CRNN: 32, PaddleOCR: 48, ddddocr: 64)
FRAMES, SECOND_OF_AUDIO = 100, 16_000  # a second of 10 ms frames; a second of samples at 16 kHz
LOOP_TRIPS = 16  # the iterations a loop's free trip count gets: a few, so a step's cost shows without a long wait
SAMPLE_RATE = re.compile(r"(^|[^a-z])(sr|sample_?rate|sampling_?rate|rate)($|[^a-z])", re.I)
_AUDIO = re.compile(r"audio|wav|speech|pcm|waveform|samples|signal|^input_values$", re.I)  # input_values: HF's
_BOXES = re.compile(r"(^|[^a-z])(boxes|bboxes|bbox|dets|detections)([^a-z]|$)", re.I)  # a detector's outputs
MIN_RATE, MAX_RATE = 1_000, 384_000  # a sample rate in metadata outside these is not believed
_STATE = re.compile(r"state|hidden|^h0?$|^c0?$|^h_|^c_", re.I)
# the kind of a dim, by the words of its name (checked in this order)
_NAMES = {
    "height": {"h", "height", "imgh", "imageh", "imageheight", "ih", "inh"},
    "width": {"w", "width", "imgw", "imagew", "imagewidth", "iw", "inw"},
    "batch": {"batch", "batchsize", "bs", "b", "n", "nbatch"},
    "samples": {"samples", "nsamples", "numsamples", "audio", "wav", "waveform"},
    "time": {"time", "t", "frames", "frame", "nframes", "numframes", "timesteps", "steps"},
    "sequence": {"seq", "seqlen", "sequence", "len", "length", "tokens", "ntokens", "numtokens", "chars"},
}
# why an open dim got its size, and where that came from: templates of the notes a plan keeps (core.notes), said in
# the reader's language where the plan is shown (a size is written as the plan writes it: 16000, never 16,000)
MODEL_SIZE = {
    "height": N_("image height: {value}, what the model was made for ({height}×{width})"),
    "width": N_("image width: {value}, what the model was made for ({height}×{width})"),
}
TEXT_LINE = {
    "height": N_("text line height: {value}, what text recognisers take (PaddleOCR's take {height}×{width})"),
    "width": N_("text line width: {value}, what text recognisers take (PaddleOCR's take {height}×{width})"),
}
SQUARE = {
    "height": N_("image height: {value}, as its fixed width (a square image)"),
    "width": N_("image width: {value}, as its fixed height (a square image)"),
}
DIRECTION = {
    "height": N_("text line height: {value}, what PaddleOCR's text direction classifier takes ({height}×{width})"),
    "width": N_("text line width: {value}, what PaddleOCR's text direction classifier takes ({height}×{width})"),
}
CLASSIFIER = {
    "height": N_("image height: {value}, a classifier's usual input (one output of scores)"),
    "width": N_("image width: {value}, a classifier's usual input (one output of scores)"),
}
DETECTOR = {
    "height": N_("image height: {value}, a detector's usual input"),
    "width": N_("image width: {value}, a detector's usual input"),
}
MADE_FOR = {
    "height": N_("image height: {value}, what the model was made for"),
    "width": N_("image width: {value}, what the model was made for"),
}
SIDE = {"height": N_("image height: {value}"), "width": N_("image width: {value}")}
AUDIO_SAMPLES = N_("samples: {value}, a 32 ms chunk at 16 kHz (what streaming audio models take)")
AUDIO_SECOND = N_("audio samples: {value}, one second of raw audio at {rate} Hz")
RAW_AUDIO_NAMED = N_("the kind of input (raw audio, by its name '{name}')")
RAW_AUDIO_CONV = N_("the kind of input (raw audio: a strided 1-D convolution opens on it, as a speech encoder's does)")
RATE_METADATA = N_("metadata '{key}' (the model's sample rate)")
LOOP_TRIP_COUNT = N_("a loop's trip count: {value} (how many times its body runs; set it to what your data has)")
A_LOOP = N_("the graph (a Loop or Scan iterates over this axis: its trip count, not a batch)")
DETECTOR_NMS = N_("the kind of model (a detector: NonMaxSuppression in its graph)")
DETECTOR_BOXES = N_("the kind of model (a detector: its output '{name}' holds boxes)")
SEQUENCE_LENGTH = N_("sequence length: {value}")
NOTHING_SAYS = N_("nothing in the model says what it is: give it a size")
# where a size came from
IMGSZ = N_("metadata 'imgsz'")
CHARACTER = N_("metadata 'character' (a text recogniser)")
ITS_NAME = N_("its name '{symbol}'")
KIND_OF_INPUT = N_("the kind of input")
AN_IMAGE = N_("the kind of input (an image)")
A_LINE_OF_TEXT = N_("the kind of input (a line of text)")
A_DIRECTION_CLASSIFIER = N_(
    "the kind of model (a PaddlePaddle classifier of two classes: a text line's direction, 0° or 180°)"
)
STREAMING_AUDIO = N_("the kind of input (streaming audio)")
ITS_PLACE = N_("its place (axis 1 of a sequence)")
BOTH = N_("{first}, {second}")  # two sources: its name, and the kind of input
_SIZES = {  # kind -> (size, why) for a dim named so outside an image
    "batch": (1, N_("batch: 1")),
    "samples": (SECOND_OF_AUDIO, N_("audio samples: {value}, a second at 16 kHz")),
    "time": (FRAMES, N_("time steps: {value}, a second of 10 ms frames")),
    "sequence": (SEQUENCE, SEQUENCE_LENGTH),
}


def dim_kind(symbol: str | None) -> str:
    """What a dim's name says it is: height, width, batch, samples, time, sequence, or "" (``image_width``,
    ``img_h``, ``seq_len``, ``num_tokens``, ``frames``, ``N``; ``s43`` and ``unk__30`` say nothing)."""
    if not symbol:
        return ""
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", symbol).lower())
    words += ["".join(words)]  # "img_h" also as "imgh"
    return next((kind for kind, names in _NAMES.items() if any(w in names for w in words)), "")


_GENERATED = (  # names tools make up for a dim, and what made them: none of them says what the dim is
    (re.compile(r"^unk__\d+$"), N_("a name onnx's shape inference made up for a size it could not work out")),
    (
        re.compile(r"(^|\.)DynamicDimension\.\d+$"),
        N_("a name paddle2onnx gives every dim the Paddle model left open"),
    ),
    (re.compile(r"^s\d+$"), N_("a symbol torch.export made for a dynamic dim (the program did not keep its name)")),
    (re.compile(r"^(sym_size_int|sym_size)(_\d+)?$"), N_("a size torch.export read from a tensor at run time")),
)  # marked for the catalog, translated where shown (ui/cards.py)


def what_made(symbol: str | None) -> str:
    """The tool that made up a dim's name, in words (untranslated: the caller translates), "" for a person's."""
    if not symbol:
        return ""
    return next((what for pattern, what in _GENERATED if pattern.search(symbol)), "")


def image_layout(shape: list[int | str]) -> str:
    """ "NCHW" or "NHWC" when a rank-4 input looks like images (1–4 channels) with a free height or width."""
    if len(shape) != 4:
        return ""
    free = [not (isinstance(d, int) and d > 0) for d in shape]
    if isinstance(shape[1], int) and shape[1] in IMAGE_CHANNELS and (free[2] or free[3]):
        return "NCHW"
    if isinstance(shape[3], int) and shape[3] in IMAGE_CHANNELS and (free[1] or free[2]):
        return "NHWC"
    return ""


def state_batch(spec: TensorSpec, axis: int, record: ModelRecord) -> bool:
    """An unnamed axis 1 of a recurrent state ([layers × directions, batch, hidden], as ONNX's LSTM and GRU
    keep it) while another input has its batch on axis 0."""
    shape = spec.shape or []
    return (
        axis == 1
        and len(shape) == 3
        and isinstance(shape[0], int)
        and 0 < shape[0] <= 8
        and isinstance(shape[2], int)
        and shape[2] > 0
        and any(
            s is not spec and s.shape and len(s.shape) > 1 and not (isinstance(s.shape[0], int) and s.shape[0] > 0)
            for s in record.inputs
        )
    )


def is_audio(record: ModelRecord) -> bool:
    """A model of audio: an integer sample-rate input, a float [batch, samples] input named like audio or that a
    strided 1-D convolution opens on (raw audio into a speech encoder), or one beside a recurrent state (a
    streaming model)."""
    rate = any(SAMPLE_RATE.search(s.name) and not s.dtype.startswith("float") for s in record.inputs)
    waves = [s for s in record.inputs if s.dtype.startswith("float") and s.shape is not None and len(s.shape) == 2]
    heard = any(_AUDIO.search(s.name) or s.use == WAVEFORM for s in waves)
    return rate or bool(waves and (_streaming(record) or heard))


def _streaming(record: ModelRecord) -> bool:
    """A recurrent state among the inputs: the model takes audio a chunk at a time."""
    return any(_STATE.search(s.name) and s.shape is not None and len(s.shape) == 3 for s in record.inputs)


def _sample_rate(record: ModelRecord) -> tuple[int, str]:
    """(rate, the metadata key that says it) of a model whose metadata names its sample rate, else (16000, "")."""
    for key, value in record.metadata.entries.items():
        if SAMPLE_RATE.search(key) and value.strip().isdigit() and MIN_RATE <= int(value.strip()) <= MAX_RATE:
            return int(value.strip()), key
    return SECOND_OF_AUDIO, ""


def _audio_clip(spec: TensorSpec, record: ModelRecord) -> tuple[int, Note, Note]:
    """One second of raw audio at the model's sample rate (16 kHz unless its metadata says another)."""
    rate, key = _sample_rate(record)
    if key:
        source = note(RATE_METADATA, key=key)
    elif spec.use == WAVEFORM:
        source = note(RAW_AUDIO_CONV)
    else:
        source = note(RAW_AUDIO_NAMED, name=spec.name)
    return rate, _size(AUDIO_SECOND, rate, rate=rate), source


def _detector(record: ModelRecord) -> Note | None:
    """Why the model is a detector (a NonMaxSuppression anywhere in its graphs, or an output that holds boxes:
    named so, or [..., 4] beside outputs of the same count), else None."""
    if record.suppresses_boxes:
        return note(DETECTOR_NMS)
    for out in record.outputs:
        shape = out.shape or []
        per_detection = [o for o in record.outputs if o is not out and o.shape == shape[:1]]  # [num, 4] beside [num]
        counted = len(shape) == 2 and isinstance(shape[0], str) and bool(per_detection)
        if _BOXES.search(out.name) or (shape and shape[-1] == 4 and (len(shape) >= 3 or counted)):
            return note(DETECTOR_BOXES, name=out.name)
    return None


def _text_direction(record: ModelRecord) -> bool:
    """PaddleOCR's text direction classifier, as rapidocr and PaddleOCR ship it: a PaddlePaddle export whose one
    output scores two classes (the line is upright or upside down). It takes a line of text, 48×192, not a
    classifier's 224×224 (5.4 times the pixels)."""
    outputs = record.outputs
    return (
        (record.producer or "").startswith("PaddlePaddle")
        and len(outputs) == 1
        and outputs[0].shape is not None
        and len(outputs[0].shape) == 2
        and outputs[0].shape[1] == 2
    )


def _size(template: str, value: int, **values: str | int) -> Note:
    """Why a dim got ``value``: sizes are written as the plan writes them (16000, never 16,000)."""
    return note(template, value=str(value), **{k: str(v) for k, v in values.items()})


def _image_side(shape: list[int | str], axis: int, symbol: str | None, record: ModelRecord) -> tuple[int, Note, Note]:
    """The size of an image input's free height or width: what its metadata says it was made for, a line of text's,
    a square's when the other side is fixed, else a classifier's or a detector's usual side."""
    h_axis, w_axis = (2, 3) if image_layout(shape) == "NCHW" else (1, 2)
    side = "height" if axis == h_axis else "width"
    meta = record.metadata
    if len(meta.image_size) == 2:
        height, width = meta.image_size
        value = height if side == "height" else width
        return value, _size(MODEL_SIZE[side], value, height=height, width=width), note(IMGSZ)
    other = shape[w_axis if side == "height" else h_axis]
    fixed = other if isinstance(other, int) and other > 0 else None
    named = note(ITS_NAME, symbol=symbol) if symbol and dim_kind(symbol) == side else None
    if meta.text_line or (side == "width" and fixed is not None and fixed <= TEXT_MAX_HEIGHT):
        value = TEXT_HEIGHT if side == "height" else TEXT_WIDTH
        why = _size(TEXT_LINE[side], value, height=TEXT_HEIGHT, width=TEXT_WIDTH)
        kind = note(CHARACTER) if meta.text_line else note(A_LINE_OF_TEXT)
        return value, why, kind if named is None else note(BOTH, first=named, second=kind)
    if fixed is not None:
        return fixed, _size(SQUARE[side], fixed), named or note(KIND_OF_INPUT)
    if _text_direction(record):
        value = DIRECTION_HEIGHT if side == "height" else DIRECTION_WIDTH
        why = _size(DIRECTION[side], value, height=DIRECTION_HEIGHT, width=DIRECTION_WIDTH)
        return value, why, named or note(A_DIRECTION_CLASSIFIER)
    detector = _detector(record)
    if detector is not None:
        source = note(BOTH, first=named, second=detector) if named is not None else detector
        return DETECTOR_SIDE, _size(DETECTOR[side], DETECTOR_SIDE), source
    classifier = any(o.shape is not None and len(o.shape) == 2 for o in record.outputs)
    value = CLASSIFIER_SIDE if classifier else DETECTOR_SIDE
    return value, _size((CLASSIFIER if classifier else DETECTOR)[side], value), named or note(AN_IMAGE)


def _by_name(kind: str, symbol: str, record: ModelRecord) -> tuple[int, Note, Note]:
    """The size a dim named ``symbol`` (of ``kind``) gets outside an image input."""
    if kind in ("height", "width"):
        sides = record.metadata.image_size
        if len(sides) == 2:
            value = sides[0 if kind == "height" else 1]
            return value, _size(MADE_FOR[kind], value), note(IMGSZ)
        scores = any(o.shape is not None and len(o.shape) == 2 for o in record.outputs)
        classifier = scores and _detector(record) is None
        value = CLASSIFIER_SIDE if classifier else DETECTOR_SIDE
        return value, _size(SIDE[kind], value), note(ITS_NAME, symbol=symbol)
    value, why = _SIZES[kind]
    return value, _size(why, value), note(ITS_NAME, symbol=symbol)


def open_dim_default(
    spec: TensorSpec, axis: int, symbol: str | None, record: ModelRecord, audio: bool
) -> tuple[int, Note, Note]:
    """(size, why, where it came from) of free dim ``axis`` of ``spec`` when neither the user nor an export gave
    one; NO_HINT as the source (and a size of 1 that must not be measured) when nothing says what it is."""
    shape = spec.shape or []
    if spec.loop_axis == axis:
        return LOOP_TRIPS, _size(LOOP_TRIP_COUNT, LOOP_TRIPS), note(A_LOOP)
    layout = image_layout(shape)
    if layout and axis in ((2, 3) if layout == "NCHW" else (1, 2)):
        return _image_side(shape, axis, symbol, record)
    floating = spec.dtype.startswith(("float", "bfloat"))
    if len(shape) == 2 and axis == 1 and floating and audio and _streaming(record):
        return AUDIO_CHUNK, _size(AUDIO_SAMPLES, AUDIO_CHUNK), note(STREAMING_AUDIO)
    if len(shape) == 2 and axis == 1 and floating and audio:
        return _audio_clip(spec, record)
    kind = dim_kind(symbol)
    if kind and symbol:
        return _by_name(kind, symbol, record)
    if axis == 1 and (len(shape) == 2 or (len(shape) == 3 and floating)):
        return SEQUENCE, _size(SEQUENCE_LENGTH, SEQUENCE), note(ITS_PLACE)
    return 1, note(NOTHING_SAYS), note(NO_HINT)
