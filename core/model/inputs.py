"""The input plan: what a model is run on, set once per model and used by every page that runs it.

For each input, a concrete shape (every symbolic or unknown dim given a value, with the reason and where it came
from), the batch axis (found across inputs: a recurrent state's batch can be axis 1, tied to the other inputs'
axis 0 by the name of its dim), and how its values are made (a distribution, an integer range, a constant such as
a sample rate of 16000, token ids within the vocabulary the model indexes). Sizes come from what the model says
(core.model.dims: its metadata, the dim's name, the kind of input); a dim nothing explains has no size until the
user gives one, and no plan runs (make_inputs refuses) while one is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from core.access import ReadPath
from core.errors import BenchmarkError, PlanTooLargeError, UnsetDimError, brief
from core.i18n import N_
from core.model.dims import LOOP_TRIPS, NO_HINT, SAMPLE_RATE, is_audio, open_dim_default, state_batch
from core.model.generative import CACHE_SOURCE
from core.model.graph_uses import CONDITION, ONE_HOT, TRIP_COUNT
from core.model.prefill import PARTS, cache_dims, cache_roles, cache_values, derive_dims, formula_of
from core.model.proto import onnx_type
from core.model.records import ModelRecord, TensorSpec
from core.model.values import VALUE_KINDS, WITH_WHY, coin, value_kind_of
from core.notes import Note, note

__all__ = [
    "ANONYMOUS_DIMS",
    "SCALAR_TYPES",
    "VALUE_KINDS",
    "BenchInput",
    "Exported",
    "FreeDim",
    "check_plan_memory",
    "default_inputs",
    "derive_dims",
    "describe_values",
    "dim_label",
    "input_bytes",
    "make_inputs",
    "plan_inputs",
    "plan_summary",
    "readable_bytes",
    "resolve_free_dims",
    "scalar_default",
    "scalar_value",
    "set_open_dim",
    "shape_at",
    "unset_dims",
    "value_kind",
]

SCALAR_TYPES = {"int", "float", "bool"}  # Python scalar arguments of a TorchScript forward()
ANONYMOUS_DIMS = {"?", "-1", "", "none", "None", "unk", "unknown"}  # names that name nothing: never tied together
_MASK = re.compile(r"mask", re.I)
_ZEROS = re.compile(r"token_?type|segment", re.I)
# why a plan holds what it holds, and where a size came from: the notes it keeps (core.notes; core.model.dims has
# the sizes' own)
BATCH = N_("batch: 1 (the sweep changes it)")
STATE_BATCH = N_("batch: 1, on axis 1 as a recurrent state keeps it ([layers, batch, hidden]; the sweep changes it)")
SAME_AS_ANOTHER = N_("{why} (the same “{symbol}” as another input)")
EXPORTED_SIZE = N_("the size it was exported at")
EXAMPLE_SIZE = N_("the size in the PyTorch model's example")
SET_BY_YOU = N_("set by you")
SET_ON_COMMAND_LINE = N_("set on the command line")
YOU, COMMAND_LINE, EXPORT, DATA_FILE = N_("you"), N_("the command line"), N_("the export"), N_("the data file")
FROM_DATA_FILE = N_("from the data file")
PYTORCH_EXAMPLE, BATCH_SOURCE = N_("the PyTorch example"), N_("batch")
SAMPLE_RATE_WHY = N_("a sample rate: 16 kHz")
MASK_WHY = N_("a mask: everything on")
SEGMENT_WHY = N_("segment ids: one segment")
TOKEN_IDS_WHY = N_("token ids: the {count} rows of the table it indexes")
SMALL_IDS_WHY = N_("no vocabulary found: small ids and indices")
EXPORTED_VALUE = N_("the value it was exported with")
ONE_HOT_WHY = N_("ids 0–{last}: the {count} values the model one-hot encodes it against")
BRANCH_WHY = N_(
    "true: it chooses an If's branch, so only the 'then' branch is measured; --value {name}=0 measures the other"
)
TRIPS_WHY = N_("a loop's trip count: how many times its body runs")
SAMPLE_TEXT_WHY = N_("sample text; give your own strings with --value NAME=TEXT or an .npz of strings")


@dataclass(kw_only=True)
class FreeDim:
    """A dim the model leaves open, and the value the plan gives it."""

    axis: int
    symbol: str  # as the model names it; "?" when unnamed
    value: int
    why: Note  # "batch: 1", "image height: 320, what the model was made for (320×320)", "sequence length: 128"…
    source: Note  # where the value came from: "metadata 'imgsz'", "its name 'seq'", "you"…; NO_HINT: nowhere
    formula: str = ""  # the sum of other dims it is computed from ("past_sequence_length + sequence_length")

    def give(self, value: int, why: Note, source: Note) -> None:
        self.value, self.why, self.source = value, why, source

    @property
    def guessed(self) -> bool:
        """Whether the size is the plan's guess, not one given (by a person, the command line, an export or data)."""
        return self.source.key not in _GIVEN

    @property
    def unset(self) -> bool:
        """Whether nothing in the model says what the size is (the plan cannot run until it is given)."""
        return self.source.key == NO_HINT


