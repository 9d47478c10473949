"""The exporter's warnings and failures in plain words."""

from __future__ import annotations

import logging
import re
from collections import Counter

from core.errors import ExportError

__all__ = ["Collect", "explain_export_failure", "plain_warnings"]

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
    (
        r"axis name: (\S+) will not be used, since it shares the same shape constraints with another axis: (\S+?)\.?$",
        r"The axis named \1 is the same dim as \2 in the program, so the ONNX model calls both \2.",
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


# torch.onnx names an axis once per program dim and warns for every other input that has it under the same name
_SAME_NAME = re.compile(
    r"axis name: (\S+) will not be used, since it shares the same shape constraints with another axis: \1\b"
)
_NOISE = re.compile(
    r"torchvision is not installed|isinstance\(treespec|Please remove usage of this function|"
    r"TypedStorage is deprecated|_register_pytree_node|not supported by the onnxscript version converter"
)


def plain_warnings(messages: list[str]) -> list[str]:
    """The exporter's warnings in plain words: known ones explained, noise dropped, repeats counted."""
    counts: Counter[str] = Counter()
    for message in messages:
        if _NOISE.search(message) or _SAME_NAME.search(message):
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


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


_BOILERPLATE = re.compile(r"^(Traceback|File |from user code|This is step \d|Next steps|For more information|#|\^)")


_CAUSE = re.compile(
    r"Constraints violated|Not all values of|specializ|Unsupported|not supported|Could not|cannot|Error:|failed",
    re.IGNORECASE,
)


def explain_export_failure(exc: Exception, exporter: str, opset: int) -> ExportError:
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
