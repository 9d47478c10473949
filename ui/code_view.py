"""The Model page's part for a model uploaded as its own code: which of its nn.Module classes to build, and with
which constructor arguments. The classes are read from the source (core.model.code_listing), never imported here.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from core.errors import brief
from core.i18n import _
from core.model.code_listing import ModuleClass, default_args, module_classes
from core.model.formats import detect_format
from core.settings import IntakeLimits

__all__ = ["code_classes", "code_picker"]

_ANY = ""  # the class the weights fit, chosen in the worker


def code_classes(paths: list[str], limits: IntakeLimits) -> list[ModuleClass] | None:
    """The classes of the upload's code (a .py, or a zip of a package), read without running it; None when the
    upload holds no code."""
    for path in map(Path, paths):
        if path.suffix.lower() in (".py", ".zip") and detect_format(path) in ("python", "code-zip"):
            return module_classes(path, limits)
    return None


def _label(classes: dict[str, ModuleClass], key: str) -> str:
    if key == _ANY:
        return _("Whichever class the weights fit (built with its default arguments)")
    cls = classes[key]
    where = _("{file}, line {line}").format(file=cls.file, line=cls.line)
    top = _(" (uses no other class: likely the whole model)") if cls.top else ""
    return brief(f"{cls.name} — {where}{top}", 160)


def code_picker(classes: list[ModuleClass]) -> tuple[str, str] | None:
    """The class (module.Class, or "" for the one the weights fit) and its arguments as JSON, once the person asks
    for the model to be built; None until then."""
    st.markdown(
        _(
            "**Your model's code.** Pick the class to build and give its constructor's arguments as JSON; it is "
            "built and its weights loaded only in the isolated worker. The list was read from the source, without "
            "running it."
        )
    )
    by_key = {f"{c.module}.{c.name}": c for c in classes}
    chosen = st.selectbox(
        _("Class"), [_ANY, *by_key], format_func=lambda k: _label(by_key, k), key="code_class", index=0
    )
    cls = by_key.get(chosen)
    args = st.text_area(
        _("Constructor arguments (JSON object)"),
        value=default_args(cls) if cls else "{}",
        key=f"code_args_{chosen or 'any'}",
        height=120,
        help=_(
            "The keyword arguments of the class's __init__, e.g. {example}. Parameters with a plain default are "
            "filled in; a null marks one without a default, to fill in."
        ).format(example='{"num_classes": 10}'),
    )
    if st.button(_("Build the model"), type="primary", key="code_build"):
        return chosen, args
    return None
