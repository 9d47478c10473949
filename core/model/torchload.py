"""Open the current PyTorch model inside the worker: a sample, weights in a sample architecture, an archive, or a
model built from its own code (core.model.user_code)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.access import ReadPath
from core.errors import IntakeError
from core.model import zoo
from core.model.inputs import SCALAR_TYPES, scalar_value
from core.model.records import ModelRecord, UserCode
from core.model.torch_files import unwrap_checkpoint
from core.model.values import value_kind_of

if TYPE_CHECKING:
    import torch

    pass

__all__ = ["ExampleValues", "TorchSource", "example_tensors", "load_module", "module_op_counts", "source_of"]


@dataclass(frozen=True, kw_only=True)
class TorchSource:
    """Where a PyTorch model comes from, as JSON-able data: enough for the worker to rebuild it."""

    kind: str  # sample | state_dict | safetensors | torchscript | pt2 | code | hf (a Hugging Face folder)
    name: str = ""  # sample or architecture name (the class, for a model's own code)
    path: ReadPath = ""  # the file for everything but samples (the weights, for a model's own code)
    code: UserCode | None = None  # a model's own code: where it is and how to build it


@dataclass(frozen=True, kw_only=True)
class ExampleValues:
    """How an integer or boolean input's example values are made, as the input plan makes them
    (core.model.inputs.value_kind): a constant (a mask all on, one segment) or integers in [low, high) (token ids
    within the vocabulary)."""

    kind: str  # "constant" or "integers"
    low: float = 0.0
    high: float = 10.0
    why: str = field(default="", compare=False)


def source_of(record: ModelRecord) -> TorchSource:
    if record.format == "sample":
        return TorchSource(kind="sample", name=record.name)
    if record.format in ("state_dict", "safetensors"):
        return TorchSource(kind=record.format, name=record.architecture, path=record.path)
    if record.format in ("torchscript", "pt2"):
        return TorchSource(kind=record.format, path=record.path)
    if record.format == "code" and record.code is not None:
        return TorchSource(kind="code", name=record.code.class_name, path=record.path, code=record.code)
    if record.format == "hf":
        return TorchSource(kind="hf", name=record.architecture, path=record.path)
    raise IntakeError(f"'{record.name}' is a {record.format_label}, not a PyTorch model.")


def load_module(source: TorchSource, inputs: Sequence[str] = (), outputs: Sequence[str] = ()) -> Any:
    """The module (or ExportedProgram for .pt2) in eval mode. Runs only inside the worker. A Hugging Face folder's
    language model takes and gives its tensors as its ONNX export does when given the export's ``inputs`` and
    ``outputs`` names (core.model.causal_lm.flat_module)."""
    import torch

    if source.kind == "sample":
        return zoo.build_model(source.name)
    if source.kind in ("state_dict", "safetensors"):
        model = zoo.build_model(source.name)
        if source.kind == "safetensors":
            from safetensors.torch import load_file

            weights: Any = load_file(source.path, device="cpu")
        else:
            # unwrapped exactly as intake did when it matched the keys to this architecture
            weights = unwrap_checkpoint(torch.load(source.path, weights_only=True, map_location="cpu"), [])
        model.load_state_dict(weights)
        return model.eval()
    if source.kind == "code" and source.code is not None:
        return _user_module(source.path, source.code)
    if source.kind == "hf":  # its flat signature: the ids, mask, positions and each layer's past (core.model.causal_lm)
        from pathlib import Path

        from core.model.causal_lm import flat_module, load_causal_lm

        return flat_module(load_causal_lm(Path(source.path)), inputs, outputs)
    if source.kind == "torchscript":
        return torch.jit.load(source.path, map_location="cpu").eval()
    if source.kind == "pt2":
        return torch.export.load(source.path)
    raise IntakeError(f"unknown PyTorch source kind {source.kind!r}")


def _user_module(weights_path: str, code: UserCode) -> Any:
    """A model's own code rebuilt as intake built it: the same class, arguments and weights."""
    from pathlib import Path

    from core.model.formats import detect_format
    from core.model.torch_files import mismatch_summary, read_weights
    from core.model.user_code import build_module, load_weights
    from core.settings import IntakeLimits

    model = build_module(code)
    path = Path(weights_path)
    match = load_weights(model, read_weights(path, detect_format(path), IntakeLimits(), []), code.class_name)
    if not match.matches:
        raise IntakeError(f"The weights no longer fit the code: {mismatch_summary(match)}. Upload them again.")
    return model.eval()


def module_op_counts(model: torch.nn.Module | torch.export.ExportedProgram) -> dict[str, int]:
    """What the PyTorch side is made of: leaf module types, or aten ops for a torch.export program."""
    from collections import Counter

    import torch

    if isinstance(model, torch.export.ExportedProgram):
        ops = Counter(
            str(getattr(n.target, "__name__", n.target)).split(".")[0]
            for n in model.graph.nodes
            if n.op == "call_function"
        )
        return dict(ops)
    counts: Counter[str] = Counter()
    for module in model.modules():
        if next(iter(module.children()), None) is None:
            name = getattr(module, "original_name", None) or type(module).__name__
            counts[name] += 1
    return dict(counts)


def example_tensors(
    shapes: dict[str, list[int]],
    dtypes: dict[str, str],
    seed: int = 0,
    values: dict[str, float] | None = None,
    kinds: dict[str, ExampleValues] | None = None,
) -> list[Any]:
    """Seeded random inputs with these shapes and dtypes; integers and booleans as ``kinds`` says (else ints in a
    small range, bools half true); a Python scalar argument (SCALAR_TYPES) takes its value from ``values``."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    tensors: list[Any] = []
    for name, shape in shapes.items():
        kind = dtypes.get(name, "float32")
        if kind in SCALAR_TYPES:
            tensors.append(scalar_value(kind, (values or {}).get(name, 1.0)))
            continue
        dtype = getattr(torch, dtypes.get(name, "float32"), torch.float32)
        made = (kinds or {}).get(name)
        row = value_kind_of(made.kind) if made is not None else None  # core.model.values: how each kind is made
        if dtype.is_floating_point:
            tensors.append(torch.randn(*shape, generator=generator).to(dtype))
        elif made is not None and row is not None and row.torch_example and not (row.random and dtype == torch.bool):
            tensors.append(row.torch_example(torch, shape, dtype, made, generator))
        elif dtype == torch.bool:
            tensors.append(torch.rand(*shape, generator=generator) > 0.5)
        else:
            tensors.append(torch.randint(0, 10, tuple(shape), generator=generator).to(dtype))
    return tensors
