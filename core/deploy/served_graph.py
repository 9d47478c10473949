"""CUDA graphs in the generated server, shipped beside its app.py as ``graph.py``: a session opened with the CUDA
provider's ``enable_cuda_graph`` (session.json's ``cuda_graph``, as Tune chose it) is called through IO binding on
buffers that stay on the GPU. Standalone: it imports numpy only (and is handed ``onnxruntime``), never core.

ONNX Runtime captures the model's kernels as one CUDA graph at the first call and replays it at the calls after, and
a replay reads and writes the very device addresses of the capture. So the first request's inputs are copied into
OrtValues on the GPU and bound; a run with the graph turned off (run option ``gpu_graph_id`` -1) tells the outputs'
shapes; outputs of those shapes are allocated on the GPU and bound; and the capture runs. A later request of the
captured shapes is copied into the bound inputs in place (``OrtValue.update_inplace``) and replays the graph, its
outputs copied back to the host. A request of other shapes runs on the same session with the graph turned off for
that run: slower, never wrong. ``/health`` says which shapes were captured and counts the calls each way. Calls run
one at a time on one thread of their own: ONNX Runtime runs a session with CUDA graphs from one thread at once, and
its CUDA provider keeps the graph it captured per thread (a call from another thread would capture it again).

A language model's server (``/generate``) never asks for a graph: its cache grows a step at a time, so no two calls
share shapes; the option is left out of its session and /health says so.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = ["GRAPH_OPTION", "Graphs", "providers"]

CUDA = "CUDAExecutionProvider"
GRAPH_OPTION = "enable_cuda_graph"  # the CUDA provider's option (providers.json)
GRAPH_ID = "gpu_graph_id"  # ONNX Runtime's run option: -1 turns the graph off for one run
OTHER_SHAPES = "run without the graph"  # what a request of other shapes than the captured gets (/health says it)


def providers(listed: list[Any], signature: dict[str, Any]) -> list[Any]:
    """``listed`` (the session's providers with their options) without CUDA's ``enable_cuda_graph`` for a language
    model's server, whose calls never keep their shapes."""
    if "generate" not in signature:
        return listed
    return [
        (item[0], {k: v for k, v in item[1].items() if k != GRAPH_OPTION}) if isinstance(item, tuple) else item
        for item in listed
    ]


def _why_off(session: Any, settings: dict[str, Any], signature: dict[str, Any]) -> str:
    if "generate" in signature:
        return "a language model's cache grows each step, so no two calls share the shapes a graph replays"
    if CUDA not in session.get_providers():
        return f"the session runs without {CUDA} (this build of ONNX Runtime, or the GPU, lacks it)"
    return "" if settings.get("io_binding") else "CUDA graphs need io_binding"


class Graphs:
    """The calls of a session opened with CUDA graphs (``on``), or why it was not (``why_off``); ``run`` one call."""

    def __init__(self, session: Any, settings: dict[str, Any], signature: dict[str, Any], ort: Any) -> None:
        self.session, self.ort = session, ort
        self.asked = bool(settings.get("cuda_graph"))
        self.why_off = _why_off(session, settings, signature) if self.asked else ""
        self.on = self.asked and not self.why_off
        self.shapes: dict[str, tuple[int, ...]] | None = None  # the captured inputs' shapes
        self.inputs: dict[str, Any] = {}  # name -> OrtValue on the GPU, bound, overwritten in place
        self.binding: Any = None
        self.replayed = self.without_graph = 0
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cuda-graph")  # every call, in turn
        self.no_graph = ort.RunOptions()
        self.no_graph.add_run_config_entry(GRAPH_ID, "-1")

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs of one call, run on the graph's own thread once the calls before it are done."""
        outputs: list[np.ndarray] = self.thread.submit(self._call, feeds).result()
        return outputs

    def _call(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The capture (the first call), a replay (a call of the captured shapes), else a call without the graph."""
        if self.binding is None:
            return self._capture(feeds)
        if {name: value.shape for name, value in feeds.items()} != self.shapes:
            self.without_graph += 1
            return list(self.session.run(None, feeds, self.no_graph))
        for name, value in feeds.items():  # the graph reads the addresses it captured: the values go there
            self.inputs[name].update_inplace(np.ascontiguousarray(value))
        self.session.run_with_iobinding(self.binding)
        self.replayed += 1
        return list(self.binding.copy_outputs_to_cpu())

    def _capture(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        ort, session = self.ort, self.session
        inputs = {
            name: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v), "cuda", 0) for name, v in feeds.items()
        }
        probe, binding = session.io_binding(), session.io_binding()
        for name, value in inputs.items():
            probe.bind_ortvalue_input(name, value)
            binding.bind_ortvalue_input(name, value)
        names = [output.name for output in session.get_outputs()]
        for name in names:
            probe.bind_output(name, "cuda", 0)
        session.run_with_iobinding(probe, self.no_graph)  # the outputs' shapes, which a graph must have fixed
        for name, shaped in zip(names, probe.copy_outputs_to_cpu(), strict=True):
            binding.bind_ortvalue_output(
                name, ort.OrtValue.ortvalue_from_shape_and_type(shaped.shape, shaped.dtype, "cuda", 0)
            )
        session.run_with_iobinding(binding)  # captured, then replayed once by ONNX Runtime
        self.inputs, self.binding = inputs, binding
        self.shapes = {name: value.shape for name, value in feeds.items()}
        return list(binding.copy_outputs_to_cpu())

    def health(self) -> dict[str, Any]:
        """What /health says of CUDA graphs: nothing where session.json asks for none."""
        if not self.asked:
            return {}
        if not self.on:
            return {"cuda_graph": {"used": False, "why": self.why_off}}
        captured = None if self.shapes is None else {name: list(shape) for name, shape in self.shapes.items()}
        said = {"used": True, "captured": captured, "replayed": self.replayed, "other_shapes": OTHER_SHAPES}
        return {"cuda_graph": {**said, "without_graph": self.without_graph}}
