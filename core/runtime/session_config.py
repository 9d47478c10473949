"""A session configuration as Tune chooses it, Deploy serves it and the generated server opens its session with it:
one small frozen record, its JSON form (the generated server's session.json), and the ONNX Runtime options it
stands for."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from core.errors import SessionConfigError
from core.i18n import _, pgettext
from core.runtime.ort import LEVELS

CUDA = "CUDAExecutionProvider"

if TYPE_CHECKING:
    import onnxruntime

__all__ = ["EXECUTION_MODES", "SessionConfig"]

EXECUTION_MODES = ("sequential", "parallel")


@dataclass(frozen=True, kw_only=True)
class SessionConfig:
    """How to open and call an ONNX Runtime session; the defaults are ONNX Runtime's own.

    Fields:
        intra_op_threads: threads inside one operator (``SessionOptions.intra_op_num_threads``); 0 lets ORT choose
            (one per physical core).
        inter_op_threads: threads running independent operators at once in parallel mode
            (``inter_op_num_threads``); 0 lets ORT choose.
        execution_mode: "sequential" or "parallel" (``ExecutionMode.ORT_SEQUENTIAL`` / ``ORT_PARALLEL``).
        level: graph optimization level, a key of ``core.runtime.ort.LEVELS``: "disable", "basic", "extended",
            "layout" or "all".
        providers: execution providers in order of preference, as ORT names them; CPU is the last fallback.
        io_binding: call through ``session.io_binding()`` with inputs and outputs bound to the first provider's
            device, instead of ``session.run`` (it saves copies on a GPU).
        variant: which file of the model to load: "fp32" (the model as it is) or a key of Quantize's variants
            (``core.quantize.records.VARIANTS``, e.g. "dynamic-qint8", "fp16") that stayed within its tolerance.
        batch: requests per call; above 1 only where the model's batch axis is open (latency is then per sample).
        runtime: the build of ONNX Runtime that opens the session (a name of core.runtime.runtimes: "default", the
            app's own ``onnxruntime``; "openvino", "gpu"); ``providers`` are that build's.
        cuda_graph: the CUDA provider's option ``enable_cuda_graph=1`` (its calls captured once as a CUDA graph and
            replayed); ONNX Runtime allows it only with IO binding, fixed shapes and every node on CUDA, so it needs
            ``io_binding`` and CUDA as the first provider.

    JSON form (``to_json``/``from_json``): an object with exactly these keys, ``providers`` a list, e.g.
    ``{"intra_op_threads": 1, "inter_op_threads": 0, "execution_mode": "sequential", "level": "all",
    "providers": ["CPUExecutionProvider"], "io_binding": false, "variant": "fp32", "batch": 1, "runtime": "default",
    "cuda_graph": false}``.
    Keys left out take their defaults (a configuration saved before ``runtime`` reads as the default runtime's, one
    saved before ``cuda_graph`` as without CUDA graphs);
    unknown keys and bad values raise SessionConfigError, which names them.
    """

    intra_op_threads: int = 0
    inter_op_threads: int = 0
    execution_mode: str = "sequential"
    level: str = "all"
    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    io_binding: bool = False
    variant: str = "fp32"
    batch: int = 1
    runtime: str = "default"
    cuda_graph: bool = False

    def __post_init__(self) -> None:
        problems = []
        for name in ("intra_op_threads", "inter_op_threads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1024:
                problems.append(
                    _("{name} must be a whole number from 0 (ORT chooses) to 1024, not {value}").format(
                        name=name, value=repr(value)
                    )
                )
        if self.execution_mode not in EXECUTION_MODES:
            problems.append(
                _("execution_mode must be one of {modes}, not {value}").format(
                    modes=", ".join(EXECUTION_MODES), value=repr(self.execution_mode)
                )
            )
        if self.level not in LEVELS:
            problems.append(
                _("level must be one of {levels}, not {value}").format(levels=", ".join(LEVELS), value=repr(self.level))
            )
        listed = isinstance(self.providers, tuple | list)  # a bare string would be read letter by letter
        if not listed or not self.providers or not all(isinstance(p, str) and p for p in self.providers):
            problems.append(
                _("providers must name at least one execution provider, not {value}").format(value=repr(self.providers))
            )
        if not isinstance(self.io_binding, bool):
            problems.append(_("io_binding must be true or false, not {value}").format(value=repr(self.io_binding)))
        if not isinstance(self.variant, str) or not self.variant:
            problems.append(
                _("variant must be fp32 or a Quantize variant's key, not {value}").format(value=repr(self.variant))
            )
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or not 1 <= self.batch <= 4096:
            problems.append(
                _("batch must be a whole number from 1 to 4096, not {value}").format(value=repr(self.batch))
            )
        if not isinstance(self.runtime, str) or not self.runtime:
            said = _("runtime must name a runtime (`python -m core runtimes`), not {value}")
            problems.append(said.format(value=repr(self.runtime)))
        if not isinstance(self.cuda_graph, bool):
            problems.append(_("cuda_graph must be true or false, not {value}").format(value=repr(self.cuda_graph)))
        elif self.cuda_graph and not (self.io_binding and listed and list(self.providers[:1]) == [CUDA]):
            problems.append(_("cuda_graph needs io_binding and CUDAExecutionProvider first (ONNX Runtime's rule)"))
        if problems:
            raise SessionConfigError(
                _("Not a session configuration: {problems}.").format(problems=pgettext("clauses", "; ").join(problems))
            )

    def to_session_options(self) -> onnxruntime.SessionOptions:
        """ORT's SessionOptions for this configuration (the providers go to InferenceSession beside them)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel(LEVELS[self.level].value)
        options.intra_op_num_threads = self.intra_op_threads
        options.inter_op_num_threads = self.inter_op_threads
        options.execution_mode = (
            ort.ExecutionMode.ORT_PARALLEL if self.execution_mode == "parallel" else ort.ExecutionMode.ORT_SEQUENTIAL
        )
        return options

    def session_providers(self) -> list[str]:
        """The providers to give InferenceSession: these, with CPU last as the fallback for what they lack."""
        return list(dict.fromkeys([*self.providers, "CPUExecutionProvider"]))

    def to_data(self) -> dict[str, Any]:
        data = asdict(self)
        data["providers"] = list(self.providers)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_data(), sort_keys=True)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> SessionConfig:
        if not isinstance(data, dict):
            raise SessionConfigError(
                _("A session configuration is a JSON object, not {kind}.").format(kind=type(data).__name__)
            )
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SessionConfigError(
                _("Unknown session configuration key {names}; the keys are {keys}.").format(
                    names=", ".join(unknown), keys=", ".join(sorted(known))
                )
            )
        values = dict(data)
        if "providers" in values:
            providers = values["providers"]
            values["providers"] = tuple(providers) if isinstance(providers, list | tuple) else providers
        return cls(**values)

    @classmethod
    def from_json(cls, text: str) -> SessionConfig:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SessionConfigError(_("A session configuration must be JSON: {error}.").format(error=exc)) from exc
        return cls.from_data(data)
