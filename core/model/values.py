"""How an input's values are made: one row per kind (normal, uniform, integers, constant, real data), holding all
the app needs of it: how to make the values (numpy, and the PyTorch example an export runs on), how to describe
them (a note), the notebook's code, the command line's word and the words the plan's form shows (marked with N_,
translated where shown). A new kind is one row of VALUE_KINDS; nothing else asks which kind an input has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import BenchmarkError
from core.i18n import N_
from core.notes import Note, note

if TYPE_CHECKING:
    from core.model.inputs import BenchInput
    from core.model.torchload import ExampleValues

__all__ = ["DEFAULT_KIND", "VALUE_KINDS", "ValueKind", "coin", "notebook_make_inputs", "value_kind_of"]

# how a plan's values are said (the msgids are the catalog's: docs/i18n.md)
REAL_DATA = N_("real data")
REAL_DATA_OF = N_("real data: {why}")
ALL = N_("all {value}")
TRUE_OR_FALSE = N_("random true/false")
INTEGERS = N_("random integers {low}–{high}")
UNIFORM = N_("random uniform in [{low}, {high})")
NORMAL = N_("random normal (mean 0, sd 1)")
POSITIONS = N_("positions {low}–{high}")
WITH_WHY = N_("{values} ({why})")
TEXTS = N_("text: “{first}” ({count} strings, repeated to fill the shape)")
SAMPLE_TEXTS = (  # what a string input gets when no text is given: sentences of a few lengths, plain ASCII
    "The quick brown fox jumps over the lazy dog.",
    "ONNX Runtime measured this model.",
    "hello",
    "A longer line of text, with punctuation, digits (42) and a second clause; models see all kinds.",
)

Make = Callable[["BenchInput", Any, list[int], Any, int], Any]  # (spec, numpy dtype, shape, generator, batch) -> array


@dataclass(frozen=True, kw_only=True)
class ValueKind:
    """One way an input's values are made, with everything each part of the app needs of it."""

    name: str  # as the plan keeps it (BenchInput.values), the form offers it and the notebook's PLAN names it
    label: str  # what the plan's form says of it (N_: translated where shown)
    make: Make  # the values, at the shape asked (the plan's at the batch asked)
    describe: Callable[[BenchInput], Note]  # its values in a few words
    notebook: tuple[str, ...]  # the notebook's lines that make ``array`` from its PLAN row (``spec``, ``dtype``...)
    random: bool = False  # drawn from the seeded generator: a boolean input is drawn true or false instead
    text: bool = False  # strings: the only kind made up for a tensor(string) input
    real_data: bool = False  # taken from a file the user gave (which the notebook ships beside itself)
    option: str = ""  # how --value names it on the command line ("" where --value does not)
    ranged: bool = False  # --value gives it LOW,HIGH after its name
    torch_example: Callable[[Any, list[int], Any, ExampleValues, Any], Any] | None = None  # an export's example input
    torch_line: Callable[[str, str, str, ExampleValues], str] | None = None  # the Python line that makes it


def coin(rng: Any, shape: list[int]) -> Any:
    """A boolean input's random values, half true (an array even for a 0-d shape)."""
    import numpy as np

    return np.asarray(rng.random(shape) > 0.5)


_COIN_LINE = "array = np.asarray(rng.random(shape) > 0.5)"


def _g(value: float) -> str:
    return f"{value:g}"


