"""The session a served model is opened with: Tune's SessionConfig (core.runtime.session_config) read from the JSON
``python -m core tune`` writes, and opened as the generated server opens it."""

from __future__ import annotations

import json
from typing import Any

from core.errors import SessionConfigError
from core.i18n import _
from core.runtime.ort import stop_spinning
from core.runtime.session_config import SessionConfig

__all__ = ["read_tuned", "session_for"]


def read_tuned(text: str) -> SessionConfig:
    """A session configuration from JSON: the configuration itself (what ``tune -o`` writes), or what
    ``python -m core tune --json`` prints, whose ``best`` holds it (under ``settings``; ``config`` is read too).
    Unknown keys and bad values raise SessionConfigError, which names them."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SessionConfigError(_("The tuned session configuration is not JSON: {error}.").format(error=exc)) from exc
    if isinstance(data, dict) and isinstance(data.get("best"), dict):
        data = data["best"]
        for key in ("settings", "config"):
            if isinstance(data.get(key), dict):
                data = data[key]
                break
    return SessionConfig.from_data(data)


def session_for(path: str, config: SessionConfig) -> Any:
    """An ONNX Runtime session on ``path`` with these options, as the generated server makes it: the providers
    this machine has, CPU last."""
    import onnxruntime as ort

    options = stop_spinning(config.to_session_options())  # as Tune measured it
    available = ort.get_available_providers()
    providers = list(dict.fromkeys([*(p for p in config.providers if p in available), "CPUExecutionProvider"]))
    return ort.InferenceSession(path, options, providers=providers)
