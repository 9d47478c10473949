"""The input plan's reasons in the reader's language. The plan keeps them in English (core.model.dims and
core.model.inputs write them; a saved run records them): these templates find each one again, with its values,
and translate it (core.recorded). A reason no template matches is shown as it is."""

from __future__ import annotations

import re

from core.i18n import N_, _
from core.model.inputs import BenchInput, FreeDim
from core.recorded import shown

__all__ = ["VALUE_KINDS", "said_dim", "said_source", "said_values", "said_why"]

_WHY = (
    N_("batch: 1"),
    N_("batch: 1 (the sweep changes it)"),
    N_("batch: 1, on axis 1 as a recurrent state keeps it ([layers, batch, hidden]; the sweep changes it)"),
    N_("the size it was exported at"),
    N_("set by you"),
    N_("from the data file"),
    N_("image height: {value}, what the model was made for ({height}×{width})"),
    N_("image width: {value}, what the model was made for ({height}×{width})"),
    N_("image height: {value}, what the model was made for"),
    N_("image width: {value}, what the model was made for"),
    N_("text line height: {value}, what text recognisers take (PaddleOCR's take {height}×{width})"),
    N_("text line width: {value}, what text recognisers take (PaddleOCR's take {height}×{width})"),
    N_("text line height: {value}, what PaddleOCR's text direction classifier takes ({height}×{width})"),
    N_("text line width: {value}, what PaddleOCR's text direction classifier takes ({height}×{width})"),
    N_("image height: {value}, as its fixed width (a square image)"),
    N_("image width: {value}, as its fixed height (a square image)"),
    N_("image height: {value}, a classifier's usual input (one output of scores)"),
    N_("image width: {value}, a classifier's usual input (one output of scores)"),
    N_("image height: {value}, a detector's usual input"),
    N_("image width: {value}, a detector's usual input"),
    N_("image height: {value}"),
    N_("image width: {value}"),
    N_("audio samples: {value}, a second at 16 kHz"),
    N_("time steps: {value}, a second of 10 ms frames"),
    N_("sequence length: {value}"),
    N_("samples: {value}, a 32 ms chunk at 16 kHz (what streaming audio models take)"),
    N_("nothing in the model says what it is: give it a size"),
)
_SOURCES = (
    N_("you"),
    N_("the command line"),
    N_("the export"),
    N_("the data file"),
    N_("batch"),
    N_("no hint"),
    N_("metadata 'imgsz'"),
    N_("metadata 'character' (a text recogniser)"),
    N_("its name '{symbol}'"),
    N_("the kind of input"),
    N_("the kind of input (an image)"),
    N_("the kind of input (a line of text)"),
    N_("the kind of model (a PaddlePaddle classifier of two classes: a text line's direction, 0° or 180°)"),
    N_("the kind of input (streaming audio)"),
    N_("its place (axis 1 of a sequence)"),
)
_VALUES = (
    N_("a sample rate: 16 kHz"),
    N_("a mask: everything on"),
    N_("segment ids: one segment"),
    N_("token ids: the {count} rows of the table it indexes"),
    N_("no vocabulary found: small ids and indices"),
    N_("the value it was exported with"),
)
VALUE_KINDS = (  # core.model.inputs.VALUE_KINDS's words, marked for the catalog (the plan's table shows them)
    N_("random normal (mean 0, sd 1)"),
    N_("random uniform in [low, high)"),
    N_("random integers in [low, high)"),
    N_("one value everywhere"),
    N_("real data (an image or an array you gave)"),
)
_SAME = re.compile(r"(?P<why>.*) \(the same '(?P<symbol>.*)' as another input\)", re.DOTALL)


def said_why(why: str) -> str:
    """Why an open dim got its size."""
    same = _SAME.fullmatch(why)
    if same is not None:
        return _("{why} (the same “{symbol}” as another input)").format(
            why=shown(same["why"], _WHY), symbol=same["symbol"]
        )
    return shown(why, _WHY)


def said_source(source: str) -> str:
    """Where an open dim's size came from ("its name 'seq', the kind of input (a line of text)" is two)."""
    found = shown(source, _SOURCES)
    if found == source and ", " in source:
        named, kind = source.split(", ", 1)
        return _("{first}, {second}").format(first=shown(named, _SOURCES), second=shown(kind, _SOURCES))
    return found


def said_dim(spec: BenchInput, dim: FreeDim) -> str:
    """An open dim in a sentence: 'image_width' (input 'x', axis 3), or input 'x', axis 3 when it has no name (the
    English as core.model.inputs.dim_label writes it)."""
    where = _("input '{name}', axis {axis}").format(name=spec.name[:80], axis=dim.axis)
    return _("'{symbol}' ({where})").format(symbol=dim.symbol[:80], where=where) if dim.symbol != "?" else where


def said_values(spec: BenchInput) -> str:
    """How an input's values are made, in a few words (core.model.inputs.describe_values, translated)."""
    kind = spec.kind
    why = shown(spec.why, _VALUES) if spec.why else ""
    if kind == "data":
        return _("real data: {why}").format(why=spec.why) if spec.why else _("real data")
    if kind == "constant":
        value = f"{spec.low:g}" if spec.dtype != "bool" else ("true" if spec.low else "false")
        text = _("all {value}").format(value=value)
    elif kind == "integers":
        text = (
            _("random true/false")
            if spec.dtype == "bool"
            else _("random integers {low}–{high}").format(low=f"{spec.low:g}", high=f"{spec.high - 1:g}")
        )
    elif kind == "uniform":
        text = _("random uniform in [{low}, {high})").format(low=f"{spec.low:g}", high=f"{spec.high:g}")
    else:
        text = _("random normal (mean 0, sd 1)")
    return _("{values} ({why})").format(values=text, why=why) if why else text