@dataclass(kw_only=True)
class BenchInput:
    """One input of the plan: its concrete shape at batch 1, its batch axis, and how its values are made."""

    name: str
    dtype: str  # numpy dtype name: float32, int64, bool...
    shape: list[int]  # concrete, at batch 1 (or the model's fixed batch)
    batch_axis: int | None = None  # the axis the batch sweep changes; None when the batch is fixed
    values: str = ""  # a key of VALUE_KINDS; "" takes the default for the dtype
    low: float = 0.0  # uniform and integers: the range [low, high); constant: the value
    high: float = 10.0
    free: list[FreeDim] = field(default_factory=list)  # the dims the model left open
    why: Note | None = None  # why the values are what they are ("token ids: the 30,522 rows of the table it indexes")
    data: ReadPath = ""  # values "data": an .npy of the input at batch 1 (made by core.model.data)
    texts: list[str] = field(default_factory=list)  # values "text": the strings given ([]: sample sentences)
    role: str = ""  # a language model's input (core.model.generative.ROLES: ids, mask, positions, past); "" else

    @property
    def kind(self) -> str:
        if self.values:
            return self.values
        return "normal" if self.dtype.startswith(("float", "bfloat")) else "integers"

    @property
    def real_data(self) -> bool:
        """Whether its values are real data (a file the user gave), not made up."""
        return value_kind_of(self.kind).real_data


def describe_values(spec: BenchInput) -> Note:
    """How the values are made, in a few words (with why, where the plan says; real data says its file)."""
    row = value_kind_of(spec.kind)
    said = row.describe(spec)
    return note(WITH_WHY, values=said, why=spec.why) if spec.why is not None and not row.real_data else said


def scalar_value(dtype: str, value: float) -> int | float | bool:
    """A Python scalar argument's value as its own type (``dtype`` one of SCALAR_TYPES)."""
    return {"int": int, "float": float, "bool": bool}[dtype](value)


def scalar_default(name: str, dtype: str) -> float:
    """The example value of a Python scalar argument: a sample rate of 16000, else 1."""
    return 16000.0 if dtype == "int" and SAMPLE_RATE.search(name) else 1.0


_GIVEN = (YOU, COMMAND_LINE, EXPORT, DATA_FILE, CACHE_SOURCE, PARTS)  # sources that are not guesses


def unset_dims(plan: list[BenchInput]) -> list[tuple[BenchInput, FreeDim]]:
    """The open dims that still have no size (nothing in the model says what they are): one per named dim (they
    move together), one per input and axis for an unnamed one."""
    found: dict[str, tuple[BenchInput, FreeDim]] = {}
    for spec in plan:
        for dim in spec.free:
            if dim.unset:
                found.setdefault(dim.symbol if dim.symbol != "?" else f"{spec.name}\0{dim.axis}", (spec, dim))
    return list(found.values())


def dim_label(spec: BenchInput, dim: FreeDim) -> str:
    """An open dim in a message: 'image_width' (input 'x', axis 3), or input 'x' axis 3 when it has no name."""
    where = f"input '{brief(spec.name)}', axis {dim.axis}"
    return f"'{brief(dim.symbol)}' ({where})" if dim.symbol != "?" else where


def _refuse_unset(plan: list[BenchInput]) -> None:
    missing = unset_dims(plan)
    if missing:
        listed = ", ".join(dim_label(s, d) for s, d in missing[:6])
        raise UnsetDimError(
            f"Nothing in the model says how large {listed} should be, and a made-up size would give numbers that "
            "mean nothing. Give each a size in the input plan (on the command line: --dim NAME=N, or --input "
            "NAME=SHAPE for a dim without a name); nothing was run."
        )


def set_open_dim(plan: list[BenchInput], name: str, axis: int, value: int) -> None:
    """Give ``name``'s open dim ``axis`` the size a person typed; every input that shares the dim's name moves with
    it."""
    spec = next(s for s in plan if s.name == name)
    dim = next(d for d in spec.free if d.axis == axis)
    for other in plan:
        for each in other.free:
            if each is dim or (dim.symbol != "?" and each.symbol == dim.symbol):
                each.give(value, note(SET_BY_YOU), note(YOU))
                other.shape[each.axis] = value
    derive_dims(plan)


