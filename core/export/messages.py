"""The exporter's warnings and failures in plain words."""

from __future__ import annotations

import logging
import re
from collections import Counter

from core.errors import ExportError
from core.i18n import N_, _
from core.notes import Note, warning

__all__ = ["REPEATED", "Collect", "explain_export_failure", "plain_warnings"]

# ----------------------------------------------------------------------------------------------- warnings
# (what the exporter says, the sentence in plain words with the pattern's named groups as placeholders); the report
# keeps the sentence's template and the groups' values (core.notes), said in the reader's language where shown
_PLAIN: list[tuple[str, str]] = [
    (
        r"legacy TorchScript-based ONNX export",
        N_(
            "The legacy exporter is deprecated and will be removed from PyTorch; prefer the torch.export-based "
            "exporter when it handles your model."
        ),
    ),
    (
        r"Converting a tensor to a Python boolean",
        N_(
            "The model branches on a tensor's value (an `if` on a tensor). Tracing records only the branch taken "
            "for the example input; other inputs may need the other branch."
        ),
    ),
    (
        r"Converting a tensor to a Python (integer|index|number)",
        N_(
            "The model turns a tensor into a Python number; tracing freezes that number, so a size that depends on "
            "the input may be fixed in the graph."
        ),
    ),
    (
        r"highest supported|opset version .* is not supported",
        N_("The exporter does not support the opset you asked for; see the opset note."),
    ),
    (
        r"axis name: (?P<axis>\S+) will not be used, since it shares the same shape constraints with another axis: "
        r"(?P<other>\S+?)\.?$",
        N_("The axis named {axis} is the same dim as {other} in the program, so the ONNX model calls both {other}."),
    ),
    (r"dynamic_axes.*(converted|deprecated)", N_("dynamic_axes was converted to dynamic_shapes for torch.export.")),
    (
        r"use operator set version (?P<built>\d+) because the requested opset_version (?P<asked>\d+)",
        N_("The torch.export exporter builds the graph at opset {built} and then converts it down to opset {asked}."),
    ),
    (
        r"Failed to convert the model to the target version (?P<asked>\d+)",
        N_(
            "Converting down to opset {asked} failed, so the model keeps the exporter's own opset (see the opset note)."
        ),
    ),
]
REPEATED = N_("{warning} (×{count})")


# torch.onnx names an axis once per program dim and warns for every other input that has it under the same name
_SAME_NAME = re.compile(
    r"axis name: (\S+) will not be used, since it shares the same shape constraints with another axis: \1\b"
)
_NOISE = re.compile(
    r"torchvision is not installed|isinstance\(treespec|Please remove usage of this function|"
    r"TypedStorage is deprecated|_register_pytree_node|not supported by the onnxscript version converter"
)


def plain_warnings(messages: list[str]) -> list[Note]:
    """The exporter's warnings in plain words: known ones explained, noise dropped, repeats counted; one the app
    does not know is kept in the exporter's own words (its first line)."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], Note] = {}
    counts: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()
    for message in messages:
        if _NOISE.search(message) or _SAME_NAME.search(message):
            continue
        for pattern, plain in _PLAIN:
            match = re.search(pattern, message)
            if match:
                values = match.groupdict()
                said = warning(plain, **values)
                break
        else:
            first = next((line.strip() for line in message.splitlines() if line.strip()), "")
            if not first:
                continue
            plain, values = first[:300], {}
            said = Note.kept(plain, "warning")
        key = (plain, tuple(sorted(values.items())))
        found.setdefault(key, said)
        counts[key] += 1
    return [warning(REPEATED, warning=found[key], count=n) if n > 1 else found[key] for key, n in counts.items()]


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
        reason = _(
            "axis {axis} of the model's argument '{argument}' is marked dynamic, but the model fixes it at {size}"
        )
        reason = reason.format(axis=axis, argument=argument, size=size)
    other = "legacy" if exporter == "dynamo" else "dynamo"
    hints = []
    if re.search(r"Constraints violated|Not all values of|specializ|static shape of", text):
        hints.append(
            _(
                "untick the dynamic axes the model fixes (for example the channels, or the image size before a "
                "Linear layer), or give them another example size"
            )
        )
    hints.append(_("try the {exporter} exporter").format(exporter=other))
    if re.search(r"opset|Unsupported: ONNX export of operator", text):
        hints.append(_("try a higher opset"))
    if re.search(r"data.dependent|GuardOnDataDependent|control flow", text, re.IGNORECASE):
        hints.append(_("the model's control flow depends on input values; the legacy exporter traces one branch"))
    return ExportError(
        _("The {exporter} exporter could not export this model: {reason}. What to do: {hints}.").format(
            exporter=exporter, reason=reason, hints=_("; or ").join(hints)
        )
    )
