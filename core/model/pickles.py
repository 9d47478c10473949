"""Pickles are read as opcodes, never executed: which Python globals would they import?"""

from __future__ import annotations

import io
import pickletools

from core.errors import UnsafeModelError
from core.i18n import N_, _

__all__ = ["WHOLE_MODULE_ADVICE", "pickle_globals", "refuse_pickle"]

WHOLE_MODULE_ADVICE = N_(  # marked for the catalog; translated where a message uses it
    "Save the weights instead, which opens without running code: torch.save(model.state_dict(), 'model.pt') "
    "(for a sample architecture); or save the model as code you allow: torch.jit.save(torch.jit.script(model), "
    "'model.pt') or torch.export.save(torch.export.export(model, example_inputs), 'model.pt2'); or export it "
    "to ONNX with torch.onnx.export(model, example_inputs, 'model.onnx')."
)


def pickle_globals(data: bytes, limit: int = 200) -> list[str]:
    """The ``module.name`` globals a pickle would import, read from its opcodes without running it."""
    found: list[str] = []
    strings: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(io.BytesIO(data)):
            if opcode.name in ("GLOBAL", "INST") and isinstance(arg, str):
                found.append(arg.replace(" ", "."))
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
            elif isinstance(arg, str):
                strings.append(arg)
            if len(found) >= limit:
                break
    except Exception:  # a damaged pickle: report what was read up to the damage
        pass
    return list(dict.fromkeys(found))


_SAFE_GLOBAL_PREFIXES = ("torch.", "numpy.", "__main__.")
_SAFE_GLOBALS = {
    f"{module}.{name}"
    for module in ("builtins", "__builtin__")
    for name in (
        "set",
        "frozenset",
        "dict",
        "list",
        "tuple",
        "slice",
        "bytearray",
        "complex",
        "int",
        "float",
        "bool",
        "str",
        "bytes",
        "object",
        "range",
    )
} | {"collections.OrderedDict", "_codecs.encode"}
_MODULE_HINTS = ("torch.nn.modules.", "__main__.", "torch.nn.parameter.Parameter")


def refuse_pickle(globals_: list[str], filename: str) -> None:
    """Refuse a pickle that names globals beyond tensors and containers, before anything unpickles it."""
    dangerous = [g for g in globals_ if g not in _SAFE_GLOBALS and not g.startswith(_SAFE_GLOBAL_PREFIXES)]
    if dangerous:
        raise UnsafeModelError(
            _(
                "'{name}' is a pickle that would import {names} when opened: opening it could run any code on this "
                "machine, so it was not opened. Upload an ONNX file or a state_dict."
            ).format(name=filename, names=", ".join(dangerous[:5]))
        )
    if any(g.startswith(_MODULE_HINTS) for g in globals_):
        classes = [g for g in globals_ if g.startswith(_MODULE_HINTS)][:3]
        raise UnsafeModelError(
            _(
                "'{name}' is a whole pickled model ({classes}). Opening it means running code from the file and "
                "needs its Python classes, so it was not opened. {advice}"
            ).format(name=filename, classes=", ".join(classes), advice=_(WHOLE_MODULE_ADVICE))
        )