def plan_summary(specs: list[BenchInput]) -> dict[str, dict[str, Any]]:
    """What a saved run records of its inputs: name -> dtype, shape (at batch 1), batch axis, how the values
    were made, and the free dims with the value each was given."""
    return {
        s.name: {
            "dtype": s.dtype,
            "shape": s.shape,
            "batch_axis": s.batch_axis,
            "values": describe_values(s).english(),  # a saved run keeps it in English, as before
            "free": {f"{d.axis}:{d.symbol}": d.value for d in s.free},
        }
        for s in specs
    }


def _named(dim: int | str | None) -> str | None:
    """The symbol of a free dim that names something, else None (unknown, "?", "-1", empty)."""
    return dim if isinstance(dim, str) and dim.strip() not in ANONYMOUS_DIMS else None


def _is_free(dim: int | str | None) -> bool:
    return not (isinstance(dim, int) and dim > 0)


def _batch_symbols(specs: list[TensorSpec]) -> set[str]:
    """Symbols of the free first axes of inputs of rank 2 and more: the batch, wherever else it appears."""
    return {
        s
        for spec in specs
        if spec.shape and len(spec.shape) > 1 and spec.loop_axis != 0 and (s := _named(spec.shape[0])) is not None
    }


def value_kind(spec: TensorSpec, dtype: str, vocabulary: int | None) -> tuple[str, float, float, Note | None]:
    """(kind, low, high, why) of an input's values: a sample rate, a mask all on, one segment, token ids within
    the vocabulary, else small ids for integers and a normal distribution for floats."""
    scalar = not spec.shape or spec.shape == [1]
    integer = dtype.startswith(("int", "uint"))
    if dtype == "str":
        return "text", 0, 0, note(SAMPLE_TEXT_WHY)
    if dtype == "bool" and spec.use == CONDITION:
        return "constant", 1, 2, note(BRANCH_WHY, name=spec.name)
    if integer and scalar and spec.use == TRIP_COUNT:
        return "constant", LOOP_TRIPS, LOOP_TRIPS + 1, note(TRIPS_WHY)
    if integer and scalar and SAMPLE_RATE.search(spec.name):
        return "constant", 16000, 16001, note(SAMPLE_RATE_WHY)
    if dtype == "bool" or (integer and _MASK.search(spec.name)):
        return "constant", 1, 2, note(MASK_WHY)
    if integer and _ZEROS.search(spec.name):
        return "constant", 0, 1, note(SEGMENT_WHY)
    if integer and vocabulary and spec.use == ONE_HOT:
        return "integers", 0, vocabulary, note(ONE_HOT_WHY, last=vocabulary - 1, count=vocabulary)
    if integer and vocabulary:
        return "integers", 0, vocabulary, note(TOKEN_IDS_WHY, count=vocabulary)
    if integer:
        return "integers", 0, 10, note(SMALL_IDS_WHY)
    return "normal", 0, 1, None


@dataclass(frozen=True)
class Exported:
    """What a model was exported at, by its ONNX input names: the example sizes and the Python scalars' values
    (the Export page's choices, which the exported model's plan starts from)."""

    shapes: dict[str, list[int]] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)

    def size(self, spec: TensorSpec, axis: int) -> int | None:
        shape = self.shapes.get(spec.name)
        if shape is None or len(shape) != len(spec.shape or []) or not shape[axis] > 0:
            return None
        return int(shape[axis])


def _first_guess(
    spec: TensorSpec, axis: int, symbol: str | None, known: Any, exported: Exported, record: ModelRecord, audio: bool
) -> tuple[int, Note, Note]:
    """(size, why, source) of an open dim that is not the batch and shares no name with one already sized: the
    size it was exported at, the PyTorch example's, else what the model says (core.model.dims)."""
    if (size := exported.size(spec, axis)) is not None:
        return size, note(EXPORTED_SIZE), note(EXPORT)
    if isinstance(known, int) and known > 0:
        return known, note(EXAMPLE_SIZE), note(PYTORCH_EXAMPLE)
    return open_dim_default(spec, axis, symbol, record, audio)


