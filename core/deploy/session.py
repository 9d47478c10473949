"""The session options a generated server opens its model with: Tune's session configuration read as plain JSON
keys (the same keys as core.tune's SessionConfig), checked, with ONNX Runtime's defaults for what it leaves out."""

from __future__ import annotations

import json
from typing import Any

from core.errors import DeployError
from core.i18n import _
from core.runtime.ort import LEVELS, stop_spinning

__all__ = ["DEFAULTS", "read_tuned", "session_config", "session_for"]

DEFAULTS: dict[str, Any] = {
    "intra_op_threads": 0,
    "inter_op_threads": 0,
    "execution_mode": "sequential",
    "level": "all",
    "providers": ["CPUExecutionProvider"],
    "io_binding": False,
    "variant": "fp32",
    "batch": 1,
}


def _problems(config: dict[str, Any]) -> list[str]:
    problems = []
    for key in ("intra_op_threads", "inter_op_threads"):
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1024:
            problems.append(f"{key} must be a whole number from 0 (ORT chooses) to 1024, not {value!r}")
    if config["execution_mode"] not in ("sequential", "parallel"):
        problems.append(f"execution_mode must be sequential or parallel, not {config['execution_mode']!r}")
    if config["level"] not in LEVELS:
        problems.append(f"level must be one of {', '.join(LEVELS)}, not {config['level']!r}")
    providers = config["providers"]
    if not isinstance(providers, list) or not providers or not all(isinstance(p, str) and p for p in providers):
        problems.append(f"providers must be a list of execution providers, not {providers!r}")
    if not isinstance(config["io_binding"], bool):
        problems.append(f"io_binding must be true or false, not {config['io_binding']!r}")
    if not isinstance(config["variant"], str) or not config["variant"]:
        problems.append(f"variant must be 'fp32' or a Quantize variant's key, not {config['variant']!r}")
    batch = config["batch"]
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 4096:
        problems.append(f"batch must be a whole number from 1 to 4096, not {batch!r}")
    return problems


def session_config(tuned: dict[str, Any] | None) -> dict[str, Any]:
    """Tune's configuration (None: ONNX Runtime's defaults) with every key, checked: unknown keys and bad values
    raise DeployError, which names them."""
    if tuned is None:
        return dict(DEFAULTS)
    if not isinstance(tuned, dict):
        raise DeployError(
            _("A tuned session configuration is a JSON object, not {kind}.").format(kind=type(tuned).__name__)
        )
    unknown = sorted(set(tuned) - set(DEFAULTS))
    if unknown:
        raise DeployError(
            _("Unknown session configuration key {keys}; the keys are {known}.").format(
                keys=", ".join(unknown), known=", ".join(DEFAULTS)
            )
        )
    config = {**DEFAULTS, **tuned}
    if isinstance(config["providers"], tuple):
        config["providers"] = list(config["providers"])
    problems = _problems(config)
    if problems:
        raise DeployError(_("Not a session configuration: {problems}.").format(problems="; ".join(problems)))
    return config


def read_tuned(text: str) -> dict[str, Any]:
    """A session configuration from the JSON ``python -m core tune --json`` writes: the configuration itself, or
    an object whose ``best`` is one."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DeployError(_("The tuned session configuration is not JSON: {error}.").format(error=exc)) from exc
    if isinstance(data, dict) and isinstance(data.get("best"), dict):
        data = data["best"]
        if isinstance(data.get("config"), dict):
            data = data["config"]
    return session_config(data)


def session_for(path: str, config: dict[str, Any]) -> Any:
    """An ONNX Runtime session on ``path`` with these options, as the generated server makes it."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel(LEVELS[config["level"]].value)
    options.intra_op_num_threads = config["intra_op_threads"]
    options.inter_op_num_threads = config["inter_op_threads"]
    parallel = config["execution_mode"] == "parallel"
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL if parallel else ort.ExecutionMode.ORT_SEQUENTIAL
    stop_spinning(options)  # as Tune measured it
    available = ort.get_available_providers()
    providers = list(dict.fromkeys([*(p for p in config["providers"] if p in available), "CPUExecutionProvider"]))
    return ort.InferenceSession(path, options, providers=providers)
