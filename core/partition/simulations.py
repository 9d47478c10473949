"""The providers Partition simulates where this machine lacks them: one row per provider, with its name and its rule
for which ops and types it takes (ONNX Runtime's own mobile usability checker, called as that provider needs). A new
simulation is one row of SIMULATED; the page's choices, the command line's --simulate and the partitioner read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.runtime.ort import short_name

if TYPE_CHECKING:
    import onnx

__all__ = ["SIMULATED", "Simulation"]


@dataclass(frozen=True, kw_only=True)
class Simulation:
    """A provider partitioned without its hardware: which nodes it would take, and how they group."""

    key: str  # as --simulate and the page name it: "nnapi"
    provider: str  # ONNX Runtime's name for it
    # its rule: the checker (onnxruntime.tools.mobile_helpers.usability_checker) on the model -> its partition info
    # (supported_groups, unsupported_ops, nodes_unsupported_due_to_dynamic_input, ops_with_unsupported_rank)
    takes: Callable[[Any, onnx.ModelProto], Any]

    @property
    def name(self) -> str:
        """What the page and the notes call it: NNAPI, CoreML."""
        return short_name(self.provider)


def _nnapi(checker: Any, model: onnx.ModelProto) -> Any:
    """Android's NNAPI: the ops it takes, inputs of dynamic size left to the CPU (counted, not refused)."""
    return checker.check_nnapi_partitions(model, require_fixed_input_sizes=False)


def _coreml(checker: Any, model: onnx.ModelProto) -> Any:
    """Apple's CoreML, as an ML Program (the format the provider converts to by default)."""
    return checker.check_coreml_partitions(model, False, "coreml_supported_mlprogram_ops.md")


SIMULATED: dict[str, Simulation] = {
    row.key: row
    for row in (
        Simulation(key="nnapi", provider="NnapiExecutionProvider", takes=_nnapi),
        Simulation(key="coreml", provider="CoreMLExecutionProvider", takes=_coreml),
    )
}