def plan_inputs(
    record: ModelRecord, torch_record: ModelRecord | None = None, exported: Exported | None = None
) -> list[BenchInput]:
    """The default plan for ``record`` (an ONNX model): see the module's docstring. Free dims that share a
    name get one value; the sizes and values it was exported at win, then the PyTorch original's examples."""
    batch = _batch_symbols(record.inputs)
    audio = is_audio(record)
    torch_inputs = torch_record.inputs if torch_record is not None else []
    exported = exported or Exported()
    chosen: dict[str, tuple[int, Note, Note]] = {}  # symbol -> (value, why, source): shared names move together
    layout = record.generative  # a language model's cache: its prefill (a past of 0) fixes what it says
    fixed = cache_dims(layout) if layout is not None else {}
    values = cache_values(layout) if layout is not None else {}
    roles = cache_roles(layout) if layout is not None else {}
    plan = []
    for position, spec in enumerate(record.inputs):
        example = torch_inputs[position].shape if position < len(torch_inputs) else None
        shape, free, batch_axis = [], [], None
        for axis, dim in enumerate(spec.shape or []):
            if not _is_free(dim):
                shape.append(int(dim))  # type: ignore[arg-type]
                continue
            symbol = _named(dim)
            known = example[axis] if example is not None and axis < len(example) else None
            if spec.loop_axis == axis:  # a Loop's or Scan's trip count, never the batch (core.model.dims sizes it)
                value, why, source = open_dim_default(spec, axis, symbol, record, audio)
            elif (symbol is not None and symbol in batch) or (
                axis == 0 and symbol is None and len(spec.shape or []) > 1
            ):
                batch_axis = axis if batch_axis is None else batch_axis
                value, why, source = 1, note(BATCH), note(BATCH_SOURCE)
            elif symbol is None and batch_axis is None and state_batch(spec, axis, record):
                batch_axis, value, why, source = axis, 1, note(STATE_BATCH), note(BATCH_SOURCE)
            elif (spec.name, axis) in fixed:
                value, why, source = fixed[(spec.name, axis)]
            elif symbol is not None and symbol in chosen:
                value, why, source = chosen[symbol]
                why = note(SAME_AS_ANOTHER, why=why, symbol=symbol) if why.key != SAME_AS_ANOTHER else why
            else:
                value, why, source = _first_guess(spec, axis, symbol, known, exported, record, audio)
            if symbol is not None:
                chosen.setdefault(symbol, (value, why, source))
            shape.append(value)
            formula = formula_of(layout, spec.name, axis, symbol or "")
            free.append(FreeDim(axis=axis, symbol=symbol or "?", value=value, why=why, source=source, formula=formula))
        dtype = _numpy_dtype(spec.dtype)
        kind, low, high, reason = values.get(spec.name) or value_kind(spec, dtype, spec.vocabulary)
        if spec.name in exported.values:
            given = exported.values[spec.name]
            kind, low, high, reason = "constant", given, given + 1, note(EXPORTED_VALUE)
        plan.append(
            BenchInput(
                name=spec.name,
                dtype=dtype,
                shape=shape,
                batch_axis=batch_axis,
                values=kind,
                low=low,
                high=high,
                free=free,
                why=reason,
                role=roles.get(spec.name, ""),
            )
        )
    return derive_dims(plan)


default_inputs = plan_inputs  # the name the pages and the command line first used


def resolve_free_dims(plan: list[BenchInput], dims: dict[str, int]) -> list[BenchInput]:
    """The plan with the free dims named in ``dims`` (by their symbol) set: every input that shares a name
    moves with it. A name no input has is an error that lists the names there are."""
    symbols = {d.symbol for spec in plan for d in spec.free if d.symbol != "?"}
    unknown = sorted(set(dims) - symbols)
    if unknown:
        names = ", ".join(sorted(symbols)) or "none"
        raise BenchmarkError(f"The model has no dim named {', '.join(unknown)}; its named dims are: {names}.")
    for spec in plan:
        for dim in spec.free:
            if dim.symbol in dims:
                dim.give(dims[dim.symbol], note(SET_BY_YOU), note(YOU))
                spec.shape[dim.axis] = dims[dim.symbol]
    return derive_dims(plan)


def _numpy_dtype(dtype: str) -> str:
    return {"bfloat16": "float32", "string": "str", "object": "str"}.get(dtype, dtype)  # object: a string, as kept


_MAX_BYTES = 1 << 80  # past this a plan's size stops growing: no machine has it, and a number stays a number


def _itemsize(dtype: str) -> int:
    """Bytes per element of a plan's dtype; 8 for what numpy cannot name (a string, an unknown type)."""
    import numpy as np

    try:
        return int(np.dtype(_numpy_dtype(dtype)).itemsize) or 8
    except TypeError:
        return 8