def _data(spec: BenchInput, dtype: Any, shape: list[int], rng: Any, batch: int) -> Any:
    """The input's real data (an .npy at batch 1), repeated along the batch axis for a larger batch."""
    import numpy as np

    if not spec.data:
        raise BenchmarkError(f"Input '{spec.name}' takes real data, and none was given; choose other values.")
    try:
        array = np.load(spec.data, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise BenchmarkError(f"The data for input '{spec.name}' could not be read ({exc}); give it again.") from exc
    if list(array.shape) != list(spec.shape):
        raise BenchmarkError(
            f"The data for input '{spec.name}' has shape {list(array.shape)}, and the plan says {spec.shape}."
        )
    if spec.batch_axis is not None and batch != array.shape[spec.batch_axis]:
        array = np.repeat(array, batch, axis=spec.batch_axis)
    return np.ascontiguousarray(array, dtype=dtype)


def _constant(spec: BenchInput, dtype: Any, shape: list[int], rng: Any, batch: int) -> Any:
    import numpy as np

    return np.full(shape, spec.low, dtype=dtype)


def _integers(spec: BenchInput, dtype: Any, shape: list[int], rng: Any, batch: int) -> Any:
    import numpy as np

    low, high = int(spec.low), max(int(spec.high), int(spec.low) + 1)
    return np.asarray(rng.integers(low, high, shape), dtype=dtype)


def _uniform(spec: BenchInput, dtype: Any, shape: list[int], rng: Any, batch: int) -> Any:
    import numpy as np

    return np.asarray(rng.uniform(spec.low, spec.high, shape), dtype=dtype)


def _normal(spec: BenchInput, dtype: Any, shape: list[int], rng: Any, batch: int) -> Any:
    import numpy as np

    return np.asarray(rng.standard_normal(shape), dtype=dtype)


def _positions(spec: BenchInput, dtype: Any, shape: list[int], rng: Any, batch: int) -> Any:
    """A language model's positions: from ``low`` (the past length) on, along the last axis, the same in every
    sequence of the batch."""
    import numpy as np

    start = int(spec.low)
    along = np.arange(start, start + (shape[-1] if shape else 1), dtype=dtype)
    return np.ascontiguousarray(np.broadcast_to(along, shape)) if shape else along[:1].reshape(())


def _positions_said(spec: BenchInput) -> Note:
    count = spec.shape[-1] if spec.shape else 1
    return note(POSITIONS, low=_g(spec.low), high=_g(spec.low + count - 1))


def _text(spec: BenchInput, dtype: Any, shape: list[int], rng: Any, batch: int) -> Any:
    """A string input's values: the strings given (else SAMPLE_TEXTS), in turn, to fill the shape."""
    import numpy as np

    texts = list(spec.texts) or list(SAMPLE_TEXTS)
    count = int(np.prod(shape)) if shape else 1
    return np.array([texts[i % len(texts)] for i in range(count)], dtype=np.str_).reshape(shape)


def _texts_said(spec: BenchInput) -> Note:
    texts = list(spec.texts) or list(SAMPLE_TEXTS)
    return note(TEXTS, first=texts[0], count=len(texts))


def _all(spec: BenchInput) -> Note:
    value = _g(spec.low) if spec.dtype != "bool" else ("true" if spec.low else "false")
    return note(ALL, value=value)


def _random_integers(spec: BenchInput) -> Note:
    if spec.dtype == "bool":
        return note(TRUE_OR_FALSE)
    return note(INTEGERS, low=_g(spec.low), high=_g(spec.high - 1))


def _constant_tensor(torch: Any, shape: list[int], dtype: Any, made: ExampleValues, generator: Any) -> Any:
    return torch.full(tuple(shape), made.low).to(dtype)


def _integer_tensor(torch: Any, shape: list[int], dtype: Any, made: ExampleValues, generator: Any) -> Any:
    high = max(int(made.high), int(made.low) + 1)
    return torch.randint(int(made.low), high, tuple(shape), generator=generator).to(dtype)


def _constant_line(var: str, dims: str, dtype: str, made: ExampleValues) -> str:
    if made.low in (0, 1):  # a mask of ones, segment ids of zeros
        return f"{var} = torch.{'ones' if made.low else 'zeros'}({dims}, dtype=torch.{dtype})"
    return f"{var} = torch.full(({dims},), {made.low:g}, dtype=torch.{dtype})"


def _integer_line(var: str, dims: str, dtype: str, made: ExampleValues) -> str:
    return f"{var} = torch.randint({int(made.low)}, {int(made.high)}, ({dims},), dtype=torch.{dtype})"


VALUE_KINDS: dict[str, ValueKind] = {
    row.name: row
    for row in (
        ValueKind(
            name="normal",
            label=N_("random normal (mean 0, sd 1)"),
            make=_normal,
            describe=lambda spec: note(NORMAL),
            notebook=("array = np.asarray(rng.standard_normal(shape), dtype=dtype)",),
            random=True,
            option="normal",
        ),
        ValueKind(
            name="uniform",
            label=N_("random uniform in [low, high)"),
            make=_uniform,
            describe=lambda spec: note(UNIFORM, low=_g(spec.low), high=_g(spec.high)),
            notebook=('array = np.asarray(rng.uniform(spec["low"], spec["high"], shape), dtype=dtype)',),
            random=True,
            option="uniform",
            ranged=True,
        ),
        ValueKind(
            name="integers",
            label=N_("random integers in [low, high)"),
            make=_integers,
            describe=_random_integers,
            notebook=(
                'low = int(spec["low"])',
                'array = np.asarray(rng.integers(low, max(int(spec["high"]), low + 1), shape), dtype=dtype)',
            ),
            random=True,
            option="ints",
            ranged=True,
            torch_example=_integer_tensor,
            torch_line=_integer_line,
        ),
        ValueKind(
            name="constant",
            label=N_("one value everywhere"),
            make=_constant,
            describe=_all,
            notebook=('array = np.full(shape, spec["low"], dtype=dtype)',),
            torch_example=_constant_tensor,
            torch_line=_constant_line,
        ),
        ValueKind(
            name="positions",
            label=N_("positions, from the past length on (a language model's)"),
            make=_positions,
            describe=_positions_said,
            notebook=(
                'start = int(spec["low"])',
                "positions = np.arange(start, start + shape[-1], dtype=dtype)",
                "array = np.ascontiguousarray(np.broadcast_to(positions, shape))",
            ),
        ),
        ValueKind(
            name="text",
            label=N_("text (sample sentences, or the strings you give)"),
            make=_text,
            describe=_texts_said,
            notebook=(
                f'texts = spec.get("texts") or {list(SAMPLE_TEXTS)!r}',
                "array = np.array([texts[i % len(texts)] for i in range(int(np.prod(shape)))], dtype=str)",
                "array = array.reshape(shape)",
            ),
            text=True,
        ),
        ValueKind(
            name="data",
            label=N_("real data (an image or an array you gave)"),
            make=_data,
            describe=lambda spec: note(REAL_DATA_OF, why=spec.why) if spec.why is not None else note(REAL_DATA),
            notebook=('array = np.load(spec["data"]).astype(dtype)',),
            real_data=True,
        ),
    )
}
DEFAULT_KIND = VALUE_KINDS["normal"]  # what a plan makes of a kind it does not know


def value_kind_of(name: str) -> ValueKind:
    """The row of kind ``name`` (the default's for a name no row has)."""
    return VALUE_KINDS.get(name, DEFAULT_KIND)


def notebook_make_inputs() -> str:
    """The notebook's ``make_inputs``, its branches written from the rows: the same values as the app's at the same
    seed (a boolean input drawn by a random kind is drawn true or false, as make_inputs does)."""
    fixed = [row for row in VALUE_KINDS.values() if not row.random]
    drawn = [row for row in VALUE_KINDS.values() if row.random and row is not DEFAULT_KIND]
    branches = [
        (f'if kind == "{row.name}":' if not n else f'elif kind == "{row.name}":', row.notebook)
        for n, row in enumerate(fixed)
    ]
    branches.append(('elif dtype.kind == "b":', (_COIN_LINE,)))
    branches += [(f'elif kind == "{row.name}":', row.notebook) for row in drawn]
    branches.append(("else:", DEFAULT_KIND.notebook))
    body = "\n".join(
        f"        {head}\n" + "\n".join(f"            {line}" for line in lines) for head, lines in branches
    )
    return f'''
def make_inputs(seed=0):
    """Seeded inputs by the plan, made as the app makes them (the same values at the same seed)."""
    rng = np.random.default_rng(seed)
    arrays = {{}}
    for spec in PLAN:
        dtype, shape, kind = np.dtype(spec["dtype"]), spec["shape"], spec["values"]
{body}
        arrays[spec["name"]] = array
    return arrays
'''
