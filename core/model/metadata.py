"""What exporters write into a model, read in the worker: Ultralytics' ``imgsz``, ``stride``, ``task``, ``batch``
and ``names``, PaddleOCR-style ``character`` lists (the classes a text recogniser reads), and who produced it.

Every value comes from the file: values are capped, class lists are parsed as plain literals (never evaluated,
and only when short enough), and the pages show all of it escaped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.i18n import N_

if TYPE_CHECKING:
    import onnx

__all__ = ["TEXT_LINE", "ModelMetadata", "producer_label", "read_metadata"]

MAX_ENTRIES = 64  # entries a record keeps (real exporters write about a dozen)
VALUE_CHARS = 2_000  # what a record keeps of one value; the card shows less
PARSE_CHARS = 1 << 20  # a class list longer than this is not parsed (COCO's 80 names: 1 kB; 6,623 characters: 13 kB)
MAX_CLASSES = 20_000
CLASS_CHARS = 60
MAX_SIDE = 16_384  # an image side larger than this in 'imgsz' is not believed
TEXT_LINE = "character"  # PaddleOCR's key: the characters a text recogniser reads, one per line

# producer_name -> who that is, in a user's words (matched without case; translated where shown)
_PRODUCERS = {
    "pytorch": N_("PyTorch's exporter (torch.onnx)"),
    "tf2onnx": N_("TensorFlow, through tf2onnx"),
    "keras2onnx": N_("Keras, through keras2onnx"),
    "paddlepaddle": N_("PaddlePaddle, through paddle2onnx"),
    "paddle2onnx": N_("PaddlePaddle, through paddle2onnx"),
    "onnxruntime.transformers": N_("ONNX Runtime's transformer optimizer (often run on Hugging Face exports)"),
    "onnx.quantize": N_("ONNX Runtime's quantization tool"),
    "optimum": "Hugging Face Optimum",
    "transformers": "Hugging Face Transformers",
    "skl2onnx": N_("scikit-learn, through skl2onnx"),
    "onnxmltools": N_("onnxmltools (scikit-learn, XGBoost, LightGBM…)"),
    "spox": N_("spox (a graph written in Python)"),
    "onnx-tf": "onnx-tf",
}


@dataclass(frozen=True, kw_only=True)
class ModelMetadata:
    """The model's ``metadata_props`` (capped) and what they say about running it."""

    entries: dict[str, str] = field(default_factory=dict)  # key -> value, at most VALUE_CHARS of it
    lengths: dict[str, int] = field(default_factory=dict)  # key -> the full length of a value cut short
    dropped: int = 0  # entries past MAX_ENTRIES
    exporter: str = ""  # who wrote the entries: "Ultralytics 8.3.40", "a PaddleOCR-style text recogniser"
    producer: str = ""  # who produced the file, from producer_name: "PyTorch's exporter (torch.onnx)"
    task: str = ""  # Ultralytics' task: detect, segment, classify, pose, obb
    image_size: list[int] = field(default_factory=list)  # [height, width] the model was made for ('imgsz')
    stride: int | None = None
    batch: int | None = None
    classes: list[str] = field(default_factory=list)  # the first MAX_CLASSES class names
    class_count: int = 0
    classes_key: str = ""  # the entry they came from: 'names' or 'character'

    @property
    def text_line(self) -> bool:
        """A text recogniser's: its classes are the single characters of a ``character`` list (it reads a line of
        text)."""
        return _reads_text(self.classes, self.classes_key)


def producer_label(name: str) -> str:
    """Who ``producer_name`` is, in a user's words ("" when unknown)."""
    return _PRODUCERS.get(name.strip().lower(), "")


def _int(text: str | None) -> int | None:
    match = re.fullmatch(r"\s*(\d{1,6})\s*", text or "")
    return int(match.group(1)) if match else None


def _image_size(text: str | None) -> list[int]:
    """'imgsz' as Ultralytics writes it: "[320, 320]" (height, width), "(640, 480)" or "640"."""
    sides = [int(n) for n in re.findall(r"\d{1,6}", text or "")] if len(text or "") < 40 else []
    if len(sides) == 1:
        sides *= 2
    return sides if len(sides) == 2 and all(0 < s <= MAX_SIDE for s in sides) else []


def _literal(text: str) -> Any:
    """A Python or JSON literal (a dict or list of names), or None: never evaluated, and not parsed when long."""
    if len(text) > PARSE_CHARS:
        return None
    try:
        return ast.literal_eval(text.replace(": null", ": None"))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _names(value: Any) -> list[str]:
    """Class names from {0: 'person', 1: 'bicycle'} or ['person', 'bicycle'] (in index order)."""
    if isinstance(value, dict) and all(isinstance(k, int) for k in value):
        return [str(value[k]) for k in sorted(value)]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return []


def _classes(raw: dict[str, str]) -> tuple[list[str], str]:
    if TEXT_LINE in raw and len(raw[TEXT_LINE]) <= PARSE_CHARS:
        return raw[TEXT_LINE].splitlines(), TEXT_LINE
    for key in ("names", "labels", "classes"):
        if key in raw and (names := _names(_literal(raw[key]))):
            return names, key
    return [], ""


def _reads_text(classes: list[str], classes_key: str) -> bool:
    """A ``character`` list of single characters is a text recogniser's alphabet; one of words ("figure",
    "table") or angles ("0", "90", "180", "270") is a classifier's or detector's class names, as RapidAI's
    layout and orientation models write them under the same key."""
    if classes_key != TEXT_LINE or not classes:
        return False
    return sum(len(c.strip()) <= 1 for c in classes) >= 0.9 * len(classes)


def _exporter(raw: dict[str, str], text_line: bool) -> str:
    author, version = raw.get("author", ""), raw.get("version", "")
    if "ultralytics" in author.lower():
        return f"Ultralytics {version}".strip()[:60]
    if "imgsz" in raw or ("stride" in raw and "names" in raw):
        return N_("an Ultralytics-style (YOLO) export")  # translated where shown
    if text_line:
        return N_("a PaddleOCR-style text recogniser")
    return ""


def read_metadata(model: onnx.ModelProto) -> ModelMetadata:
    """The model's metadata_props and what they say, capped (runs in the worker, on the loaded proto)."""
    raw: dict[str, str] = {}
    for prop in model.metadata_props[:MAX_ENTRIES]:
        raw.setdefault(prop.key[:200], prop.value)
    classes, classes_key = _classes(raw)
    stride = _int(raw.get("stride"))
    return ModelMetadata(
        entries={k: v[:VALUE_CHARS] for k, v in raw.items()},
        lengths={k: len(v) for k, v in raw.items() if len(v) > VALUE_CHARS},
        dropped=max(len(model.metadata_props) - MAX_ENTRIES, 0),
        exporter=_exporter(raw, _reads_text(classes, classes_key)),
        producer=producer_label(model.producer_name),
        task=re.sub(r"\W", "", raw.get("task", ""))[:20],
        image_size=_image_size(raw.get("imgsz")),
        stride=stride if stride and stride <= 1024 else None,
        batch=_int(raw.get("batch")),
        classes=[c[:CLASS_CHARS] for c in classes[:MAX_CLASSES]],
        class_count=len(classes),
        classes_key=classes_key,
    )
