"""The sample zoo: small models built in code, seeded, with their example inputs and dynamic axes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.errors import UnknownSampleError
from core.i18n import N_
from core.model.records import ModelRecord, TensorSpec
from core.notes import note

if TYPE_CHECKING:
    import torch

__all__ = [
    "SAMPLES",
    "Sample",
    "SampleRequest",
    "build_model",
    "check_start_sample",
    "describe_sample",
    "example_inputs",
    "get_sample",
    "sample_record",
]

SEED = 0


@dataclass(frozen=True, kw_only=True)
class Sample:
    """A built-in model: how to build it and how it is called."""

    name: str
    title: str
    description: str
    inputs: dict[str, tuple[int, ...]]  # input name -> example shape
    outputs: tuple[str, ...]
    dynamic_axes: dict[str, dict[int, str]] = field(default_factory=dict)
    input_dtype: str = "float32"


SAMPLES: dict[str, Sample] = {
    s.name: s
    for s in (
        Sample(
            name="tinycnn",
            title="TinyCNN",
            description=N_(
                "Two conv blocks (conv, BatchNorm, ReLU, max-pool) and a linear head: the classic first export."
            ),
            inputs={"input": (1, 3, 112, 112)},
            outputs=("logits",),
            dynamic_axes={"input": {0: "batch"}},
        ),
        Sample(
            name="classifier",
            title=N_("Linear classifier"),
            description=N_("One Linear layer 768→2, as on top of a sentence embedding."),
            inputs={"input": (1, 768)},
            outputs=("logits",),
            dynamic_axes={"input": {0: "batch"}},
        ),
        Sample(
            name="mlp",
            title="MLP",
            description=N_("Three Linear layers with ReLU, 784→256→128→10, as for flattened 28×28 digits."),
            inputs={"input": (1, 784)},
            outputs=("logits",),
            dynamic_axes={"input": {0: "batch"}},
        ),
        Sample(
            name="transformer",
            title=N_("Tiny Transformer encoder"),
            description=N_("Two TransformerEncoder layers (d_model 64, 4 heads): dynamic batch and sequence length."),
            inputs={"tokens": (1, 16, 64)},
            outputs=("hidden",),
            dynamic_axes={"tokens": {0: "batch", 1: "seq"}},
        ),
        Sample(
            name="resnet",
            title=N_("Tiny ResNet"),
            description=N_("A stem and two residual blocks with skip connections, global pooling and a linear head."),
            inputs={"image": (1, 3, 32, 32)},
            outputs=("logits",),
            dynamic_axes={"image": {0: "batch"}},
        ),
    )
}


def check_start_sample(name: str) -> None:
    """Refuse a ``start_sample`` setting that names no sample ("" starts with none): read where the app reads its
    settings (core.settings knows no sample: the zoo is above it)."""
    if name and name not in SAMPLES:
        raise ValueError(f"setting start_sample={name!r}: expected one of {', '.join(SAMPLES)} or ''")


def get_sample(name: str) -> Sample:
    try:
        return SAMPLES[name]
    except KeyError:
        raise UnknownSampleError(
            f"There is no sample called {name!r}. The samples are: {', '.join(SAMPLES)}."
        ) from None


def _tinycnn(nn: Any) -> Any:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 28 * 28, 10),
    )


def _classifier(nn: Any) -> Any:
    return nn.Sequential(nn.Linear(768, 2))


def _mlp(nn: Any) -> Any:
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def _transformer(nn: Any) -> Any:
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def _resnet(nn: Any) -> Any:
    class Block(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)
            self.relu = nn.ReLU()

        def forward(self, x: Any) -> Any:
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + x)

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        Block(16),
        Block(16),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )


_BUILDERS: dict[str, Callable[[Any], Any]] = {
    "tinycnn": _tinycnn,
    "classifier": _classifier,
    "mlp": _mlp,
    "transformer": _transformer,
    "resnet": _resnet,
}


def build_model(name: str) -> torch.nn.Module:
    """The sample's module in eval mode, with the same weights every time (seeded)."""
    import torch
    from torch import nn

    get_sample(name)
    torch.manual_seed(SEED)
    model = _BUILDERS[name](nn)
    # Give BatchNorm non-trivial statistics so that folding it into Conv is a real change.
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            assert module.running_mean is not None and module.running_var is not None
            with torch.no_grad():
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    return model.eval()


def example_inputs(name: str, seed: int = SEED) -> dict[str, torch.Tensor]:
    import torch

    sample = get_sample(name)
    generator = torch.Generator().manual_seed(seed)
    return {k: torch.randn(*shape, generator=generator) for k, shape in sample.inputs.items()}


def state_dict_shapes(name: str) -> dict[str, tuple[int, ...]]:
    """Key -> shape of the sample's state_dict, to match uploaded weights against."""
    return {k: tuple(v.shape) for k, v in build_model(name).state_dict().items()}


def _output_axes(sample: Sample, inputs: dict[str, Any], output: Any) -> dict[int, str]:
    """An output axis is dynamic when it has the size of a dynamic input axis at the same position."""
    axes: dict[int, str] = {}
    for input_name, dims in sample.dynamic_axes.items():
        for axis, label in dims.items():
            if axis < output.dim() and output.shape[axis] == inputs[input_name].shape[axis]:
                axes.setdefault(axis, label)
    return axes


@dataclass(frozen=True, kw_only=True)
class SampleRequest:
    """The model card of the built-in sample ``name``."""

    name: str


def sample_record(request: SampleRequest) -> ModelRecord:
    """The job: the model card of the sample the request names."""
    return describe_sample(request.name)


def describe_sample(name: str) -> ModelRecord:
    """The model card of a built-in sample (runs in the worker: it imports torch)."""
    import torch

    sample = get_sample(name)
    model = build_model(name)
    inputs = example_inputs(name)
    with torch.no_grad():
        out = model(*inputs.values())
    outs = out if isinstance(out, (tuple, list)) else (out,)
    digest = hashlib.sha256()
    for key, tensor in model.state_dict().items():
        digest.update(key.encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())

    def spec(name: str, tensor: torch.Tensor, axes: dict[int, str] | None = None) -> TensorSpec:
        dtype = str(tensor.dtype).removeprefix("torch.")
        dynamic = {str(axis): label for axis, label in (axes or {}).items()}
        return TensorSpec(name=name, dtype=dtype, shape=list(tensor.shape), dynamic_axes=dynamic)

    size = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    return ModelRecord(
        id=digest.hexdigest(),
        name=sample.name,
        format="sample",
        size_bytes=size,
        path="",
        inputs=[spec(k, v, sample.dynamic_axes.get(k, {})) for k, v in inputs.items()],
        outputs=[spec(n, t, _output_axes(sample, inputs, t)) for n, t in zip(sample.outputs, outs, strict=True)],
        parameter_count=sum(p.numel() for p in model.parameters()),
        architecture=sample.name,
        notes=[note(sample.description)],
    )
