"""What one runtime's Python offers, printed as JSON: run as ``RUNTIME_PYTHON -m core.runtime.probe``.

A runtime (core.runtime.runtimes) is an ONNX Runtime build in an environment of its own; only its own interpreter
can say which build it imports and what that build offers, so the app asks it in a process of its own. This module
imports nothing of the project (only the standard library and that runtime's ``onnxruntime``), so what it reports
is the runtime's, not the app's.

It prints: the ``onnxruntime`` version and the package that provides it, the providers it offers, the devices
``get_ep_devices()`` lists, each installed plugin EP package (``onnxruntime-ep-*``) with the devices it offers after
registering it, or why none, the folders the environment reads (for the sandbox) and whether importing it imported
torch.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import site
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "probe"]

PLUGIN_PREFIX = "onnxruntime-ep-"  # the plugin EP packages of ONNX Runtime's new EP API (onnxruntime-ep-openvino, ...)


def _package_of(module_file: str) -> str:
    """The distribution whose files hold ``module_file`` (an onnxruntime build is one of several packages)."""
    site_dir = str(Path(module_file).resolve().parent.parent)
    for dist in importlib.metadata.distributions(path=[site_dir]):
        top = (dist.read_text("top_level.txt") or "").split()
        files = [str(f) for f in dist.files or []]
        if "onnxruntime" in top or any(f.startswith("onnxruntime/__init__.py") for f in files):
            return str(dist.metadata["Name"])
    return "onnxruntime"


def _devices(ort: Any) -> list[dict[str, str]]:
    if not hasattr(ort, "get_ep_devices"):
        return []
    found = []
    for device in ort.get_ep_devices():
        hardware = device.device
        found.append(
            {
                "ep": str(device.ep_name),
                "type": str(getattr(hardware.type, "name", hardware.type)),
                "vendor": str(getattr(hardware, "vendor", "")),
            }
        )
    return found


def _plugins(ort: Any) -> list[dict[str, Any]]:
    """Each installed plugin EP package, registered, with the devices it adds (or why none)."""
    plugins = []
    names = sorted({str(d.metadata["Name"]) for d in importlib.metadata.distributions()})
    for package in (n for n in names if n.lower().startswith(PLUGIN_PREFIX)):
        entry: dict[str, Any] = {"package": package, "devices": [], "why_none": ""}
        if not hasattr(ort, "register_execution_provider_library"):
            entry["why_none"] = f"onnxruntime {ort.__version__} cannot register plugin EPs (1.22 or later can)"
            plugins.append(entry)
            continue
        before = {(d["ep"], d["type"]) for d in _devices(ort)}
        try:
            module = importlib.import_module(package.replace("-", "_"))
            ort.register_execution_provider_library(package, module.get_library_path())
        except Exception as exc:  # a plugin built for another onnxruntime, or for another machine
            entry["why_none"] = f"it did not register: {str(exc)[:300]}"
            plugins.append(entry)
            continue
        entry["devices"] = [d for d in _devices(ort) if (d["ep"], d["type"]) not in before]
        if not entry["devices"]:
            entry["why_none"] = "it registered, but get_ep_devices() offers it no device on this machine"
        plugins.append(entry)
    return plugins


def _paths() -> list[str]:
    """The folders this Python reads: its prefixes, its executable and its import path."""
    named = [sys.prefix, sys.base_prefix, sys.executable, *site.getsitepackages(), *sys.path]
    return [p for p in dict.fromkeys(os.path.abspath(p) for p in named if p) if os.path.exists(p)]


def probe() -> dict[str, Any]:
    """What this Python's onnxruntime is and offers."""
    try:
        import onnxruntime as ort
    except Exception as exc:  # the environment is broken: say so rather than fail
        return {"onnxruntime": "", "error": f"onnxruntime does not import: {str(exc)[:500]}", "paths": _paths()}
    return {
        "onnxruntime": str(ort.__version__),
        "package": _package_of(str(ort.__file__)),
        "providers": list(ort.get_available_providers()),
        "devices": _devices(ort),
        "plugins": _plugins(ort),
        "paths": _paths(),
        "torch_imported": "torch" in sys.modules,
        "error": "",
    }


def main() -> int:
    print(json.dumps(probe()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
