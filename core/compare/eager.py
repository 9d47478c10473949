"""A PyTorch model as one side of a comparison: run eagerly, each module's output taken with a forward hook and
matched to the tensor of its export that leaves the module's scope.

The export records the module of every node (the dynamo exporter's ``pkg.torch.onnx.name_scopes``, the legacy
exporter's node names: core.model.proto.module_of). A module's output is the tensor that a node inside its scope
writes and a node outside it (or the graph's output) reads: when there is exactly one, and the module ran once and
returned one tensor, the two are compared. What the exporter folded away is followed through the eager run itself:
a module with no node in the export (a BatchNorm folded into the Conv before it, a Dropout or an Identity removed)
whose input is the output of the module before it takes that module's tensor, so that a folded pair is compared
where both compute the same thing, never the Conv's unfolded output against the folded one.

Each group is one eager call (inference mode) with hooks only on the modules whose tensors the group asks for;
their outputs are copied as they are made (an in-place ReLU after them would change them) and handed out one at a
time, so memory stays bounded as for an ONNX side.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.errors import CompareError
from core.i18n import N_, _
from core.model.inputs import BenchInput
from core.model.proto import module_of
from core.model.torchload import TorchSource, load_module

if TYPE_CHECKING:
    import onnx

__all__ = ["EagerSide", "INSIDE_MODULE", "prepare_eager"]

INSIDE_MODULE = N_("inside a PyTorch module: eager gives each module's output, not the steps within it")
_PYTORCH = "pytorch"


@dataclass(kw_only=True)
class EagerSide:
    """The PyTorch model, and which tensor of its export each of its modules' outputs is."""

    module: Any  # the torch.nn.Module, in eval mode
    model: onnx.ModelProto  # the export (weights left in their files): its shapes size the groups
    input_names: list[str]  # the forward's arguments, in order, as the plan names them
    producers: dict[str, tuple[str, str, str]]  # tensor -> (module, its class, "pytorch")
    outputs: list[str]  # the export's outputs, in order: the forward's results, flattened
    sizes: dict[str, int] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # none: read by core.compare.runs.learn_sizes
    provider: str = _PYTORCH

    def run(self, names: list[str], feeds: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """The values of ``names`` on ``feeds``: one eager call, hooked on the modules that make them."""
        import torch

        wanted = set(names)
        by_module: dict[str, str] = {
            self.producers[t][0]: t for t in names if t in self.producers and t not in self.outputs
        }
        taken: dict[str, Any] = {}
        handles = []
        for name, child in self.module.named_modules():
            if name in by_module:

                def keep(_m: Any, _a: Any, out: Any, tensor: str = by_module[name]) -> None:
                    if isinstance(out, torch.Tensor):
                        taken[tensor] = out.detach().clone()  # an in-place op after it would change it

                handles.append(child.register_forward_hook(keep))
        try:
            with torch.inference_mode():
                result = self.module(*(feeds[n] for n in self.input_names))
        except Exception as exc:
            raise CompareError(_("The PyTorch model failed on the input plan: {error}").format(error=exc)) from None
        finally:
            for handle in handles:
                handle.remove()
        for name, value in zip(self.outputs, _flat(result), strict=False):
            if name in wanted:
                taken[name] = value.detach()
        del result
        for name in names:
            value = taken.pop(name, None)
            if value is not None:
                yield name, value.numpy()


def _flat(result: Any) -> list[Any]:
    """The tensors a forward returned, in the order the exporter makes them outputs."""
    import torch

    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, dict):
        return [t for v in result.values() for t in _flat(v)]
    if isinstance(result, (list, tuple)):
        return [t for v in result for t in _flat(v)]
    return []


def _dotted(scope: str, known: set[str]) -> str:
    """The module path an exporter's scope names: the legacy exporter writes each level's whole name
    ("layer1/layer1.0/conv1") and a second use as "relu_1"."""
    if scope in known:
        return scope
    path = ""
    for part in scope.split("."):
        path = part if path and part.startswith(path + ".") else f"{path}.{part}" if path else part
    if path in known:
        return path
    stripped = re.sub(r"_\d+$", "", path)
    return stripped if stripped in known else path


def _boundaries(graph: onnx.GraphProto, known: set[str]) -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """For each module, the tensors written inside its scope and read outside it (or the graph's outputs), in
    graph order; and the op types each module's scope holds (a module absent from it has no node in the export)."""
    scope_of: dict[str, str] = {}  # tensor -> the module path of the node that writes it
    ops: dict[str, set[str]] = {}
    readers: dict[str, list[str]] = {}
    for node in graph.node:
        path = _dotted(module_of(node), known)
        for prefix in _prefixes(path):
            ops.setdefault(prefix, set()).add(node.op_type)
        for tensor in node.output:
            if tensor:
                scope_of[tensor] = path
        for tensor in node.input:
            readers.setdefault(tensor, []).append(path)
    for output in graph.output:
        readers.setdefault(output.name, []).append("\0")  # outside every module
    found: dict[str, list[str]] = {}
    for tensor, path in scope_of.items():
        for prefix in _prefixes(path):
            if any(r != prefix and not r.startswith(prefix + ".") for r in readers.get(tensor, [])):
                found.setdefault(prefix, []).append(tensor)
    return found, ops