def input_bytes(spec: BenchInput, batch: int = 1) -> int:
    """The bytes of ``spec``'s array at ``batch`` on its batch axis: elements × the dtype's size, in Python ints,
    so no shape overflows (past 2⁸⁰ bytes the count stops growing)."""
    total = _itemsize(spec.dtype)
    for axis, dim in enumerate(spec.shape):
        total *= batch if axis == spec.batch_axis else max(int(dim), 0)
        if total > _MAX_BYTES:
            return 0 if any(int(d) <= 0 for d in spec.shape) else _MAX_BYTES
    return total


def readable_bytes(nbytes: int) -> str:
    """Bytes as people read them: 512 MB, 40.2 GB (powers of 1024, as the memory settings count)."""
    if nbytes >= _MAX_BYTES:
        return "more than any machine has"
    if nbytes >= 1 << 40:
        return f"{nbytes / (1 << 40):,.1f} TB"
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):,.1f} GB"
    return f"{nbytes / (1 << 20):,.1f} MB" if nbytes >= 1 << 20 else f"{nbytes:,} bytes"


def shape_at(spec: BenchInput, batch: int = 1) -> str:
    """``spec``'s shape at ``batch`` on its batch axis, as a refusal writes it: 1×3×640×640."""
    return "×".join(str(batch if axis == spec.batch_axis else d) for axis, d in enumerate(spec.shape)) or "scalar"


def check_plan_memory(plan: list[BenchInput], batch: int, memory_bytes: int, where: str = "") -> None:
    """Refuse, before anything runs, a plan whose inputs at ``batch`` (a sweep's largest) take more than
    ``memory_bytes`` (a worker's memory limit), naming the largest input, its shape and its size. ``where`` says
    which limit that is ("(setting WORKBENCH_WORKER_MEMORY_MB)")."""
    if batch < 1:
        raise PlanTooLargeError(f"A batch size must be a positive whole number; got {batch}.")
    sizes = {spec.name: input_bytes(spec, batch) for spec in plan}
    total = min(sum(sizes.values()), _MAX_BYTES)
    if not plan or total <= memory_bytes:
        return
    largest = max(plan, key=lambda spec: sizes[spec.name])
    at = f" at batch {batch:,}" if batch > 1 and any(s.batch_axis is not None for s in plan) else ""
    together = f"; the inputs together take {readable_bytes(total)}" if len(plan) > 1 else ""
    shape = brief(shape_at(largest, batch), 200)
    raise PlanTooLargeError(
        f"Input '{brief(largest.name)}'{at} is {largest.dtype} {shape}: {readable_bytes(sizes[largest.name])}"
        f"{together}, and a worker may use at most {readable_bytes(memory_bytes)}{where}. Nothing was run: choose "
        "smaller dims in the input plan" + (", or smaller batches." if at else ".")
    )


def make_inputs(specs: list[BenchInput], batch: int, seed: int = 0) -> dict[str, Any]:
    """Seeded inputs by the plan, at ``batch`` on each input's batch axis (refused first when a dim has no size,
    or when they could not fit in this machine's memory)."""
    import numpy as np
    import psutil

    _refuse_unset(specs)
    check_plan_memory(specs, batch, psutil.virtual_memory().total, " (this machine's memory)")
    rng = np.random.default_rng(seed)
    arrays = {}
    for spec in specs:
        shape = list(spec.shape)
        if spec.batch_axis is not None:
            shape[spec.batch_axis] = batch
        try:
            dtype = np.dtype(spec.dtype)
        except TypeError:
            dtype = np.dtype("O")
        if dtype.kind not in "fbiuU":
            raise BenchmarkError(
                f"Input '{spec.name}' is a {onnx_type(spec.dtype)}, which cannot be made here: the input plan makes "
                "tensors of numbers, booleans and strings."
            )
        row = value_kind_of(spec.kind)  # core.model.values: how each kind is made
        if (dtype.kind == "U") != row.text and not row.real_data:  # strings are text, and text is strings
            text = f"give text (--value {spec.name}=TEXT, or an .npz of strings)"
            way = text if dtype.kind == "U" else "choose numbers"
            raise BenchmarkError(
                f"Input '{spec.name}' is a {onnx_type(spec.dtype)}: its values cannot be {spec.kind}; {way}."
            )
        drawn_bool = row.random and dtype.kind == "b"  # a boolean input is drawn true or false, whatever the range
        arrays[spec.name] = coin(rng, shape) if drawn_bool else row.make(spec, dtype, shape, rng, batch)
    return arrays