def _prefixes(path: str) -> list[str]:
    parts = path.split(".") if path else []
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass(kw_only=True)
class _Call:
    kind: str  # the module's class
    before: str  # the module whose output its first input is ("" when none, or another structure)
    tensor: bool  # it returned one tensor
    count: int = 1


def _trace(module: Any, tensors: list[Any]) -> tuple[dict[str, _Call], Any]:
    """One eager call that notes each module's calls, whose output it took, and whether it returned one tensor.
    The tensor a module returned is recognised by identity while it lives (a weak reference: nothing is kept)."""
    import weakref

    import torch

    calls: dict[str, _Call] = {}
    made: dict[int, tuple[str, weakref.ref[Any]]] = {}  # id of a tensor -> the module that returned it
    handles = []

    def note(args: Any, out: Any, name: str, kind: str) -> None:
        if name in calls:
            calls[name].count += 1
            return
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        maker = made.get(id(first)) if first is not None else None
        before = maker[0] if maker is not None and maker[1]() is first else ""
        calls[name] = _Call(kind=kind, before=before, tensor=isinstance(out, torch.Tensor))
        if isinstance(out, torch.Tensor):
            made[id(out)] = (name, weakref.ref(out))

    for name, child in module.named_modules():
        if name:
            handles.append(
                child.register_forward_hook(
                    lambda _m, args, out, name=name, kind=type(child).__name__: note(args, out, name, kind)
                )
            )
    try:
        with torch.inference_mode():
            result = module(*tensors)
    finally:
        for handle in handles:
            handle.remove()
    return calls, result


def prepare_eager(path: str, source: TorchSource, inputs: list[BenchInput], arrays: dict[str, Any]) -> EagerSide:
    """The PyTorch model ``source`` and the map from its modules to the tensors of its export at ``path``."""
    import onnx
    import torch

    model = onnx.load_model(path, load_external_data=False)  # read once already: core.compare.engine._load
    names = [s.name for s in inputs]
    module = load_module(source, names, [o.name for o in model.graph.output])  # a language model: as its export
    if isinstance(module, torch.export.ExportedProgram):
        module = module.module()
    if not isinstance(module, torch.nn.Module):
        raise CompareError(_("This PyTorch model cannot be run module by module (it is not an nn.Module)."))
    module.eval()
    calls, result = _trace(module, [_tensor(arrays[n]) for n in names])
    outputs = [o.name for o in model.graph.output]
    if len(_flat(result)) != len(outputs):
        raise CompareError(
            _(
                "The PyTorch model returns {count} tensors and its export {outputs}: this export is not of this model."
            ).format(count=len(_flat(result)), outputs=len(outputs))
        )
    del result
    boundaries, ops = _boundaries(model.graph, set(calls))
    after: dict[str, str] = {}  # a module -> the first module that took its output
    for name, call in calls.items():
        after.setdefault(call.before, name)
    producers: dict[str, tuple[str, str, str]] = {}
    for name, call in calls.items():  # in the order the modules finished
        if call.count != 1 or not call.tensor:
            continue
        if name in ops:
            tensors = boundaries.get(name, [])
            if len(tensors) == 1 and tensors[0] not in outputs:
                producers.setdefault(tensors[0], (name, call.kind, _PYTORCH))
        elif call.before and not _folded_forward(call.kind, ops.get(after.get(name, ""), set())):
            # folded into the module before it (a BatchNorm into the Conv before it, by the legacy exporter) or
            # removed (a Dropout, an Identity): the tensor of the module whose output it took is its output
            tensor = next((t for t, (m, _k, _d) in producers.items() if m == call.before), None)
            if tensor is not None:
                producers[tensor] = (name, call.kind, _PYTORCH)
    for tensor in outputs:
        producers[tensor] = ("", type(module).__name__, _PYTORCH)
    return EagerSide(module=module, model=model, input_names=names, producers=producers, outputs=outputs)


# a module with no node of its own whose op turns up in the scope of the module after it was folded forward into
# it (the dynamo exporter writes a Conv with its BatchNorm folded in under the BatchNorm's scope)
_OPS_OF = {"Conv1d": "Conv", "Conv2d": "Conv", "Conv3d": "Conv", "Linear": "Gemm MatMul"}


def _folded_forward(kind: str, later_ops: set[str]) -> bool:
    made = _OPS_OF.get(kind, "ConvTranspose" if kind.startswith("ConvTranspose") else "")
    return bool(set(made.split()) & later_ops)


def _tensor(value: Any) -> Any:
    import numpy as np
    import torch

    return torch.from_numpy(np.ascontiguousarray(value)) if hasattr(value, "shape") else value


def eager_feeds(side: EagerSide, arrays: dict[str, Any]) -> dict[str, Any]:
    """The plan's arrays as the forward takes them."""
    return {name: _tensor(arrays[name]) for name in side.input_names}
